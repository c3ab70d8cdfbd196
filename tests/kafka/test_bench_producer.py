"""The latency benchmark's Java producer (``benchmarks/harness/PacedProducer.java``), run the way
the suite runs it: every record arrives as generated, and each has its send time."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from platform_pipelines.core.times import iso
from platform_pipelines.kafka.admin import end_offsets
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream
from platform_pipelines.settings import REPO_ROOT
from tests.kafka.test_broker import read_all

kafka = pytest.mark.kafka
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
    run_worker(tmp_path, kafka_broker, topic, cfg)

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


@kafka
def test_live_records_are_dated_from_the_first_send_not_from_when_they_were_made(
    kafka_broker: str, topic_factory, tmp_path: Path
) -> None:
    """With ``live``, event time starts when sending does (``started``), however long making
    the records took: record n is dated when it is due, a re-sent copy as its original, and a
    malformed record goes out as it was made."""
    topic = topic_factory("paced-live", partitions=2)
    cfg = ClickstreamConfig(
        events=200,
        users=10,
        duplicate_rate=0.1,
        late_rate=0.0,
        malformed_rate=0.05,
        start_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    run_worker(tmp_path, kafka_broker, topic, cfg, live=True, started=str(tmp_path / "started.txt"))

    records = list(generate_clickstream(cfg))
    started_ms = int((tmp_path / "started.txt").read_text())
    originals: dict[str, int] = {}
    expected: list[bytes] = []
    for number, record in enumerate(records):
        if record.kind == "malformed":
            expected.append(record.value)
            continue
        event = json.loads(record.value)
        original = originals.setdefault(event["event_id"], number)
        event["event_time"] = iso(EPOCH + timedelta(milliseconds=started_ms + original))
        expected.append(json.dumps(event).encode())
    received = read_all(kafka_broker, topic, len(records))
    assert sorted(canonical(v) for _, _, v in received) == sorted(map(canonical, expected))
    sent = json.loads((tmp_path / "sent.json").read_text())["sent_ms"]
    assert min(sent.values()) >= started_ms  # nothing went out before the start it reported


def canonical(value: bytes) -> bytes:
    """A record's JSON with its keys sorted and no spaces (the worker keeps the generator's
    bytes and only swaps the event time); a value that is not JSON as it is."""
    try:
        return json.dumps(json.loads(value), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        return value


def run_worker(
    folder: Path, bootstrap: str, topic: str, cfg: ClickstreamConfig, **options: object
) -> None:
    """``produce_worker`` as the suite runs it: the Java producer at 1,000 records/s, the send
    times in ``folder/sent.json``; ``options`` added to its spec."""
    spec = {
        "bootstrap": bootstrap,
        "topic": topic,
        "rate": 1000.0,
        "config": {**asdict(cfg), "start_time": cfg.start_time.isoformat()},
        "out": str(folder / "sent.json"),
        "producer": "jvm",
        **options,
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    subprocess.run(
        [sys.executable, "-m", "benchmarks.harness.produce_worker", str(folder / "spec.json")],
        cwd=REPO_ROOT,
        check=True,
        timeout=180,
    )
