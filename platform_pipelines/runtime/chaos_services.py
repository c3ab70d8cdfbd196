"""What a chaos run owns besides its workers: its Kafka broker, the proxies, a Spark cluster.

Everything lives in the run's workdir and ends with the run. The broker has a client listener per
trial that may run at once, each advertising the port of a ``FaultProxy`` in this process: a
trial's pipeline bootstraps at its proxy, so every connection it makes goes through it, and a
network fault cuts that trial alone. This process (producer, reference runs) uses the direct
listener. With ``cluster`` a local standalone cluster runs the pipelines instead of their own JVMs.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from platform_pipelines.core.local_server import free_port
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.runtime.chaos_proxy import FaultProxy
from platform_pipelines.spark.cluster import LocalSparkCluster
from platform_pipelines.spark.cluster_config import ClusterSpec

EXECUTOR_MEMORY_MB = 640  # what a worker offers per chaos pipeline (an executor takes 512m)


class ChaosServices:
    """The broker (in ``workdir/kafka``), ``slots`` proxies and, with ``cluster``, a Spark
    cluster of two workers (in ``workdir/cluster``)."""

    def __init__(self, workdir: Path, slots: int, cluster: bool = False) -> None:
        self.workdir = workdir
        self.bootstrap = ""
        self.master_url: str | None = None
        ports = [free_port() for _ in range(slots)]
        self.broker = LocalKafkaBroker(workdir / "kafka", proxied_ports=ports)
        self.cluster = (
            LocalSparkCluster(workdir / "cluster", _cluster_spec(slots)) if cluster else None
        )
        self._proxies: list[FaultProxy] = []
        self._free: queue.Queue[FaultProxy] = queue.Queue()

    def start(self, say: Callable[[str], None]) -> None:
        """Start the broker, the proxies and the cluster (each stopped by ``stop``)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.bootstrap = self.broker.start()
        say(f"Started a Kafka broker for this run at {self.bootstrap} (in {self.broker.data_dir}).")
        for port, target in zip(
            self.broker.proxied_ports, self.broker.proxied_listener_ports, strict=True
        ):
            proxy = FaultProxy(port, target)
            self._proxies.append(proxy)
            self._free.put(proxy)
        if self.cluster is not None:
            self.master_url = self.cluster.start()
            say(f"Started a Spark cluster for this run at {self.master_url}.")

    @contextmanager
    def proxy(self) -> Iterator[FaultProxy]:
        """A proxy no running trial uses, for the block."""
        taken = self._free.get()
        try:
            yield taken
        finally:
            self._free.put(taken)

    def stop(self) -> None:
        """Stop the cluster, the proxies and the broker."""
        if self.cluster is not None:
            self.cluster.stop()
        for proxy in self._proxies:
            proxy.close()
        self.broker.stop()

    def kill(self) -> None:
        """Stop everything at once (an interrupted run): the cluster's daemons and executors and
        the broker get SIGKILL, then every process this one started is killed too."""
        for proxy in self._proxies:
            proxy.close()
        if self.cluster is not None:
            self.cluster.stop(timeout_s=0)
        self.broker.stop(timeout_s=0)
        kill_descendants(os.getpid())


def _cluster_spec(slots: int) -> ClusterSpec:
    # Each pipeline takes one core and one executor on each worker (spark.cores.max = 2).
    return ClusterSpec(workers=2, cores=slots, memory=f"{slots * EXECUTOR_MEMORY_MB}m")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children...), read from ``/proc``."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name (2nd field) is in parentheses and may hold spaces.
            fields = stat.read_text().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(pid: int) -> list[int]:
    """SIGKILL every process below ``pid``; returns their pids."""
    found = descendants(pid)
    for child in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    return found
