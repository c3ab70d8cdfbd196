"""Who holds which partition: the facts the ``kafka_replication`` health check judges.

One admin connection asks the cluster for its brokers (fenced ones included: a KRaft broker that
stopped heartbeating stays registered but fenced), the leader of its KRaft metadata quorum, every
partition's leader, replicas and in-sync replicas, and each topic's ``min.insync.replicas``.
``health.replication`` turns them into a verdict; nothing here judges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import KafkaConnectionError, KafkaError, NodeNotReadyError

from platform_pipelines.kafka.admin import _admin
from platform_pipelines.kafka.security import KafkaSecurity

NO_LEADER = -1  # as Kafka says it
MIN_INSYNC = "min.insync.replicas"
T = TypeVar("T")


@dataclass(frozen=True)
class PartitionReplicas:
    """One partition as the cluster's metadata has it.

    Attributes:
        topic: the topic's name.
        partition: the partition's index.
        leader: the node id of its leader, ``NO_LEADER`` (-1) when it has none (offline).
        replicas: the nodes that should hold a copy (length = replication factor).
        isr: the replicas in sync with the leader (the leader included).
    """

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def name(self) -> str:
        """``topic-partition``, as Kafka's own tools write it."""
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class ReplicationFacts:
    """What a replication judgement needs to know about a cluster.

    Attributes:
        brokers: every node the cluster should have: registered ones (fenced or not), every
            node named as a replica, and the ``expected`` ids the caller knows of.
        alive: the registered brokers that are not fenced (they serve).
        quorum_leader: the node leading the KRaft metadata quorum, ``NO_LEADER`` when the
            quorum has none, None when it could not be asked (e.g. not authorized).
        partitions: every partition of the topics asked about.
        min_insync: ``min.insync.replicas`` per topic (the broker default when not set).
    """

    brokers: tuple[int, ...]
    alive: tuple[int, ...]
    quorum_leader: int | None
    partitions: tuple[PartitionReplicas, ...]
    min_insync: Mapping[str, int] = field(default_factory=dict)

    @property
    def down(self) -> tuple[int, ...]:
        """The nodes that should serve but do not (fenced, or gone)."""
        return tuple(sorted(set(self.brokers) - set(self.alive)))


def gather_replication(
    bootstrap: str,
    topics: Sequence[str] | None = None,
    expected: Sequence[int] = (),
    timeout_s: float = 10.0,
    security: KafkaSecurity | None = None,
) -> ReplicationFacts:
    """The replication facts of ``topics`` (None: every topic but Kafka's internal ones).

    ``expected`` names nodes the caller knows should exist (the local cluster's ids), so that a
    node that never registered is counted as down too. Topics the broker does not know are left
    out.

    Raises:
        KafkaAccessError: TLS or credentials refused.
        KafkaError: no broker answered within ``timeout_s``.
    """
    with _admin(bootstrap, timeout_s, security) as admin:
        cluster = _any_node(admin.describe_cluster)
        asked = list(topics) if topics is not None else None
        described = _any_node(lambda: admin.describe_topics(asked))
        partitions = tuple(_partitions(described, internal=topics is not None))
        names = sorted({p.topic for p in partitions})
        min_insync = _any_node(lambda: _min_insync(admin, names)) if names else {}
        quorum = _any_node(lambda: _quorum_leader(admin))
    registered = {int(b["broker_id"]) for b in cluster["brokers"]}
    alive = {int(b["broker_id"]) for b in cluster["brokers"] if not b.get("is_fenced")}
    named = {node for p in partitions for node in p.replicas}
    return ReplicationFacts(
        brokers=tuple(sorted(registered | named | set(expected))),
        alive=tuple(sorted(alive)),
        quorum_leader=quorum,
        partitions=partitions,
        min_insync=min_insync,
    )


def replication_settings(nodes: int) -> dict[str, str]:
    """Defaults for ``nodes`` brokers: 3 replicas (fewer on a smaller cluster) and a minimum ISR
    one below, so one node may be down without refusing ``acks=all`` producers."""
    rf, min_isr = min(3, nodes), max(1, min(3, nodes) - 1)
    settings = {"default.replication.factor": rf, "min.insync.replicas": min_isr}
    for topic in ("offsets.topic", "transaction.state.log", "share.coordinator.state.topic"):
        settings[f"{topic}.replication.factor"] = rf
    for topic in ("transaction.state.log", "share.coordinator.state.topic"):
        settings[f"{topic}.min.isr"] = min_isr
    return {key: str(value) for key, value in settings.items()}


def not_serving(bootstrap: str, nodes: Sequence[int]) -> str | None:
    """What keeps ``nodes`` from serving in the cluster at ``bootstrap`` (no answer, not
    registered or fenced, no quorum leader), or None once they serve."""
    try:
        facts = gather_replication(bootstrap, [], nodes, timeout_s=5)
    except (KafkaError, OSError) as err:
        return f"no metadata yet: {err}"
    unready = sorted(set(nodes) - set(facts.alive))
    if unready:
        return f"node {', '.join(map(str, unready))} not registered with the controller yet"
    if facts.quorum_leader in (None, NO_LEADER):
        return "the controller quorum has no leader yet"
    return None


def _any_node(call: Callable[[], T], attempts: int = 3) -> T:
    """``call()``, again when the node it went to refused the connection: the admin client
    sends to a random known node, and a node that just died is known until it is fenced (the
    client then backs off from it, so the next attempt goes to another)."""
    for _ in range(attempts - 1):
        try:
            return call()
        except (KafkaConnectionError, NodeNotReadyError):
            continue
    return call()


def _partitions(described: list[dict[str, Any]], internal: bool) -> list[PartitionReplicas]:
    found = []
    for topic in described:
        if topic["error_code"] != 0 or (topic.get("is_internal") and not internal):
            continue
        for p in topic["partitions"]:
            leader = int(p["leader_id"])
            found.append(
                PartitionReplicas(
                    topic=topic["name"],
                    partition=int(p["partition_index"]),
                    leader=leader if leader >= 0 else NO_LEADER,
                    replicas=tuple(int(n) for n in p["replica_nodes"]),
                    isr=tuple(sorted(int(n) for n in p["isr_nodes"])),
                )
            )
    return sorted(found, key=lambda p: (p.topic, p.partition))


def _min_insync(admin: KafkaAdminClient, topics: list[str]) -> dict[str, int]:
    resources = [ConfigResource(ConfigResourceType.TOPIC, t, [MIN_INSYNC]) for t in topics]
    described = admin.describe_configs(resources, config_filter="all")
    by_topic: Mapping[str, Mapping[str, Any]] = next(iter(described.values()), {})
    found = {}
    for topic, configs in by_topic.items():
        entry = configs.get(MIN_INSYNC)
        value = entry.get("value") if isinstance(entry, Mapping) else entry
        if value is not None:
            found[topic] = int(value)
    return found


def _quorum_leader(admin: KafkaAdminClient) -> int | None:
    try:
        quorum = admin.describe_metadata_quorum()
    except KafkaError:
        return None
    partition = quorum["topics"][0]["partitions"][0]
    if partition.get("error"):
        return None
    leader = int(partition["leader_id"])
    return leader if leader >= 0 else NO_LEADER
