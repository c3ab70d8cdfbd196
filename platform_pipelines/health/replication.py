"""Does every partition keep its copies? (check ``kafka_replication``)

With ``acks=all``, a producer's record is acknowledged once every in-sync replica (ISR) holds it,
and accepted only while the ISR has at least ``min.insync.replicas`` members: on 3 replicas with a
minimum of 2, one broker may be down and nothing is lost or refused. The judgement takes the
cluster's facts (``kafka.replication.gather_replication``) and says, in order of severity:

* fail: the controller quorum has no leader; a partition has no leader (nothing can be read or
  written); a partition's ISR is below ``min.insync.replicas`` (``acks=all`` producers are refused);
* warn: a broker is down; partitions are under-replicated (ISR smaller than their replicas, while
  ``acks=all`` still succeeds); a topic has fewer replicas than the cluster allows (up to 3);
* pass: every broker serves and every replica is in sync.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from platform_pipelines.core.verdict import Status, Verdict
from platform_pipelines.kafka.replication import NO_LEADER, PartitionReplicas, ReplicationFacts

KAFKA_REPLICATION = "kafka_replication"
DEFAULT_MIN_INSYNC = 1  # Kafka's own default, when the facts do not say
_SHOWN = 4  # partitions named in a summary before "..."


def judge_replication(
    facts: ReplicationFacts, topic: str | None = None, restart_hint: str = ""
) -> Verdict:
    """Judge the replication of ``topic`` (None: of every partition in ``facts``).

    ``restart_hint`` follows "Restart node N" in the remedy (for the local cluster:
    ``" (`platform kafka cluster start` starts the nodes that are down)"``).

    Example:
        >>> from platform_pipelines.kafka.replication import PartitionReplicas as P
        >>> facts = ReplicationFacts((1, 2, 3), (1, 3), 1, (P("t", 0, 1, (1, 2, 3), (1, 3)),),
        ...                          {"t": 2})
        >>> judge_replication(facts, "t").line()
        'warn kafka_replication: 1 of 3 brokers down (node 2); 1 partition of t under-replicated (ISR 2 of 3); producers with acks=all still succeed while ISR >= min.insync.replicas=2 -> Restart node 2: until it is back, one more failure stops producers with acks=all.'
    """
    parts = [p for p in facts.partitions if topic is None or p.topic == topic]
    of = f" of {topic}" if topic else ""
    down = facts.down
    offline = [p for p in parts if p.leader == NO_LEADER]
    below = [p for p in parts if p.leader != NO_LEADER and len(p.isr) < _min_isr(facts, p)]
    under = [p for p in parts if len(p.isr) < len(p.replicas)]
    fails: list[str] = []
    warns: list[str] = []
    remedies: list[str] = []
    if facts.quorum_leader == NO_LEADER:
        fails.append(
            "the KRaft controller quorum has no leader: no leader election, no topic "
            "change until a majority of controllers runs"
        )
    if offline:
        fails.append(
            f"{_count(offline)}{of} without a leader ({_names(offline)}): nothing can "
            "be read from or written to them"
        )
    if below:
        fails.append(
            f"{_count(below)}{of} below min.insync.replicas ({_isr(below)}, "
            f"{_min_text(facts, below)}): producers with acks=all are refused"
        )
    if down:
        warns.append(f"{len(down)} of {len(facts.brokers)} brokers down (node {_ids(down)})")
    synced_under = [p for p in under if p not in below and p not in offline]
    if synced_under:
        warns.append(
            f"{_count(synced_under)}{of} under-replicated ({_isr(synced_under)}); "
            "producers with acks=all still succeed while ISR >= "
            f"{_min_text(facts, synced_under)}"
        )
    thin = _thin_topics(parts, len(facts.brokers))
    if thin:
        warns.append(thin)
        remedies.append(
            "Recreate the topic with more replicas (or add replicas with "
            "kafka-reassign-partitions): a replication factor below 3 loses data "
            "when its broker's disk does."
        )
    remedies.insert(0, _restart_remedy(facts, under, down, bool(below), restart_hint))
    evidence = _evidence(facts, parts, offline, below, under)
    if fails or warns:
        status = Status.FAIL if fails else Status.WARN
        remedy = " ".join(r for r in remedies if r)
        return Verdict(KAFKA_REPLICATION, status, "; ".join(fails + warns), evidence, remedy)
    return Verdict(KAFKA_REPLICATION, Status.PASS, _healthy(facts, parts, of), evidence)


def _restart_remedy(
    facts: ReplicationFacts,
    under: Sequence[PartitionReplicas],
    down: Sequence[int],
    refused: bool,
    hint: str,
) -> str:
    if down:
        if refused:
            then = "producers with acks=all are refused until enough replicas are back"
        elif any(len(p.isr) <= _min_isr(facts, p) for p in under):
            then = "until it is back, one more failure stops producers with acks=all"
        else:
            then = "meanwhile the cluster has fewer copies and fewer brokers to fail over to"
        return f"Restart node {_ids(down)}{hint}: {then}."
    if under or facts.quorum_leader == NO_LEADER:
        lagging = sorted({n for p in under for n in p.replicas if n not in p.isr})
        return (
            f"No broker is down: node {_ids(lagging)} is catching up (after a restart) or "
            "cannot keep up; if it lasts, read that broker's log."
            if lagging
            else "Restart the controllers that are down; a majority of voters must run."
        )
    return ""


def _healthy(facts: ReplicationFacts, parts: Sequence[PartitionReplicas], of: str) -> str:
    brokers = f"{len(facts.brokers)} of {len(facts.brokers)} brokers up"
    if not parts:
        return f"{brokers}; no partition{of} to judge"
    sizes = sorted({len(p.replicas) for p in parts})
    isr = f"ISR {sizes[0]} of {sizes[0]}" if len(sizes) == 1 else "every replica in sync"
    return f"{brokers}; {_count(parts)}{of} fully replicated ({isr}, {_min_text(facts, parts)})"


def _thin_topics(parts: Sequence[PartitionReplicas], brokers: int) -> str:
    wanted = min(3, brokers)
    factors = {p.topic: len(p.replicas) for p in parts if len(p.replicas) < wanted}
    if not factors:
        return ""
    named = ", ".join(f"{t} ({n})" for t, n in sorted(factors.items()))
    return (
        f"replication factor below {wanted} on a {brokers}-broker cluster: {named}; losing "
        "one broker loses partitions"
    )


def _evidence(
    facts: ReplicationFacts,
    parts: Sequence[PartitionReplicas],
    offline: Sequence[PartitionReplicas],
    below: Sequence[PartitionReplicas],
    under: Sequence[PartitionReplicas],
) -> dict[str, float | int | str]:
    return {
        "brokers": len(facts.brokers),
        "brokers_alive": len(facts.alive),
        "partitions": len(parts),
        "under_replicated_partitions": len(under),
        "offline_partitions": len(offline),
        "below_min_isr_partitions": len(below),
        "lowest_isr": min((len(p.isr) for p in parts), default=0),
        "min_insync_replicas": max((_min_isr(facts, p) for p in parts), default=0),
    }


def _min_isr(facts: ReplicationFacts, partition: PartitionReplicas) -> int:
    return facts.min_insync.get(partition.topic, DEFAULT_MIN_INSYNC)


def _min_text(facts: ReplicationFacts, parts: Iterable[PartitionReplicas]) -> str:
    values = sorted({_min_isr(facts, p) for p in parts})
    if len(values) == 1:
        return f"min.insync.replicas={values[0]}"
    return f"min.insync.replicas ({values[0]}-{values[-1]})"


def _isr(parts: Sequence[PartitionReplicas]) -> str:
    """``ISR 2 of 3``; mixed: ``ISR 2 of 3 on 4, 1 of 3 on 2``."""
    shapes = Counter((len(p.isr), len(p.replicas)) for p in parts)
    if len(shapes) == 1:
        (isr, replicas), _ = shapes.popitem()
        return f"ISR {isr} of {replicas}"
    return "ISR " + ", ".join(f"{i} of {r} on {n}" for (i, r), n in sorted(shapes.items()))


def _count(parts: Sequence[PartitionReplicas]) -> str:
    return f"{len(parts)} partition{'s' if len(parts) != 1 else ''}"


def _names(parts: Sequence[PartitionReplicas]) -> str:
    shown = ", ".join(p.name for p in parts[:_SHOWN])
    return shown + (", ..." if len(parts) > _SHOWN else "")


def _ids(nodes: Iterable[int]) -> str:
    return ", ".join(str(n) for n in nodes)
