"""The local broker's listeners: the default broker has one client listener; proxied listeners
advertise their proxy's port; the ports of either are read back for the next start."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_pipelines.kafka.broker_config import previous_ports, server_properties
from platform_pipelines.kafka.tls import BrokerSecrets


def lines(props: str, key: str) -> str:
    return next(line for line in props.splitlines() if line.startswith(f"{key}="))


def test_the_default_broker_has_one_client_listener_and_its_controller() -> None:
    props = server_properties(Path("/d"), "127.0.0.1", 9092, 9093, None)

    assert lines(props, "listeners") == (
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    )
    assert lines(props, "advertised.listeners") == "advertised.listeners=PLAINTEXT://127.0.0.1:9092"
    assert lines(props, "listener.security.protocol.map") == (
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    )
    assert "PROXIED" not in props


def test_each_proxied_listener_advertises_its_proxy_s_port() -> None:
    props = server_properties(
        Path("/d"), "127.0.0.1", 9092, 9093, None, proxied=[(9100, 9200), (9101, 9201)]
    )

    assert lines(props, "listeners") == (
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,"
        "PROXIED1://127.0.0.1:9100,PROXIED2://127.0.0.1:9101"
    )
    assert lines(props, "advertised.listeners") == (
        "advertised.listeners=PLAINTEXT://127.0.0.1:9092,"
        "PROXIED1://127.0.0.1:9200,PROXIED2://127.0.0.1:9201"
    )
    assert lines(props, "listener.security.protocol.map").endswith(
        ",PROXIED1:PLAINTEXT,PROXIED2:PLAINTEXT"
    )


@pytest.mark.parametrize("proxied", [[], [(9100, 9200)]])
def test_the_last_ports_are_read_back_with_or_without_proxied_listeners(
    tmp_path: Path, proxied: list[tuple[int, int]]
) -> None:
    props = tmp_path / "server.properties"
    props.write_text(server_properties(tmp_path, "127.0.0.1", 9092, 9093, None, proxied))

    assert previous_ports(props) == (9092, 9093)


def test_a_proxied_listener_is_plaintext_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="PLAINTEXT only"):
        server_properties(
            tmp_path, "127.0.0.1", 9092, 9093, BrokerSecrets.of(tmp_path), [(9100, 9200)]
        )
