"""A local replicated Kafka cluster: ``nodes`` KRaft nodes (broker + controller in each JVM) on
loopback, from the same jars and configuration as the single broker (``kafka.broker``): starting,
restarting, killing and stopping its nodes, and finding them from another process.

``data_dir`` holds ``cluster.id`` (formatted into every node), one ``node-<id>/`` per node
(``server.properties``, ``log4j2.properties``, ``logs/``, ``broker.log``; see ``cluster_config``)
and, while a node runs, ``cluster.json`` (pids, ports, bootstrap servers) for other processes such
as the CLI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from platform_pipelines.core.local_server import (
    HOST,
    java_errors,
    launch,
    log_lines,
    pid_runs,
    port_open,
    read_state,
    terminate,
    wait_gone,
    write_state,
)
from platform_pipelines.jvm import require_java
from platform_pipelines.kafka.broker import KAFKA_MAIN, LOG_FILE, BrokerError
from platform_pipelines.kafka.broker_config import java_command
from platform_pipelines.kafka.cluster_config import choose_ports, cluster_id, write_node_files
from platform_pipelines.kafka.replication import not_serving

STATE_FILE = "cluster.json"


class LocalKafkaCluster:
    """``nodes`` local KRaft nodes (ids 1..nodes) serving ``data_dir`` (default: as many as
    ``data_dir`` was formatted for, else 3).

    Usage (starts JVMs, so not a doctest)::

        with LocalKafkaCluster(Path(".local/kafka-cluster")) as bootstrap:
            create_topics(bootstrap, {"clickstream": 3}, replication_factor=3)
    """

    def __init__(self, data_dir: Path, nodes: int | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        nodes = nodes or len(self._formatted()) or 3  # None: as many as were formatted
        if nodes < 1:
            raise ValueError(f"A cluster needs at least one node, got {nodes}.")
        self.node_ids = tuple(range(1, nodes + 1))
        self.ports: dict[int, tuple[int, int]] = {}
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    def node_dir(self, node: int) -> Path:
        """Node ``node``'s folder: its configuration, storage (``logs/``) and output."""
        return self.data_dir / f"node-{node}"

    def log_path(self, node: int) -> Path:
        """Where node ``node``'s output goes (appended to on every start)."""
        return self.node_dir(node) / LOG_FILE

    @property
    def bootstrap_servers(self) -> str:
        """Every node's client address, comma-separated, once started."""
        ports = self.ports or self._recorded_ports()
        if not ports:
            raise BrokerError("The cluster has not been started: call start() first.")
        return ",".join(f"{HOST}:{ports[n][0]}" for n in sorted(ports))

    def pid(self, node: int) -> int | None:
        """Node ``node``'s process id while it runs (started here or by another process)."""
        proc = self._procs.get(node)
        if proc is not None:
            return proc.pid if proc.poll() is None else None
        recorded = self._state().get("nodes", {}).get(str(node), {}).get("pid")
        return int(recorded) if recorded and pid_runs(int(recorded), KAFKA_MAIN) else None

    def running(self) -> tuple[int, ...]:
        """The ids of the nodes whose process runs."""
        return tuple(n for n in self.node_ids if self.pid(n) is not None)

    def start(self, timeout_s: float = 120) -> str:
        """Start every node that does not run, wait until all serve and the controller quorum
        has a leader; returns the bootstrap servers. Raises ``JvmSetupError`` without Java 17+,
        ``BrokerError`` when all nodes run, a port is taken, a node dies or does not serve."""
        if len(self.running()) == len(self.node_ids):
            raise BrokerError(
                f"The cluster in {self.data_dir} already runs at "
                f"{self.bootstrap_servers}: use it, or stop it first."
            )
        return self._start([n for n in self.node_ids if n not in self.running()], timeout_s)

    def restart(self, node: int, timeout_s: float = 90) -> None:
        """Stop node ``node`` if it runs, start it again on its ports, wait until it serves."""
        self._terminate([node], 30)
        self._start([node], timeout_s)

    def kill(self, node: int) -> None:
        """SIGKILL node ``node`` (a crash, for tests); the others go on."""
        pid = self.pid(node)
        if pid is None:
            raise BrokerError(f"Node {node} of the cluster in {self.data_dir} is not running.")
        os.kill(pid, signal.SIGKILL)
        if wait_gone([pid], self._alive, 10):
            self._procs.pop(node, None)
        self._write_state()

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM every node (SIGKILL after ``timeout_s``) and remove ``cluster.json``; also stops
        nodes another process started from the same ``data_dir``."""
        self._terminate(list(self.node_ids), timeout_s)
        (self.data_dir / STATE_FILE).unlink(missing_ok=True)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _start(self, nodes: list[int], timeout_s: float) -> str:
        require_java()
        deadline = time.monotonic() + timeout_s
        if len(self._formatted()) not in (0, len(self.node_ids)):  # the voter set is static
            raise BrokerError(
                f"{self.data_dir} holds a cluster of {len(self._formatted())} nodes: "
                "start it with that many, or delete the folder (drops its topics) "
                "to make a new cluster."
            )
        node_dirs = {n: self.node_dir(n) for n in self.node_ids}
        self.ports = choose_ports(node_dirs, fixed=[n for n in self.node_ids if n not in nodes])
        for node in nodes:
            write_node_files(self.node_dir(node), node, self.ports)
        self._format(nodes, cluster_id(self.data_dir), timeout_s)
        try:
            for node in nodes:
                self._launch(node)
            self._wait_serving(nodes, deadline, timeout_s)
        except BaseException:  # Ctrl-C included: never leave nodes behind without cluster.json
            self._terminate(nodes, 10)
            raise
        finally:
            self._write_state()
        return self.bootstrap_servers

    def _formatted(self) -> list[Path]:
        return sorted(self.data_dir.glob("node-*/logs/meta.properties"))

    def _state(self) -> dict[str, Any]:
        return read_state(self.data_dir / STATE_FILE) or {}

    def _recorded_ports(self) -> dict[int, tuple[int, int]]:
        nodes = self._state().get("nodes", {})
        return {int(n): (int(v["port"]), int(v["controller_port"])) for n, v in nodes.items()}

    def _java(self, node: int, main: str, *args: str) -> list[str]:
        return java_command(self.node_dir(node) / "log4j2.properties", main, *args)

    def _format(self, nodes: list[int], cluster: str, timeout_s: float) -> None:
        todo = [n for n in nodes if not (self.node_dir(n) / "logs" / "meta.properties").exists()]
        props = {n: str(self.node_dir(n) / "server.properties") for n in todo}
        tool = ("kafka.tools.StorageTool", "format", "-t", cluster, "-c")
        procs = {
            n: subprocess.Popen(
                self._java(n, *tool, props[n]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            for n in todo
        }
        for node, proc in procs.items():
            out, _ = proc.communicate(timeout=timeout_s)
            if proc.returncode != 0:
                raise BrokerError(
                    f"Formatting the storage of node {node} in {self.node_dir(node)} "
                    f"failed:\n{out.decode(errors='replace')}\nDelete "
                    f"{self.data_dir} and start again."
                )

    def _launch(self, node: int) -> None:
        cmd = self._java(node, "kafka.Kafka", str(self.node_dir(node) / "server.properties"))
        self._procs[node] = launch(cmd, self.log_path(node), self.node_dir(node))

    def _wait_serving(self, nodes: list[int], deadline: float, timeout_s: float) -> None:
        while True:
            for node, code in ((n, self._procs[n].poll()) for n in nodes):
                if code is not None:
                    raise BrokerError(self._explain(node, f"exited early with code {code}"))
            missing = self._not_serving(nodes)
            if missing is None:
                return
            if time.monotonic() >= deadline:
                raise BrokerError(
                    self._explain(nodes[0], f"did not serve in {timeout_s:.0f}s ({missing})")
                )
            time.sleep(0.5)

    def _not_serving(self, nodes: list[int]) -> str | None:
        """What is still missing before ``nodes`` serve in the cluster, or None."""
        closed = [n for n in nodes if not port_open(self.ports[n][0])]
        if closed:
            return f"node {', '.join(map(str, closed))} does not listen yet"
        return not_serving(self.bootstrap_servers, nodes)

    def _explain(self, node: int, what: str) -> str:
        lines = log_lines(self.log_path(node))
        return "\n".join(
            [
                f"Node {node} of the Kafka cluster in {self.data_dir} {what}. Errors in "
                f"{self.log_path(node)}:",
                *java_errors(lines),
                "Last lines:",
                *lines[-30:],
                f"If one of ports {self.ports.get(node)} is taken, stop what holds it; "
                f"if the storage is damaged, delete {self.data_dir} (drops its topics) "
                "and start again.",
            ]
        )

    def _terminate(self, nodes: list[int], timeout_s: float) -> None:
        pids = [pid for pid in map(self.pid, nodes) if pid is not None]
        if terminate(pids, self._alive, timeout_s):
            for node in nodes:
                self._procs.pop(node, None)
        self._write_state()

    def _alive(self, pid: int) -> bool:
        for proc in self._procs.values():
            if proc.pid == pid:
                return proc.poll() is None
        return pid_runs(pid, KAFKA_MAIN)

    def _write_state(self) -> None:
        pids = {n: self.pid(n) for n in self.node_ids}
        ports = self.ports or self._recorded_ports()
        if not any(pids.values()) or not ports:
            (self.data_dir / STATE_FILE).unlink(missing_ok=True)
            return
        nodes = {
            str(n): {
                "pid": pids[n],
                "port": port,
                "controller_port": controller,
                "log": str(self.log_path(n)),
            }
            for n, (port, controller) in ports.items()
        }
        state = {
            "bootstrap_servers": self.bootstrap_servers,
            "data_dir": str(self.data_dir),
            "cluster_id": cluster_id(self.data_dir),
            "nodes": nodes,
        }
        write_state(self.data_dir / STATE_FILE, state)
