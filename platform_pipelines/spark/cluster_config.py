"""What the daemons of a local Spark cluster are given: the cluster's shape, ``spark-defaults.conf``,
each daemon's command line and environment, and the master's ports, kept across restarts.

The daemons are Spark's own classes, run by ``bin/spark-class`` of the pyspark package
(``SPARK_HOME`` = the package folder): nothing else is installed. Every one binds to 127.0.0.1
only (RPC, web UIs; the master's REST submission server is off).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from platform_pipelines.core.local_server import HOST, can_bind, free_port

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
PORTS_FILE = "ports.json"  # the last start's ports, kept after a stop
# The daemons' JVMs: C1 only and the serial GC start them sooner (as the local Kafka broker's); a
# master or worker only schedules and launches, it never needs peak JIT. Executors are started
# with the application's own options (``spark.executor.extraJavaOptions``), not these.
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The daemons' own settings (applications bring theirs from the driver).
DAEMON_DEFAULTS = {
    "spark.master.rest.enabled": "false",  # a second listener, on a fixed port (6066)
    "spark.ui.killEnabled": "false",  # as the platform's own UI: no kill links
}


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster's shape. Defaults fit a 2-core laptop beside the driver.

    Attributes:
        workers: worker processes; each runs one executor per application.
        cores: cores each worker offers (one task at a time per core).
        memory: memory each worker offers; an executor takes ``spark.executor.memory`` (1g).
        daemon_memory: heap of the master and worker daemons themselves.
    """

    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    daemon_memory: str = "512m"


def spark_home() -> Path:
    """The pyspark package folder: it holds ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def write_defaults(base_dir: Path) -> Path:
    """Write the daemons' ``spark-defaults.conf`` into ``base_dir``; returns its path."""
    conf = base_dir / "spark-defaults.conf"
    conf.write_text("".join(f"{k} {v}\n" for k, v in DAEMON_DEFAULTS.items()))
    return conf


def master_args(port: int, webui: int, conf: Path) -> list[str]:
    """The master's arguments: its RPC and web UI ports on 127.0.0.1."""
    return [
        "--host",
        HOST,
        "--port",
        str(port),
        "--webui-port",
        str(webui),
        "--properties-file",
        str(conf),
    ]


def worker_args(spec: ClusterSpec, master_url: str, work_dir: Path, conf: Path) -> list[str]:
    """A worker's arguments: free ports, what it offers (``spec``), where its executors run."""
    return [
        "--host",
        HOST,
        "--port",
        "0",
        "--webui-port",
        "0",
        "--cores",
        str(spec.cores),
        "--memory",
        spec.memory,
        "--work-dir",
        str(work_dir),
        "--properties-file",
        str(conf),
        master_url,
    ]


def daemon_command(main: str, args: list[str]) -> list[str]:
    """Spark's launcher running the daemon class ``main`` with ``args``."""
    return [str(spark_home() / "bin" / "spark-class"), main, *args]


def daemon_env(base_dir: Path, folder: Path, spec: ClusterSpec) -> dict[str, str]:
    """The environment of a daemon whose files are in ``folder``, configured from ``base_dir``."""
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": HOST,  # the web UIs bind to it (else to every interface)
        "SPARK_LOCAL_DIRS": str(folder / "tmp"),  # executors' shuffle and block files
        "SPARK_DAEMON_MEMORY": spec.daemon_memory,
        "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
        "SPARK_CONF_DIR": str(base_dir),  # no stray spark-env.sh from elsewhere
    }


def master_ports(base_dir: Path) -> tuple[int, int]:
    """The master's (RPC, web UI) ports: the last start's when free (the master URL survives a
    restart), else new ones."""
    try:
        last = json.loads((base_dir / PORTS_FILE).read_text())
        wanted = [int(last["sparkMaster"]), int(last["MasterUI"])]
    except (OSError, ValueError, KeyError):
        wanted = []
    if len(wanted) == 2 and all(can_bind(p) for p in wanted):
        return wanted[0], wanted[1]
    port = free_port()
    return port, free_port(taken={port})


def remember_ports(base_dir: Path, ports: dict[str, str]) -> None:
    """Keep where the master really listens (``sparkMaster``, ``MasterUI``) for the next start."""
    (base_dir / PORTS_FILE).write_text(json.dumps(ports) + "\n")
