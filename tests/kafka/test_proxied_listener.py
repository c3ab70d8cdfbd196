"""A broker with a proxied listener: a client bootstrapped at the proxy is told only the proxy's
address, so every connection it makes goes through the proxy (which ``platform chaos`` cuts)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from platform_pipelines.core.local_server import HOST, free_port
from platform_pipelines.kafka.admin import create_topics, end_offsets
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.kafka.clients import connect
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.runtime.chaos_proxy import FaultProxy

pytestmark = pytest.mark.kafka


def test_a_client_through_the_proxy_reaches_the_broker_only_through_it(tmp_path: Path) -> None:
    proxy_port = free_port()
    broker = LocalKafkaBroker(tmp_path, proxied_ports=[proxy_port])
    direct = broker.start()
    try:
        (listener,) = broker.proxied_listener_ports
        with FaultProxy(proxy_port, listener) as proxy:
            proxied = f"{HOST}:{proxy_port}"
            create_topics(direct, {"through": 2})
            produce_events(proxied, "through", [{"user_id": f"u{i}"} for i in range(5)])

            admin = connect(KafkaAdminClient, proxied)
            brokers = admin.describe_cluster()["brokers"]
            admin.close()

            assert [(b["host"], b["port"]) for b in brokers] == [(HOST, proxy_port)]
            assert sum(end_offsets(direct, "through").values()) == 5
            assert proxy.accepted >= 2  # the clients' bootstrap and broker connections
        with socket.socket() as closed:  # the proxy's port is free again; the broker never held it
            closed.bind((HOST, proxy_port))
    finally:
        broker.stop()
