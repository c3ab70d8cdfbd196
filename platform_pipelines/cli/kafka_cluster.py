"""`platform kafka cluster start|stop|status`: a local replicated Kafka cluster (3 KRaft nodes on
loopback, every topic with 3 replicas by default), to see the platform go on when a broker dies."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.settings import PlatformSettings, get_settings

if TYPE_CHECKING:
    from platform_pipelines.kafka.cluster import LocalKafkaCluster
    from platform_pipelines.kafka.replication import ReplicationFacts

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}
RESTART_HINT = " (`platform kafka cluster start` starts the nodes that are down)"


def cluster_dir(settings: PlatformSettings) -> Path:
    """Where the local cluster keeps its nodes: ``<local dir>/kafka-cluster``."""
    return settings.local_dir / "kafka-cluster"


@click.group("cluster", short_help="A local 3-node replicated Kafka cluster: start, stop, status.")
def cluster() -> None:
    """A local replicated Kafka cluster: 3 KRaft nodes (broker + controller each) on 127.0.0.1,
    replication factor 3 and min.insync.replicas=2 by default (data under .local/kafka-cluster).
    Point the platform at it with PLATFORM_KAFKA_BOOTSTRAP_SERVERS (printed by `start`)."""


@cluster.command("start", short_help="Start the cluster, or the nodes of it that are down.")
@click.option(
    "--nodes",
    type=click.IntRange(1, 9),
    default=None,
    help="Number of nodes (default: as many as were formatted, else 3).",
)
@friendly_errors
def cluster_start(nodes: int | None) -> None:
    """Start the local cluster in the background and wait until every node serves and the
    controller quorum has a leader. When some nodes run, only the others are started (on their
    previous ports). Prints the nodes and the PLATFORM_KAFKA_BOOTSTRAP_SERVERS export."""
    from platform_pipelines.kafka.cluster import LocalKafkaCluster

    local = LocalKafkaCluster(cluster_dir(get_settings()), nodes)
    running = local.running()
    if len(running) == len(local.node_ids):
        console.print(f"The local Kafka cluster already runs at {local.bootstrap_servers}.")
        return
    down = [n for n in local.node_ids if n not in running]
    what = f"node {', '.join(map(str, down))} of " if running else ""
    with console.status(
        f"Starting {what}the local Kafka cluster ({len(local.node_ids)} KRaft "
        "nodes); waiting for every node and a quorum leader..."
    ):
        bootstrap = local.start()
    console.print(_nodes_table(local, _facts(local)))
    console.print(
        f"Kafka cluster started (stop it with `platform kafka cluster stop`). Point the "
        f"platform at it:\nexport PLATFORM_KAFKA_BOOTSTRAP_SERVERS={bootstrap}",
        soft_wrap=True,
    )


@cluster.command("stop", short_help="Stop every node (refuses while streams read it).")
@click.option("--force", is_flag=True, help="Stop it even while streams read from it.")
@friendly_errors
def cluster_stop(force: bool) -> None:
    """Stop every node of the local cluster. While streams pointed at it run (via
    PLATFORM_KAFKA_BOOTSTRAP_SERVERS) it is stopped only with --force."""
    from platform_pipelines.kafka.cluster import LocalKafkaCluster
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.runtime.lock import locked_streams
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    local = LocalKafkaCluster(cluster_dir(settings))
    if not local.running():
        console.print("No local Kafka cluster is running.")
        return
    used = set((settings.kafka_bootstrap_servers or "").split(","))
    lake = Lakehouse(settings.lakehouse_dir)
    streams = [(s.name, lake.checkpoint(s.name)) for s in load_registry(settings)]
    reading = locked_streams(streams) if used & set(local.bootstrap_servers.split(",")) else []
    if reading and not force:
        raise click.ClickException(
            f"Streams read from this cluster right now: {', '.join(reading)}. Stopping it would "
            "stall them; stop their runs first, or pass --force."
        )
    with console.status(f"Stopping {len(local.running())} Kafka nodes..."):
        local.stop()
    console.print("Kafka cluster stopped.")


@cluster.command("status", short_help="Nodes, topics and the replication health check.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when replication fails.")
@friendly_errors
def cluster_status(strict: bool) -> None:
    """Show each node (up, fenced, or down), each topic's replication (partitions, replicas,
    in-sync replicas, min.insync.replicas) and the kafka_replication verdict with its remedy."""
    from platform_pipelines.health.replication import judge_replication
    from platform_pipelines.kafka.cluster import LocalKafkaCluster

    local = LocalKafkaCluster(cluster_dir(get_settings()))
    if not local.running():
        console.print(f"local cluster: not running (data in {local.data_dir})")
        return
    with console.status("Asking the cluster for its brokers and partitions..."):
        facts = _facts(local)
    console.print(_nodes_table(local, facts))
    if facts is None:
        console.print(f"[bold red]No node answers at {local.bootstrap_servers}.[/]")
        raise SystemExit(1 if strict else 0)
    console.print(_topics_table(facts))
    verdict = judge_replication(facts, restart_hint=RESTART_HINT)
    console.print(f"[{STYLE[verdict.status.value]}]{verdict.line()}[/]", soft_wrap=True)
    if strict and verdict.status.value == "fail":
        raise SystemExit(1)


def _facts(local: LocalKafkaCluster) -> ReplicationFacts | None:
    from kafka.errors import KafkaError

    from platform_pipelines.kafka.replication import gather_replication

    try:
        return gather_replication(local.bootstrap_servers, expected=local.node_ids)
    except (KafkaError, OSError):
        return None


def _nodes_table(local: LocalKafkaCluster, facts: ReplicationFacts | None) -> Table:
    table = Table(
        "node",
        "state",
        "pid",
        "client",
        "controller",
        "leads",
        title=f"Kafka cluster in {local.data_dir}",
        caption="each node's log: node-<id>/broker.log",
    )
    for node in local.node_ids:
        pid = local.pid(node)
        port, controller = local.ports.get(node) or _recorded(local, node)
        state = "down" if pid is None else "up"
        if pid is not None and facts is not None and node not in facts.alive:
            state = "fenced"
        leads = sum(1 for p in facts.partitions if p.leader == node) if facts else 0
        style = {"up": "green", "fenced": "yellow", "down": "bold red"}[state]
        table.add_row(
            str(node),
            f"[{style}]{state}[/]",
            str(pid or "-"),
            f"127.0.0.1:{port}",
            str(controller),
            str(leads),
        )
    return table


def _recorded(local: LocalKafkaCluster, node: int) -> tuple[int, int]:
    from platform_pipelines.kafka.broker_config import previous_ports

    return previous_ports(local.node_dir(node) / "server.properties") or (0, 0)


def _topics_table(facts: ReplicationFacts) -> Table:
    table = Table(
        "topic",
        "partitions",
        "replicas",
        "in sync (lowest)",
        "min.insync.replicas",
        "under-replicated",
        "no leader",
        title="Topics",
    )
    for topic in sorted({p.topic for p in facts.partitions}):
        parts = [p for p in facts.partitions if p.topic == topic]
        under = sum(1 for p in parts if len(p.isr) < len(p.replicas))
        table.add_row(
            topic,
            str(len(parts)),
            str(max(len(p.replicas) for p in parts)),
            str(min(len(p.isr) for p in parts)),
            str(facts.min_insync.get(topic, "-")),
            str(under),
            str(sum(1 for p in parts if p.leader < 0)),
        )
    return table
