"""A producer in its own process, paced, that records when it sent each record.

Run by the latency section so that producing competes with the pipeline for the cores but not
for the driver's interpreter lock::

    python -m benchmarks.harness.produce_worker SPEC.json

``SPEC.json``: ``{"bootstrap", "topic", "rate", "out", "producer", "live", "started",
"config": {ClickstreamConfig fields, start_time as ISO}}`` (``live``: event times on the wall
clock, from the first send on). Writes ``out``: ``{"sent_ms": {event_id: first send, epoch ms},
"records", "elapsed_s", "rate"}``, and ``started`` (when given) as sending starts, after the
records are made: at 10,000 records/s for five minutes that takes minutes on 2 cores, which a
harness must not count as load. The Kafka record's own timestamp is taken in the same ``send``
call.

``producer``: ``jvm`` (the suite's default) sends with Kafka's Java client (``PacedProducer.java``, run as a
source file on the broker's jars); ``python`` (when the spec names none) with kafka-python,
which reaches only about 4,000 records/s beside Spark on 2 cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from platform_pipelines.core.times import iso
from platform_pipelines.jvm import ensure_jars, require_java
from platform_pipelines.kafka.producer import (
    ClickstreamConfig,
    ProducedRecord,
    generate_clickstream,
    produce,
)

JAVA_SOURCE = Path(__file__).with_name("PacedProducer.java")
# The event time the Java producer fills in as it sends (``dated_on_send``).
EVENT_TIME = "@EVENT_TIME@"
# The two fields read here, found in a well-formed record's bytes instead of parsing and encoding
# it again (at 10,000 records/s for six minutes those passes took minutes of the worker's start).
EVENT_ID_FIELD = re.compile(rb'"event_id"\s*:\s*"([^"\\]*)"')
EVENT_TIME_FIELD = re.compile(rb'"event_time"\s*:\s*"[^"\\]*"')
# With ``live``, the first record is dated this long after the records are made: about when the
# paced producer sends it (its JVM starts first).
LIVE_LEAD_S = 1.0


def live(records: list[ProducedRecord], rate: float, start: float) -> list[ProducedRecord]:
    """``records`` re-dated on the wall clock: record ``i`` at ``start + i / rate`` (when the
    paced producer sends it), a re-sent duplicate with its original's date, so that event time
    moves as fast as time does and an event sent now is never behind the watermark.

    >>> from platform_pipelines.kafka.producer import ProducedRecord
    >>> sent = [ProducedRecord(b"u", json.dumps({"event_id": e}).encode(), "ok") for e in "aba"]
    >>> [json.loads(r.value)["event_time"] for r in live(sent, 2.0, 0.0)]
    ['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.500Z', '1970-01-01T00:00:00.000Z']
    """
    dated: dict[str, str] = {}
    out = []
    for number, record in enumerate(records):
        if record.kind == "malformed":  # kept as it is: its date may be what is wrong with it
            out.append(record)
            continue
        event = json.loads(record.value)
        event_id = str(event.get("event_id"))
        at = datetime.fromtimestamp(start + number / rate, UTC)
        event["event_time"] = dated.setdefault(event_id, iso(at))
        out.append(replace(record, value=json.dumps(event).encode()))
    return out


def dated_on_send(records: list[ProducedRecord]) -> list[tuple[ProducedRecord, int | None]]:
    """``live`` for the Java producer, which knows when sending starts: each record with its
    event time left as ``EVENT_TIME`` and the number of the record whose due time dates it (a
    re-sent duplicate: its original's); a malformed record as it is, with None.

    >>> from platform_pipelines.kafka.producer import ProducedRecord
    >>> sent = [ProducedRecord(b"u", json.dumps({"event_id": e}).encode(), "ok") for e in "aba"]
    >>> [(json.loads(r.value)["event_time"], n) for r, n in dated_on_send(sent)]
    [('@EVENT_TIME@', 0), ('@EVENT_TIME@', 1), ('@EVENT_TIME@', 0)]
    """
    first: dict[str, int] = {}
    out: list[tuple[ProducedRecord, int | None]] = []
    for number, record in enumerate(records):
        if record.kind == "malformed":  # kept as it is: its date may be what is wrong with it
            out.append((record, None))
            continue
        value, dated = EVENT_TIME_FIELD.subn(
            f'"event_time":"{EVENT_TIME}"'.encode(), record.value, 1
        )
        if not dated:  # no event time to replace: add one
            event = json.loads(record.value)
            event["event_time"] = EVENT_TIME
            value = json.dumps(event).encode()
        original = first.setdefault(str(_event_id(record)), number)
        out.append((replace(record, value=value), original))
    return out


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    fields = dict(spec["config"])
    fields["start_time"] = datetime.fromisoformat(fields["start_time"])
    records = list(generate_clickstream(ClickstreamConfig(**fields)))
    ids = [_event_id(r) for r in records]
    if spec.get("producer", "python") == "jvm":
        lines = dated_on_send(records) if spec.get("live") else [(r, None) for r in records]
        sent = _send_with_java(spec, lines, Path(spec["out"]).parent)
        elapsed = (sent[-1] - sent[0]) / 1000 if len(sent) > 1 else 0.0
        rate = (len(sent) - 1) / elapsed if elapsed else 0.0
    else:
        if spec.get("live"):
            records = live(records, spec["rate"], time.time() + LIVE_LEAD_S)
        if spec.get("started"):
            Path(spec["started"]).write_text(str(int(time.time() * 1000)))
        sent = []
        summary = produce(
            spec["bootstrap"],
            spec["topic"],
            records,
            rate_per_sec=spec["rate"],
            progress=lambda n: sent.append(time.time() * 1000),
        )
        elapsed, rate = summary.elapsed_s, summary.rate_per_sec
    first: dict[str, float] = {}
    for event_id, at in zip(ids, sent, strict=True):
        if event_id is not None and event_id not in first:
            first[event_id] = at
    result = {"sent_ms": first, "records": len(records), "elapsed_s": elapsed, "rate": rate}
    Path(spec["out"]).write_text(json.dumps(result))


def _event_id(record: ProducedRecord) -> str | None:
    """The record's ``event_id``; None for a malformed one (truncated JSON, no id).

    >>> from platform_pipelines.kafka.producer import ProducedRecord
    >>> _event_id(ProducedRecord(b"u", b'{"event_id":"e1","page":"/"}', "ok"))
    'e1'
    >>> _event_id(ProducedRecord(b"u", b'{"event_id":"e1","pa', "malformed")) is None
    True
    """
    if record.kind != "malformed" and (found := EVENT_ID_FIELD.search(record.value)):
        return found.group(1).decode()
    try:
        event = json.loads(record.value)
    except ValueError:
        return None
    return event.get("event_id") if isinstance(event, dict) else None


def _send_with_java(
    spec: dict, records: list[tuple[ProducedRecord, int | None]], folder: Path
) -> list[float]:
    """Send ``records`` (each with the number whose due time dates it, or None: sent as it is)
    with ``PacedProducer.java``; the epoch ms of each send, in order."""
    require_java()
    lines = folder / "records.tsv"
    with lines.open("w", encoding="utf-8") as out:
        for record, dated in records:
            key = record.key.decode() if record.key else ""
            tail = "" if dated is None else f"\t{dated}"
            out.write(f"{key}\t{record.value.decode()}{tail}\n")
    sent = folder / "sent.txt"
    classpath = os.pathsep.join(str(j) for j in ensure_jars("kafka-broker"))
    command = [
        "java",
        "-cp",
        classpath,
        str(JAVA_SOURCE),
        spec["bootstrap"],
        spec["topic"],
        str(spec["rate"]),
        str(lines),
        str(sent),
        *([spec["started"]] if spec.get("started") else []),
    ]
    subprocess.run(command, check=True)
    return [float(line) for line in sent.read_text().split()]


if __name__ == "__main__":
    main(sys.argv[1])
