"""What a local Kafka node is started with: its ``server.properties`` and ``log4j2.properties``,
the ``java`` command line that reads them, and a new cluster id to format its storage with."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

from platform_pipelines.jvm import ensure_jars
from platform_pipelines.kafka.tls import BrokerSecrets

_LISTENERS = re.compile(r"^listeners=\w+://[^:]+:(\d+),CONTROLLER://[^:]+:(\d+)(?:,\S+)?$", re.M)
PROXIED = "PROXIED"  # the names of more client listeners, each reached through a proxy: PROXIED<n>

LOG4J2 = """\
status = warn
shutdownHook = disable
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def server_properties(
    data_dir: Path,
    host: str,
    port: int,
    controller_port: int,
    secrets: BrokerSecrets | None,
    proxied: Sequence[tuple[int, int]] = (),
) -> str:
    """A single-node KRaft broker + controller: its client listener is PLAINTEXT, or SASL_SSL
    with ``secrets``; the controller listener is PLAINTEXT on ``host`` either way.

    Each ``(port, advertised port)`` of ``proxied`` adds a PLAINTEXT client listener that
    advertises another port: a proxy's, so that a client bootstrapped there makes every
    connection through that proxy (``platform chaos`` cuts the network so). Not with ``secrets``.
    """
    if proxied and secrets is not None:
        raise ValueError("a proxied listener is PLAINTEXT only")
    if secrets is None:
        listeners = _plaintext_listeners(host, port, controller_port, proxied)
    else:
        listeners = secrets.listener_properties(host, port, controller_port)
    # A static voter set (controller.quorum.voters) rather than a dynamic quorum: the controller's
    # address is then read from this file on every start and is not frozen into the metadata log,
    # so a restart may use other ports.
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{host}:{controller_port}
{listeners}controller.listener.names=CONTROLLER
log.dirs={data_dir / "logs"}
num.partitions=3
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
"""


def _plaintext_listeners(
    host: str, port: int, controller_port: int, proxied: Sequence[tuple[int, int]]
) -> str:
    names = [f"PLAINTEXT://{host}:{port}", f"CONTROLLER://{host}:{controller_port}"]
    advertised = [f"PLAINTEXT://{host}:{port}"]
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    for n, (listen, shown) in enumerate(proxied, 1):
        names.append(f"{PROXIED}{n}://{host}:{listen}")
        advertised.append(f"{PROXIED}{n}://{host}:{shown}")
        protocols.append(f"{PROXIED}{n}:PLAINTEXT")
    return f"""\
listeners={",".join(names)}
advertised.listeners={",".join(advertised)}
listener.security.protocol.map={",".join(protocols)}
"""


def previous_ports(props: Path) -> tuple[int, int] | None:
    """The (client, controller) ports of an existing ``server.properties``, else None."""
    match = _LISTENERS.search(props.read_text()) if props.exists() else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def java_command(log4j: Path, main: str, *args: str) -> list[str]:
    """``java`` running ``main`` (``kafka.Kafka``, ``kafka.tools.StorageTool``) of the broker's
    jars with ``args``, logging as the ``log4j2.properties`` at ``log4j`` says."""
    jars = ensure_jars("kafka-broker")
    # C1 only and the serial GC start the JVM ~40% sooner; a local broker never needs peak JIT.
    return [
        "java",
        "-Xmx512m",
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-cp",
        str(jars[0].parent / "*"),
        f"-Dlog4j2.configurationFile={log4j}",
        main,
        *args,
    ]


def new_cluster_id() -> str:
    """A random cluster id for ``StorageTool format -t`` (URL-safe base64 of a UUID, as Kafka's
    own ``random-uuid``)."""
    cluster_id = "-"
    while cluster_id.startswith("-"):  # the tool would read it as an option (as Kafka's own)
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return cluster_id
