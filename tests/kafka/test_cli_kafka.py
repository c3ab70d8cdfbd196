"""`platform kafka stop` refuses to pull the broker from under running streams unless forced."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from platform_pipelines.cli import main
from platform_pipelines.kafka.broker import LocalKafkaBroker, find_running_broker
from platform_pipelines.runtime.lock import CheckpointLocks

pytestmark = pytest.mark.kafka


def test_kafka_stop_names_the_streams_reading_it_and_stops_only_with_force(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    broker = LocalKafkaBroker(tmp_path / "kafka")
    broker.start()
    try:
        events = tmp_path / "lakehouse" / "checkpoints" / "events"
        with CheckpointLocks({"events": events}, owner="run 1a2b3c4d of stream_events"):
            refused = CliRunner().invoke(main, ["kafka", "stop"])
            assert refused.exit_code == 1
            assert "Streams read from this broker right now: events" in refused.output
            assert "--force" in refused.output
            assert find_running_broker(tmp_path / "kafka") is not None

            forced = CliRunner().invoke(main, ["kafka", "stop", "--force"])
        assert forced.exit_code == 0, forced.output
        assert "Kafka broker stopped." in forced.output
        assert find_running_broker(tmp_path / "kafka") is None
    finally:
        if find_running_broker(tmp_path / "kafka"):
            broker.stop()


def test_kafka_env_and_status_without_a_secured_broker_say_plaintext(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("PLATFORM_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("PLATFORM_KAFKA_SASL_USERNAME", "platform")
    for name in ("PLATFORM_KAFKA_SASL_PASSWORD", "PLATFORM_KAFKA_SSL_CAFILE"):
        monkeypatch.delenv(name, raising=False)

    env = CliRunner().invoke(main, ["kafka", "env"])
    status = CliRunner().invoke(main, ["kafka", "status"])

    assert env.exit_code == 0, env.output
    assert env.output.splitlines() == [
        "export PLATFORM_KAFKA_SECURITY_PROTOCOL=PLAINTEXT",
        "unset PLATFORM_KAFKA_SASL_USERNAME PLATFORM_KAFKA_SASL_PASSWORD PLATFORM_KAFKA_SSL_CAFILE",
    ]
    assert status.exit_code == 0, status.output
    assert "local broker: not running" in status.output
    assert (
        "its clients cannot connect: Kafka security settings: PLATFORM_KAFKA_SECURITY_PROTOCOL="
        "SASL_SSL needs PLATFORM_KAFKA_SASL_PASSWORD: set them"
    ) in status.output
