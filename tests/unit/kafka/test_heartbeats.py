"""The synthetic service heartbeats: which services beat, and how often."""

from __future__ import annotations

from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats


def test_silent_services_stop_sending_halfway():
    records = list(generate_heartbeats(HeartbeatConfig(services=3, beats=4, silent=1)))
    keys = [r.key.decode() for r in records]
    assert keys.count("svc-00") == 4 and keys.count("svc-01") == 4 and keys.count("svc-02") == 2
