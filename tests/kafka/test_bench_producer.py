"""The latency benchmark's Java producer (``benchmarks/harness/PacedProducer.java``), run the way
the suite runs it: every record arrives as generated, and each has its send time."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from platform_pipelines.kafka.admin import end_offsets
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream
from platform_pipelines.settings import REPO_ROOT
from tests.kafka.test_broker import read_all

kafka = pytest.mark.kafka


@kafka
def test_the_java_producer_sends_every_record_paced_and_notes_each_send(
    kafka_broker: str, topic_factory, tmp_path: Path
) -> None:
    topic = topic_factory("paced", partitions=3)
    cfg = ClickstreamConfig(
        events=300,
        users=20,
        duplicate_rate=0.05,
        late_rate=0.0,
        malformed_rate=0.0,
        start_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    config = {**asdict(cfg), "start_time": cfg.start_time.isoformat()}
    spec = {
        "bootstrap": kafka_broker,
        "topic": topic,
        "rate": 1000.0,
        "config": config,
        "out": str(tmp_path / "sent.json"),
        "producer": "jvm",
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))

    subprocess.run(
        [sys.executable, "-m", "benchmarks.harness.produce_worker", str(tmp_path / "spec.json")],
        cwd=REPO_ROOT,
        check=True,
        timeout=180,
    )

    records = list(generate_clickstream(cfg))
    assert sum(end_offsets(kafka_broker, topic).values()) == 300
    received = read_all(kafka_broker, topic, 300)
    assert sorted((key, value) for _, key, value in received) == sorted(
        (r.key, r.value) for r in records
    )
    result = json.loads((tmp_path / "sent.json").read_text())
    ids = {json.loads(r.value)["event_id"] for r in records}
    assert set(result["sent_ms"]) == ids  # duplicates count from their first send
    assert result["records"] == 300
    # Paced, never ahead of 1,000/s: record 300 is due 0.299 s after the first.
    assert result["elapsed_s"] >= 0.29
