"""`platform cluster start|stop|status`: a local Spark standalone cluster to run the platform on."""

from __future__ import annotations

import re
import urllib.error
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import size
from platform_pipelines.settings import get_settings

_MEMORY = re.compile(r"^[1-9]\d*[mg]$", re.IGNORECASE)


def _cluster_dir() -> Path:
    return get_settings().local_dir / "cluster"


def _memory(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not _MEMORY.match(value):
        raise click.BadParameter(f"{value!r} is not a memory size: use e.g. 512m or 2g.")
    return value


def _state(info: dict[str, Any]) -> dict[str, Any]:
    """The master's JSON, or a readable error when it does not answer."""
    from platform_pipelines.spark.cluster_state import master_state

    try:
        return master_state(str(info["webui_url"]))
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise click.ClickException(
            f"The Spark master (pid {info['master_pid']}) does not answer at "
            f"{info['webui_url']}: {error}. See {info['base_dir']}/master/master.log; "
            "`platform cluster stop` then `start` restarts it."
        ) from None


@click.group(short_help="A local Spark standalone cluster: start, stop, status.")
def cluster() -> None:
    """A local Spark standalone cluster: one master and its workers, on 127.0.0.1 only, started
    from the pyspark installation (files and logs under .local/cluster). Run the platform on it
    with PLATFORM_SPARK_MASTER=<the master URL that `start` prints>."""


@cluster.command("start", short_help="Start a master and its workers in the background.")
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Worker processes (one executor each per application).",
)
@click.option(
    "--cores",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Cores each worker offers.",
)
@click.option(
    "--memory",
    default="1g",
    show_default=True,
    callback=_memory,
    help="Memory each worker offers (an executor takes spark.executor.memory, 1g).",
)
@friendly_errors
def cluster_start(workers: int, cores: int, memory: str) -> None:
    """Start a Spark master and WORKERS workers in the background and wait until every worker is
    ALIVE; print the master URL to put in PLATFORM_SPARK_MASTER."""
    from platform_pipelines.spark.cluster import LocalSparkCluster
    from platform_pipelines.spark.cluster_config import ClusterSpec
    from platform_pipelines.spark.cluster_state import find_running_cluster

    running = find_running_cluster(_cluster_dir())
    if running:
        console.print(
            f"A local Spark cluster already runs: master {running['master_url']}, "
            f"web UI {running['webui_url']}."
        )
        return
    spec = ClusterSpec(workers=workers, cores=cores, memory=memory)
    local = LocalSparkCluster(_cluster_dir(), spec)
    with console.status(f"Starting a Spark master and {workers} workers on 127.0.0.1..."):
        url = local.start()
    console.print(
        f"Spark cluster started: master {url}, web UI {local.webui_url}, "
        f"{workers} x {cores} core(s) / {memory} (stop it with `platform cluster stop`). "
        "Run the platform on it with:"
    )
    click.echo(f"export PLATFORM_SPARK_MASTER={url}")


@cluster.command("stop", short_help="Stop the local cluster (refuses while applications run).")
@click.option("--force", is_flag=True, help="Stop it even while applications run on it.")
@friendly_errors
def cluster_stop(force: bool) -> None:
    """Stop the workers (and their executors), then the master. Applications running on the
    cluster would lose their executors, so while any runs it is stopped only with --force."""
    from platform_pipelines.spark.cluster import LocalSparkCluster
    from platform_pipelines.spark.cluster_state import find_running_cluster

    info = find_running_cluster(_cluster_dir())
    if info is None:
        console.print("No local Spark cluster is running.")
        return
    apps = [] if force else _state(info).get("activeapps", [])
    if apps:
        names = ", ".join(f"{a['name']} ({a['id']})" for a in apps)
        raise click.ClickException(
            f"Applications run on this cluster right now: {names}. Stopping it would take their "
            "executors away; stop them first, or pass --force."
        )
    with console.status("Stopping the local Spark cluster..."):
        LocalSparkCluster(_cluster_dir()).stop()
    console.print("Spark cluster stopped.")


@cluster.command("status", short_help="Show the local cluster's workers and applications.")
@friendly_errors
def cluster_status() -> None:
    """Show whether the local cluster runs, its workers (state, cores, memory) and applications,
    and which Spark master the platform uses."""
    from platform_pipelines.spark.cluster_state import find_running_cluster

    settings = get_settings()
    info = find_running_cluster(_cluster_dir())
    if info is None:
        console.print(
            f"local Spark cluster: not running (the platform uses {settings.spark_master})"
        )
        return
    state = _state(info)
    uses = (
        "uses it"
        if settings.spark_master == info["master_url"]
        else (f"uses {settings.spark_master}; set PLATFORM_SPARK_MASTER={info['master_url']}")
    )
    console.print(
        f"local Spark cluster: master {info['master_url']} ({state.get('status')}), "
        f"web UI {info['webui_url']}; the platform {uses}"
    )
    workers = Table("worker", "state", "cores used", "memory used", title="Workers")
    for w in state.get("workers", []):
        workers.add_row(
            w["id"],
            w["state"],
            f"{w['coresused']} / {w['cores']}",
            f"{size(w['memoryused'] * 2**20)} / {size(w['memory'] * 2**20)}",
        )
    console.print(workers)
    apps = Table("application", "name", "state", "cores", title="Applications")
    for app in [*state.get("activeapps", []), *state.get("completedapps", [])[-5:]]:
        apps.add_row(app["id"], app["name"], app["state"], str(app["cores"]))
    console.print(apps if apps.row_count else "no applications yet")
