"""The pure parts of a stream's lifecycle: rebuild plans, declaration records, pointers, retired
checkpoints (no JVM)."""

from __future__ import annotations

import json

import pytest

from platform_pipelines.lakehouse.pointers import current_folder, point_to
from platform_pipelines.runtime.lock import CheckpointBusyError, CheckpointLocks, retire
from platform_pipelines.runtime.reprocess import ReprocessRefused, plan_reprocess
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.evolution import (
    DECLARATION_FILE,
    DeclarationChanged,
    check_declaration,
)

# events reading bronze (PLATFORM_EVENTS_READS=bronze): the chain a rebuild from bronze walks.
BUILTIN = builtin_streams(BuiltinSettings(events_reads="bronze"))


@pytest.mark.parametrize(
    ("name", "start", "downstream", "streams", "told"),
    [
        ("user_sessions", "earliest", "notify", ["user_sessions"], []),
        ("events", "earliest", "notify", ["events"], ["user_sessions"]),
        ("events", "bronze", "reprocess", ["events", "user_sessions"], []),
        # from bronze: the silver stream between the gold one and bronze is rebuilt with it
        ("user_sessions", "bronze", "notify", ["events", "user_sessions"], []),
        # security_alerts reads the topic itself: a rebuild of bronze leaves it alone
        (
            "clickstream_raw",
            "earliest",
            "reprocess",
            ["clickstream_raw", "events", "user_sessions"],
            [],
        ),
        ("clickstream_raw", "timestamp", "notify", ["clickstream_raw"], ["events"]),
    ],
)
def test_a_rebuild_plan_covers_the_chosen_streams_upstream_first_and_names_the_readers_left_out(
    name, start, downstream, streams, told
):
    plan = plan_reprocess(BUILTIN, name, start, downstream, timestamp_ms=1, rebuild_id="r1")
    assert list(plan.streams) == streams
    assert list(plan.told) == told


def test_a_rebuild_plan_refuses_what_cannot_be_done_saying_what_to_use():
    with pytest.raises(ReprocessRefused, match="start it from earliest or from a timestamp"):
        plan_reprocess(BUILTIN, "clickstream_raw", "bronze", "notify")
    with pytest.raises(ReprocessRefused, match="needs the time to start from"):
        plan_reprocess(BUILTIN, "events", "timestamp", "notify")
    with pytest.raises(KeyError, match="No stream named 'nope'"):
        plan_reprocess(BUILTIN, "nope", "earliest", "notify")


def test_a_checkpoint_records_its_declaration_and_refuses_a_new_key_or_a_replaced_upstream(
    tmp_path,
):
    sessions = BUILTIN.get("user_sessions")
    check_declaration(tmp_path, sessions, upstream="events")
    recorded = json.loads((tmp_path / DECLARATION_FILE).read_text())
    assert recorded["key"] == ["user_id"] and recorded["upstream"] == "events"
    check_declaration(tmp_path, sessions, upstream="events")  # unchanged: starts
    with pytest.raises(DeclarationChanged) as refused:
        check_declaration(tmp_path, sessions, upstream="events@r1")
    assert "upstream: the checkpoint reads the table generation events, which was rebuilt" in str(
        refused.value
    )
    assert "platform reprocess user_sessions" in str(refused.value)


def test_a_bronze_checkpoint_follows_added_fields_and_refuses_removed_or_retyped_ones(tmp_path):
    from dataclasses import replace

    bronze = BUILTIN.get("clickstream_raw")
    check_declaration(tmp_path, bronze)
    schema = dict(bronze.source.schema)
    added = replace(bronze, source=replace(bronze.source, schema={**schema, "device": "string"}))
    check_declaration(tmp_path, added)  # compatible: recorded as the new declaration
    assert "device" in json.loads((tmp_path / DECLARATION_FILE).read_text())["source"]
    retyped = replace(bronze, source=replace(bronze.source, schema={**schema, "device": "long"}))
    with pytest.raises(DeclarationChanged, match=r"source\.schema: device string -> long"):
        check_declaration(tmp_path, retyped)


def test_a_pointer_names_the_current_generation_and_a_bad_one_says_how_to_fix_it(tmp_path):
    assert current_folder(tmp_path, "events") == "events"
    point_to(tmp_path, "events", "events@r1")
    assert current_folder(tmp_path, "events") == "events@r1"
    (tmp_path / "_current" / "events").write_text("../../etc\n")
    with pytest.raises(ValueError, match="not a generation of 'events'"):
        current_folder(tmp_path, "events")


def test_a_retired_checkpoint_cannot_be_locked_again(tmp_path):
    old = tmp_path / "events"
    with CheckpointLocks({"events": old}):
        retire(old, "rebuilt by platform reprocess as events@r1")
    with pytest.raises(CheckpointBusyError, match="was replaced \\(rebuilt by platform reprocess"):
        CheckpointLocks({"events": old}).__enter__()


def test_a_checkpoint_keeps_the_time_mode_it_started_with(tmp_path):
    from platform_pipelines.lakehouse.checkpoints import recorded_time_mode
    from user_streams.running_count import STREAMS

    counts = STREAMS[0]  # a watermark and no timeout: event time on a new checkpoint
    check_declaration(tmp_path / "new", counts, upstream="key_events_raw")
    assert recorded_time_mode(tmp_path / "new") == "EventTime"
    legacy = tmp_path / "legacy"  # started before time modes were recorded: it ran without one
    legacy.mkdir()
    old = {
        "kind": "stateful",
        "key": ["key"],
        "output": dict(counts.output_schema),
        "output_mode": "update",
        "upstream": "key_events_raw",
    }
    (legacy / DECLARATION_FILE).write_text(json.dumps(old))
    check_declaration(legacy, counts, upstream="key_events_raw")
    assert recorded_time_mode(legacy) == "None"
    from dataclasses import replace

    with pytest.raises(DeclarationChanged, match="time_mode: None -> ProcessingTime"):
        check_declaration(legacy, replace(counts, timeout="processing_time"), "key_events_raw")


def test_a_sessions_checkpoint_of_another_state_format_is_refused_with_the_rebuild() -> None:
    from platform_pipelines.streams.evolution import incompatible_changes

    started = {
        "kind": "stateful",
        "key": ["user_id"],
        "output": {"n": "long"},
        "output_mode": "append",
        "time_mode": None,
    }
    now = {**started, "state_format": "sessions-jvm/1 (flatMapGroupsWithState)"}
    assert incompatible_changes(started, now) == [
        "state_format: transformWithState in Python (not recorded) -> "
        "sessions-jvm/1 (flatMapGroupsWithState) (the state is kept by another operator)"
    ]
    assert incompatible_changes(now, dict(now)) == []
