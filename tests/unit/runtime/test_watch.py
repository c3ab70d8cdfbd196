"""What the broker watch says about access to Kafka, against real sockets on this machine."""

from __future__ import annotations

import socket

import pytest

from platform_pipelines.runtime.watch import access_problem


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])


def test_a_broker_that_does_not_answer_is_an_outage_not_an_access_problem():
    assert access_problem(f"127.0.0.1:{closed_port()}", timeout_s=1.0) is None


def test_invalid_kafka_settings_are_the_access_problem_and_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("PLATFORM_KAFKA_SSL_CAFILE", "/nowhere/ca.pem")

    problem = access_problem(f"127.0.0.1:{closed_port()}", timeout_s=1.0)

    assert problem is not None and "PLATFORM_KAFKA_SSL_CAFILE" in problem
