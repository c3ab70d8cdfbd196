"""The few admin calls the platform needs: is the broker up, make topics, how far do they reach.

Every call authenticates as ``PLATFORM_KAFKA_*`` say (``kafka.security``), or as ``security`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.errors import (
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    for_code,
)
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    retry_if_not_exception_type,
    stop_after_delay,
    wait_fixed,
)

from platform_pipelines.kafka.clients import KafkaAccessError, connect
from platform_pipelines.kafka.security import KafkaSecurity

_CLIENT_ID = "platform-admin"


def _admin(
    bootstrap: str, timeout_s: float = 10.0, security: KafkaSecurity | None = None
) -> KafkaAdminClient:
    ms = int(timeout_s * 1000)
    return connect(
        KafkaAdminClient,
        bootstrap,
        security,
        client_id=_CLIENT_ID,
        bootstrap_timeout_ms=ms,
        request_timeout_ms=max(ms, 1000),
    )


def probe(bootstrap: str, timeout_s: float = 2.0, security: KafkaSecurity | None = None) -> int:
    """One metadata round trip; returns the number of live brokers or raises a KafkaError
    (a ``KafkaAccessError`` when TLS or authentication failed)."""
    with _admin(bootstrap, timeout_s, security) as admin:
        brokers = admin.describe_cluster()["brokers"]
    if not brokers:
        raise KafkaError(f"{bootstrap} answered but reports no registered broker yet")
    return len(brokers)


def wait_for_broker(
    bootstrap: str,
    timeout_s: float = 30.0,
    *,
    check: Callable[[], None] | None = None,
    security: KafkaSecurity | None = None,
) -> None:
    """Block until a broker at ``bootstrap`` answers a metadata request.

    ``check`` runs before every attempt; whatever it raises ends the wait at once (the local broker
    uses it to notice that its process died instead of waiting for the timeout).

    Raises:
        KafkaAccessError: the broker refused the TLS handshake or the credentials (not retried).
        TimeoutError: nothing answered within ``timeout_s``; the message holds the last error.
    """
    retrying = Retrying(
        stop=stop_after_delay(timeout_s),
        wait=wait_fixed(0.25),
        retry=retry_if_exception_type((KafkaError, OSError))
        & retry_if_not_exception_type(KafkaAccessError),
    )
    try:
        for attempt in retrying:
            with attempt:
                if check is not None:
                    check()
                probe(bootstrap, security=security)
    except RetryError as err:
        last = err.last_attempt.exception()
        raise TimeoutError(
            f"No Kafka broker answered at {bootstrap} within {timeout_s:.0f}s "
            f"(last error: {last}). Start the local broker, or point "
            "PLATFORM_KAFKA_BOOTSTRAP_SERVERS at a running one."
        ) from last


def create_topics(
    bootstrap: str,
    topics: Mapping[str, int],
    *,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    security: KafkaSecurity | None = None,
) -> list[str]:
    """Create ``{name: partitions}``; existing topics are left alone. Returns the names created.
    ``replication_factor=-1``: the brokers' ``default.replication.factor`` (1 on the local broker,
    3 on the local cluster).

    Returns once every topic has a leader for each partition, so a producer can write at once.
    """
    spec = {
        name: {
            "num_partitions": partitions,
            "replication_factor": replication_factor,
            "configs": dict(configs or {}),
        }
        for name, partitions in topics.items()
    }
    with _admin(bootstrap, timeout_s, security) as admin:
        result = admin.create_topics(spec, timeout_ms=int(timeout_s * 1000), raise_errors=False)
        created = []
        for topic in result["topics"]:
            error = for_code(topic["error_code"])
            if topic["error_code"] == 0:
                created.append(topic["name"])
            elif error is not TopicAlreadyExistsError:
                raise error(f"Could not create topic {topic['name']}: {topic.get('error_message')}")
        admin.wait_for_topics(list(topics), timeout_ms=int(timeout_s * 1000))
    return created


def end_offsets(
    bootstrap: str, topic: str, timeout_s: float = 10.0, security: KafkaSecurity | None = None
) -> dict[int, int]:
    """The next offset to be written, per partition of ``topic`` (sum = records ever written)."""
    return end_offsets_many(bootstrap, [topic], timeout_s, security=security)[topic]


def end_offsets_many(
    bootstrap: str,
    topics: Sequence[str],
    timeout_s: float = 10.0,
    skip_missing: bool = False,
    security: KafkaSecurity | None = None,
) -> dict[str, dict[int, int]]:
    """End offsets of several topics in one connection: ``{topic: {partition: next offset}}``.

    A topic the broker does not know raises, or with ``skip_missing`` is left out of the result
    (one missing topic must not hide the others' offsets)."""
    unknown = UnknownTopicOrPartitionError.errno
    with _admin(bootstrap, timeout_s, security) as admin:
        specs = {}
        for described in admin.describe_topics(list(topics)):
            if skip_missing and described["error_code"] == unknown:
                continue
            if described["error_code"] != 0:
                raise for_code(described["error_code"])(
                    f"Cannot read offsets of topic {described['name']!r}"
                )
            for p in described["partitions"]:
                specs[TopicPartition(described["name"], p["partition_index"])] = OffsetSpec.LATEST
        offsets = admin.list_partition_offsets(specs) if specs else {}
    known = {tp.topic for tp in specs}
    found: dict[str, dict[int, int]] = {t: {} for t in topics if not skip_missing or t in known}
    for tp, spec in sorted(offsets.items()):
        found[tp.topic][tp.partition] = spec.offset
    return found
