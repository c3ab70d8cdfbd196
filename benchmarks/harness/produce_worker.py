"""A producer in its own process, paced, that records when it sent each record.

Run by the latency section so that producing competes with the pipeline for the cores but not
for the driver's interpreter lock::

    python -m benchmarks.harness.produce_worker SPEC.json

``SPEC.json``: ``{"bootstrap", "topic", "rate", "out", "config": {ClickstreamConfig fields,
start_time as ISO}}``. Writes ``out``: ``{"sent_ms": {event_id: first send, epoch ms},
"records", "elapsed_s", "rate"}``. The Kafka record's own timestamp is taken in the same
``send`` call.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path

from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream, produce


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    fields = dict(spec["config"])
    fields["start_time"] = datetime.fromisoformat(fields["start_time"])
    records = list(generate_clickstream(ClickstreamConfig(**fields)))
    ids = [json.loads(r.value).get("event_id") for r in records]
    sent: list[float] = []
    summary = produce(spec["bootstrap"], spec["topic"], records, rate_per_sec=spec["rate"],
                      progress=lambda n: sent.append(time.time() * 1000))  # fmt: skip
    first: dict[str, float] = {}
    for event_id, at in zip(ids, sent, strict=True):
        if event_id is not None and event_id not in first:
            first[event_id] = at
    result = {"sent_ms": first, "records": summary.total, "elapsed_s": summary.elapsed_s,
              "rate": summary.rate_per_sec}  # fmt: skip
    Path(spec["out"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
