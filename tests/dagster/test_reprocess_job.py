"""The reprocess job refuses what it cannot do, naming the field and the fix, before any JVM."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.dagster]


def failure_of(config: dict, tmp_path, monkeypatch) -> str:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    from platform_pipelines.definitions import defs

    job = defs.get_job_def("reprocess")
    run_config = {"ops": {"rebuild_and_switch": {"config": config}}}
    result = job.execute_in_process(run_config=run_config, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return failure.event_specific_data.error.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"stream": "nope"}, "stream: 'nope' is not declared; use one of: clickstream_raw, events"),
        ({"stream": "events", "start": "timestamp"}, "needs the time to start from: give it"),
        (
            {"stream": "events", "start": "timestamp", "timestamp": "2026-11-23T10:00"},
            "'2026-11-23T10:00' has no time zone; add one, e.g. 2026-11-23T10:00Z for UTC",
        ),
        (
            {"stream": "clickstream_raw", "start": "bronze"},
            "clickstream_raw is a bronze stream: its input is Kafka",
        ),
        ({"stream": "events", "switch_only": "r1"}, "No rebuild r1 waits to be switched in"),
    ],
)
def test_the_reprocess_job_refuses_a_bad_launch_naming_the_field_and_the_fix(
    config, message, tmp_path, monkeypatch
):
    assert message in failure_of(config, tmp_path, monkeypatch)
