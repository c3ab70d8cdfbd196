"""The progress recorder writes what the health layer reads: each record says which phase ran."""

from __future__ import annotations

from pathlib import Path

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.runtime.recorder import ProgressRecorder


def test_records_say_which_phase_of_the_run_their_query_belongs_to(tmp_path: Path):
    store = ProgressStore(tmp_path)
    recorder = ProgressRecorder(store, "run-1", {"events": 0.0})

    recorder.record("events", "started")
    recorder.start_phase("events", "catch_up")
    recorder.record("events", "started")
    recorder.start_phase("events", "continuous")
    recorder.record("events", "idle")
    recorder.record("other", "idle")  # not a stream of this recorder: ignored

    assert [(r.event, r.phase, r.trigger_seconds) for r in store.recent("events", 10)] == [
        ("started", None, 0.0),
        ("started", "catch_up", 0.0),
        ("idle", "continuous", 0.0),
    ]
    assert store.recent("other", 10) == []
