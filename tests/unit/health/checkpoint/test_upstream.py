"""``judge_upstream``: a checkpoint positioned in a replaced upstream table fails, with the fix."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.checkpoint.model import CheckpointFacts
from platform_pipelines.health.checkpoint.upstream import judge_upstream

OFFSET = {"sourceVersion": 1, "reservoirId": "de4d", "reservoirVersion": 3, "index": -1}


def _facts(*offsets: dict[str, object]) -> CheckpointFacts:
    return CheckpointFacts("/lake/checkpoints/events", True, latest_source_offsets=list(offsets))


def test_positions_in_the_table_it_reads_today_are_fine() -> None:
    assert judge_upstream(_facts(OFFSET), "events", "clickstream_raw", "de4d") is None


def test_positions_in_a_replaced_table_fail_and_say_to_reprocess() -> None:
    verdict = judge_upstream(_facts(OFFSET), "events", "clickstream_raw", "9af1")

    assert verdict is not None
    assert verdict.status == Status.FAIL
    assert "clickstream_raw that was replaced (Delta table id de4d" in verdict.summary
    assert "`platform reprocess events`" in verdict.remedy


def test_unknown_ids_are_not_judged() -> None:
    kafka = {"clicks": {"0": 12}}
    assert judge_upstream(_facts(kafka), "events", "clickstream_raw", "9af1") is None
    assert judge_upstream(_facts(OFFSET), "events", "clickstream_raw", None) is None
    assert judge_upstream(_facts(), "events", "clickstream_raw", "9af1") is None
