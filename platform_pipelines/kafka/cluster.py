"""A local replicated Kafka cluster: ``nodes`` KRaft nodes (broker + controller in each JVM) on
loopback, from the same jars and configuration as the single broker (``kafka.broker``).

``data_dir`` holds ``cluster.id`` (formatted into every node), one ``node-<id>/`` per node
(``server.properties``, ``log4j2.properties``, ``logs/``, ``broker.log``) and, while a node runs,
``cluster.json`` (pids, ports, bootstrap servers) for other processes such as the CLI.

The nodes share one static voter set (``controller.quorum.voters``): a node restarted alone comes
back on its own ports, while a start of the whole cluster may choose new ones. The replication
defaults suit the size: with 3 nodes every topic gets 3 replicas and ``min.insync.replicas=2``, so
producers with ``acks=all`` go on while one node is down. PLAINTEXT only.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from platform_pipelines.jvm import ensure_jars, require_java
from platform_pipelines.kafka.broker import (
    HOST,
    LOG_FILE,
    BrokerError,
    _classpath,
    _free_port,
    _pid_alive,
    _port_open,
)
from platform_pipelines.kafka.broker_config import LOG4J2, previous_ports, server_properties
from platform_pipelines.kafka.replication import not_serving, replication_settings

STATE_FILE = "cluster.json"
ID_FILE = "cluster.id"
# The active controller fences a broker that missed heartbeats this long, then moves leadership
# and shrinks the ISR of its partitions: 6 s instead of Kafka's 9 s for a local cluster.
FAILOVER = {"broker.heartbeat.interval.ms": "1000", "broker.session.timeout.ms": "6000"}


def node_properties(node_dir: Path, node: int, ports: Mapping[int, tuple[int, int]]) -> str:
    """The single broker's ``server.properties`` with this node's id, the voter set of every
    node's ``(client port, controller port)`` and the cluster's replication defaults."""
    client, controller = ports[node]
    voters = ",".join(f"{n}@{HOST}:{c}" for n, (_, c) in sorted(ports.items()))
    overrides = {"node.id": str(node), "controller.quorum.voters": voters}
    overrides |= replication_settings(len(ports)) | FAILOVER
    return _override(server_properties(node_dir, HOST, client, controller, None), overrides)


def _override(properties: str, overrides: Mapping[str, str]) -> str:
    lines, done = [], set()
    for line in properties.splitlines():
        key = line.partition("=")[0]
        lines.append(f"{key}={overrides[key]}" if key in overrides else line)
        done.add(key)
    lines += [f"{key}={value}" for key, value in overrides.items() if key not in done]
    return "\n".join(lines) + "\n"


def _read_state(data_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((data_dir / STATE_FILE).read_text()))
    except (OSError, ValueError):
        return {}


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
        recorded = _read_state(self.data_dir).get("nodes", {}).get(str(node), {}).get("pid")
        return int(recorded) if recorded and _pid_alive(int(recorded)) else None

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
        self._wait_gone([node], 10)
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
        self.ports = self._choose_ports(fixed=[n for n in self.node_ids if n not in nodes])
        for node, folder in ((n, self.node_dir(n)) for n in nodes):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "server.properties").write_text(node_properties(folder, node, self.ports))
            (folder / "log4j2.properties").write_text(LOG4J2)
        self._format(nodes, self._cluster_id(), timeout_s)
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

    def _choose_ports(self, fixed: list[int]) -> dict[int, tuple[int, int]]:
        """Every node's last ports if free; when ``fixed`` nodes run, they hold the voter set and
        the others must come back on their last ports."""
        ports: dict[int, tuple[int, int]] = {}
        for node in (*fixed, *(n for n in self.node_ids if n not in fixed)):
            prev = previous_ports(self.node_dir(node) / "server.properties")
            if node in fixed and prev is not None:
                ports[node] = prev
                continue
            if fixed and (prev is None or any(_port_open(p) for p in prev)):
                raise BrokerError(
                    f"Node {node} must come back on ports {prev} (the running nodes know it "
                    "there), but another process holds them: stop the cluster "
                    "(`platform kafka cluster stop`) and start it again to choose new ports."
                )
            taken = {p for pair in ports.values() for p in pair}
            if prev is None or any(_port_open(p) or p in taken for p in prev):
                client = _fresh_port(taken)
                prev = (client, _fresh_port(taken | {client}))
            ports[node] = prev
        return dict(sorted(ports.items()))

    def _recorded_ports(self) -> dict[int, tuple[int, int]]:
        nodes = _read_state(self.data_dir).get("nodes", {})
        return {int(n): (int(v["port"]), int(v["controller_port"])) for n, v in nodes.items()}

    def _cluster_id(self) -> str:
        path = self.data_dir / ID_FILE
        if path.exists():
            return path.read_text().strip()
        cluster_id = "-"
        while cluster_id.startswith("-"):  # StorageTool would read it as an option
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        path.write_text(cluster_id + "\n")
        return cluster_id

    def _java(self, node: int, main: str, *args: str) -> list[str]:
        jars = ensure_jars("kafka-broker")
        log4j = self.node_dir(node) / "log4j2.properties"
        # As the single broker: C1 and the serial GC start the JVM sooner.
        return [
            "java",
            "-Xmx512m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            _classpath(jars),
            f"-Dlog4j2.configurationFile={log4j}",
            main,
            *args,
        ]

    def _format(self, nodes: list[int], cluster_id: str, timeout_s: float) -> None:
        todo = [n for n in nodes if not (self.node_dir(n) / "logs" / "meta.properties").exists()]
        props = {n: str(self.node_dir(n) / "server.properties") for n in todo}
        tool = ("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c")
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
        with self.log_path(node).open("ab") as log:
            self._procs[node] = subprocess.Popen(
                self._java(node, "kafka.Kafka", str(self.node_dir(node) / "server.properties")),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.node_dir(node),
                start_new_session=True,
            )

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
        closed = [n for n in nodes if not _port_open(self.ports[n][0])]
        if closed:
            return f"node {', '.join(map(str, closed))} does not listen yet"
        return not_serving(self.bootstrap_servers, nodes)

    def _explain(self, node: int, what: str) -> str:
        lines = self.log_path(node).read_text(errors="replace").splitlines()
        causes = [line for line in lines if " ERROR " in line or line.startswith("Caused by")]
        return "\n".join(
            [
                f"Node {node} of the Kafka cluster in {self.data_dir} {what}. Errors in "
                f"{self.log_path(node)}:",
                *causes[:8],
                "Last lines:",
                *lines[-30:],
                f"If one of ports {self.ports.get(node)} is taken, stop what holds it; "
                f"if the storage is damaged, delete {self.data_dir} (drops its topics) "
                "and start again.",
            ]
        )

    def _terminate(self, nodes: list[int], timeout_s: float) -> None:
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
            for node in nodes:
                pid = self.pid(node)
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
            if self._wait_gone(nodes, wait_s):
                break
        self._write_state()

    def _wait_gone(self, nodes: list[int], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while any(self.pid(n) is not None for n in nodes):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        for node in nodes:
            self._procs.pop(node, None)
        return True

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
            "cluster_id": self._cluster_id(),
            "nodes": nodes,
        }
        (self.data_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def _fresh_port(taken: set[int]) -> int:
    port = _free_port()
    while port in taken:
        port = _free_port()
    return port
