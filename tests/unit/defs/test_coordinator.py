"""One run per stream, decided before launch: which streams a run holds, and the refusal."""

from __future__ import annotations

import dagster as dg

from platform_pipelines.defs.coordinator import STREAMS_TAG, conflict, held_streams


def run(
    job: str,
    streams: str,
    run_id: str,
    config: dict | None = None,
    status: dg.DagsterRunStatus = dg.DagsterRunStatus.STARTED,
) -> dg.DagsterRun:
    return dg.DagsterRun(
        job_name=job,
        run_id=run_id,
        run_config=config or {},
        status=status,
        tags={STREAMS_TAG: streams},
    )


def test_a_run_holds_its_jobs_streams_except_those_its_config_disables():
    config = {
        "ops": {
            "run_all_streams": {
                "config": {
                    "streams": {
                        "key_counts": {"enabled": False},
                        "events": {"trigger_interval_seconds": 3},
                    }
                }
            }
        }
    }

    held = held_streams({STREAMS_TAG: "events,user_sessions,key_counts"}, config)

    assert held == {"events", "user_sessions"}


def test_a_launch_that_includes_a_held_stream_is_refused_naming_the_run_that_holds_it():
    running = run("all_streams", "clickstream_raw,events,user_sessions", "1a2b3c4d-aaaa")
    wanted = run("stream_events", "events", "9f9f9f9f-bbbb", status=dg.DagsterRunStatus.NOT_STARTED)

    refused = conflict(wanted, [running, wanted])

    assert refused == (
        "Refused: events is already run by all_streams run 1a2b3c4d-aaaa (started). Two runs on "
        "one checkpoint would corrupt it: cancel that run first, or launch without those "
        "streams (streams: {events: {enabled: false}})."
    )


def test_runs_of_different_streams_do_not_conflict():
    running = run("stream_events", "events", "1a2b")
    wanted = run("stream_service_status", "service_status", "3c4d")
    disabled = run(
        "all_streams",
        "events,service_status",
        "5e6f",
        {"ops": {"run_all_streams": {"config": {"streams": {"events": {"enabled": False}}}}}},
    )

    assert conflict(wanted, [running]) is None
    assert conflict(running, [disabled]) is None
