"""kafka_replication: pass while every replica is in sync; warn when a broker is down or partitions
are under-replicated but acks=all producers still succeed; fail when a partition has no leader,
its ISR is below min.insync.replicas, or the controller quorum has no leader."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.replication import KAFKA_REPLICATION, judge_replication
from platform_pipelines.kafka.replication import NO_LEADER, PartitionReplicas, ReplicationFacts

HINT = " (`platform kafka cluster start` starts the nodes that are down)"


def partitions(
    topic: str,
    isr: tuple[int, ...],
    count: int = 3,
    leader: int = 1,
    replicas: tuple[int, ...] = (1, 2, 3),
) -> tuple[PartitionReplicas, ...]:
    return tuple(PartitionReplicas(topic, i, leader, replicas, isr) for i in range(count))


def cluster(
    *parts: PartitionReplicas,
    alive: tuple[int, ...] = (1, 2, 3),
    quorum: int = 1,
    min_insync: int = 2,
) -> ReplicationFacts:
    topics = {p.topic for p in parts}
    return ReplicationFacts((1, 2, 3), alive, quorum, parts, dict.fromkeys(topics, min_insync))


def test_every_replica_in_sync_passes_with_the_counts():
    verdict = judge_replication(cluster(*partitions("clickstream", (1, 2, 3))), "clickstream")

    assert verdict.status is Status.PASS
    assert verdict.check == KAFKA_REPLICATION
    assert verdict.summary == (
        "3 of 3 brokers up; 3 partitions of clickstream fully replicated (ISR 3 of 3, "
        "min.insync.replicas=2)"
    )
    assert verdict.remedy == ""
    assert verdict.evidence == {
        "brokers": 3,
        "brokers_alive": 3,
        "partitions": 3,
        "under_replicated_partitions": 0,
        "offline_partitions": 0,
        "below_min_isr_partitions": 0,
        "lowest_isr": 3,
        "min_insync_replicas": 2,
    }


def test_one_broker_down_warns_naming_it_the_partitions_and_why_producers_still_succeed():
    facts = cluster(*partitions("clickstream", (1, 3), count=6), alive=(1, 3))

    verdict = judge_replication(facts, "clickstream", restart_hint=HINT)

    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "1 of 3 brokers down (node 2); 6 partitions of clickstream under-replicated (ISR 2 of 3); "
        "producers with acks=all still succeed while ISR >= min.insync.replicas=2"
    )
    assert verdict.remedy == (
        "Restart node 2 (`platform kafka cluster start` starts the nodes that are down): until it "
        "is back, one more failure stops producers with acks=all."
    )
    assert verdict.evidence["under_replicated_partitions"] == 6
    assert verdict.evidence["brokers_alive"] == 2
    assert verdict.evidence["lowest_isr"] == 2


def test_the_whole_cluster_is_judged_when_no_topic_is_named():
    facts = cluster(
        *partitions("a", (1, 3), count=2), *partitions("b", (1, 3), count=1), alive=(1, 3)
    )

    verdict = judge_replication(facts)

    assert verdict.summary.startswith(
        "1 of 3 brokers down (node 2); 3 partitions under-replicated (ISR 2 of 3)"
    )


def test_a_partition_below_min_insync_replicas_fails_as_producers_are_refused():
    facts = cluster(*partitions("clickstream", (1,), count=2), alive=(1,))

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.FAIL
    assert verdict.summary == (
        "2 partitions of clickstream below min.insync.replicas (ISR 1 of 3, "
        "min.insync.replicas=2): producers with acks=all are refused; 2 of 3 brokers down "
        "(node 2, 3)"
    )
    assert verdict.remedy == (
        "Restart node 2, 3: producers with acks=all are refused until enough replicas are back."
    )
    assert verdict.evidence["below_min_isr_partitions"] == 2


def test_a_partition_without_a_leader_fails_naming_it():
    offline = PartitionReplicas("clickstream", 1, NO_LEADER, (2,), (2,))
    facts = cluster(*partitions("clickstream", (1, 2, 3), count=1), offline, alive=(1, 3))

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith(
        "1 partition of clickstream without a leader (clickstream-1): nothing can be read from or "
        "written to them; 1 of 3 brokers down (node 2)"
    )
    assert verdict.evidence["offline_partitions"] == 1


def test_a_quorum_without_leader_fails():
    facts = cluster(*partitions("clickstream", (1, 2, 3)), quorum=NO_LEADER)

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith("the KRaft controller quorum has no leader")


def test_a_lagging_follower_with_every_broker_up_warns_naming_the_follower():
    facts = cluster(*partitions("clickstream", (1, 2), count=1))

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "1 partition of clickstream under-replicated (ISR 2 of 3); producers with acks=all still "
        "succeed while ISR >= min.insync.replicas=2"
    )
    assert verdict.remedy == (
        "No broker is down: node 3 is catching up (after a restart) or cannot keep up; if it "
        "lasts, read that broker's log."
    )


def test_a_topic_with_one_replica_on_a_three_broker_cluster_warns():
    facts = cluster(*partitions("clickstream", (1,), replicas=(1,)), min_insync=1)

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "replication factor below 3 on a 3-broker cluster: clickstream (1); losing one broker "
        "loses partitions"
    )
    assert verdict.remedy.startswith("Recreate the topic with more replicas")


def test_a_single_broker_with_one_replica_topics_passes():
    parts = partitions("clickstream", (1,), replicas=(1,))
    facts = ReplicationFacts((1,), (1,), 1, parts, {"clickstream": 1})

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.PASS
    assert verdict.summary == (
        "1 of 1 brokers up; 3 partitions of clickstream fully replicated (ISR 1 of 1, "
        "min.insync.replicas=1)"
    )


def test_a_broker_down_that_holds_none_of_the_topic_still_warns():
    facts = cluster(*partitions("clickstream", (1, 3), replicas=(1, 3)), alive=(1, 3))

    verdict = judge_replication(facts, "clickstream")

    assert verdict.status is Status.WARN
    assert verdict.summary.startswith("1 of 3 brokers down (node 2)")
    assert verdict.remedy.startswith("Restart node 2: meanwhile the cluster has fewer copies")


def test_the_health_sensor_judges_the_topic_from_what_the_broker_said():
    from platform_pipelines.health.evaluate import Broker, replication_verdict

    facts = cluster(*partitions("clickstream", (1, 3)), alive=(1, 3))
    said = replication_verdict("clickstream", Broker("b:9092", {"clickstream": {}}, "", facts))
    down = Broker("b:9092", None, "connection refused")
    partial = Broker("b:9092", {"clickstream": {}}, "replicas unknown: KafkaTimeoutError")

    assert said == judge_replication(facts, "clickstream")
    assert replication_verdict("clickstream", down).line() == (
        "warn kafka_replication: replication of clickstream unknown: the Kafka broker at b:9092 "
        "does not answer (connection refused) -> Check that the brokers run and answer "
        "(platform kafka status)."
    )
    assert replication_verdict("clickstream", partial).summary == (
        "replication of clickstream unknown: replicas unknown: KafkaTimeoutError"
    )
    assert replication_verdict("clickstream", None).summary == (
        "replication of clickstream unknown: no Kafka address is configured"
    )
