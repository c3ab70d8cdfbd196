"""What the nodes of a local Kafka cluster are started with: each node's ``server.properties``
(its id, the voter set of every node, the replication defaults), their ports and the cluster id.

The nodes share one static voter set (``controller.quorum.voters``): a node restarted alone comes
back on its own ports, while a start of the whole cluster may choose new ones. The replication
defaults suit the size: with 3 nodes every topic gets 3 replicas and ``min.insync.replicas=2``, so
producers with ``acks=all`` go on while one node is down. PLAINTEXT only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from platform_pipelines.core.local_server import HOST, free_port, port_open
from platform_pipelines.kafka.broker import BrokerError
from platform_pipelines.kafka.broker_config import (
    LOG4J2,
    new_cluster_id,
    previous_ports,
    server_properties,
)
from platform_pipelines.kafka.replication import replication_settings

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


def write_node_files(node_dir: Path, node: int, ports: Mapping[int, tuple[int, int]]) -> None:
    """Write node ``node``'s ``server.properties`` and ``log4j2.properties`` into ``node_dir``."""
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / "server.properties").write_text(node_properties(node_dir, node, ports))
    (node_dir / "log4j2.properties").write_text(LOG4J2)


def choose_ports(
    node_dirs: Mapping[int, Path], fixed: Collection[int]
) -> dict[int, tuple[int, int]]:
    """Every node's (client, controller) ports: its last ones (in ``server.properties`` of its
    folder in ``node_dirs``) if free, else new ones. When the ``fixed`` nodes run, they hold the
    voter set and the others must come back on their last ports."""
    ports: dict[int, tuple[int, int]] = {}
    for node in (*fixed, *(n for n in node_dirs if n not in fixed)):
        prev = previous_ports(node_dirs[node] / "server.properties")
        if node in fixed and prev is not None:
            ports[node] = prev
            continue
        if fixed and (prev is None or any(port_open(p) for p in prev)):
            raise BrokerError(
                f"Node {node} must come back on ports {prev} (the running nodes know it "
                "there), but another process holds them: stop the cluster "
                "(`platform kafka cluster stop`) and start it again to choose new ports."
            )
        taken = {p for pair in ports.values() for p in pair}
        if prev is None or any(port_open(p) or p in taken for p in prev):
            client = free_port(taken)
            prev = (client, free_port(taken | {client}))
        ports[node] = prev
    return dict(sorted(ports.items()))


def cluster_id(data_dir: Path) -> str:
    """The id every node of ``data_dir`` is formatted with: made once, kept in ``cluster.id``."""
    path = data_dir / ID_FILE
    if path.exists():
        return path.read_text().strip()
    new = new_cluster_id()
    path.write_text(new + "\n")
    return new


def _override(properties: str, overrides: Mapping[str, str]) -> str:
    lines, done = [], set()
    for line in properties.splitlines():
        key = line.partition("=")[0]
        lines.append(f"{key}={overrides[key]}" if key in overrides else line)
        done.add(key)
    lines += [f"{key}={value}" for key, value in overrides.items() if key not in done]
    return "\n".join(lines) + "\n"
