"""The health sensor as Dagster runs it (``build_sensor_context``) on a throwaway instance: the
wiring only gathers facts and emits what ``health/`` decided. No JVM, no broker: the stream reads
a table (``events`` reads ``clickstream_raw``), and its progress records are real Spark progress.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.defs.health import health_definitions
from platform_pipelines.health.metrics import METRICS
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from tests.unit.health.factories import batch

pytestmark = pytest.mark.dagster

CHEAP = {"liveness", "falling_behind", "state_growth", "late_data", "checkpoint"}


def _sensor(settings: PlatformSettings, name: str) -> dg.SensorDefinition:
    # events reading bronze: no Kafka topic of its own, so no broker is asked about replication.
    stream = builtin_streams(BuiltinSettings(events_reads="bronze")).get("events")
    defs = health_definitions([stream], [], {}, settings)
    return next(s for s in defs.sensors or [] if s.name == name)  # type: ignore[union-attr]


def _record(i: int, run_id: str, now: float, **numbers: object):  # type: ignore[no-untyped-def]
    """Batch ``i`` of the ``events`` stream in ``run_id``, recorded ``10 - i`` seconds ago; its
    events are 5 minutes of event time after batch ``i - 1``'s (a backlog read quickly), so that
    a few batches move the stream's clock past its key horizon (watermark 10 min + lifetime)."""
    record = batch(i, every=300.0, trigger=2.0, **numbers)  # type: ignore[arg-type]
    return replace(
        record,
        ts=now - 10 + i,
        stream="events",
        run_id=run_id,
        pid=os.getpid(),
        host=socket.gethostname(),
    )


def _checks(result: dg.SensorResult) -> dict[str, bool]:
    return {
        e.check_name: e.passed
        for e in result.asset_events or []
        if isinstance(e, dg.AssetCheckEvaluation)
    }


def _observations(result: dg.SensorResult) -> list[dg.AssetObservation]:
    return [e for e in result.asset_events or [] if isinstance(e, dg.AssetObservation)]


def test_the_health_sensor_reports_a_running_stream_then_only_what_changed(tmp_path: Path):
    settings = PlatformSettings(local_dir=tmp_path, health_sensor_interval_seconds=5)
    sensor = _sensor(settings, "stream_health_sensor")
    store = ProgressStore(settings.progress_dir)
    with dg.instance_for_test() as instance:
        run = dg.DagsterRun(
            job_name="stream_events",
            run_id="a1b2c3d4-0000-4000-8000-000000000001",
            status=dg.DagsterRunStatus.STARTED,
        )
        instance.add_run(run)
        now = time.time()
        for i in range(3):  # state bounded: rows removed every batch
            store.append(_record(i, run.run_id, now, state_rows=500, removed=50))

        first = sensor(dg.build_sensor_context(instance=instance, cursor=None))
        assert isinstance(first, dg.SensorResult)
        assert _checks(first) == dict.fromkeys(CHEAP, True)
        (observed,) = _observations(first)
        assert observed.asset_key == dg.AssetKey("events")
        numbers = {
            k
            for k, v in observed.metadata.items()
            if isinstance(v, dg.IntMetadataValue | dg.FloatMetadataValue)
        }
        assert numbers <= set(METRICS)  # only the curated numbers are plotted
        assert observed.metadata["job"].value == "stream_events"
        assert observed.metadata["running"].value is True
        assert observed.metadata["state_rows"].value == 500
        assert observed.metadata["rows_per_second"].value == 200.0

        # Nothing new: nothing reported again (results are re-sent only on a change).
        quiet = sensor(dg.build_sensor_context(instance=instance, cursor=first.cursor))
        assert isinstance(quiet, dg.SensorResult)
        assert (_checks(quiet), _observations(quiet)) == ({}, [])

        # Five batches of growth with nothing removed: a leak, reported alone, while running.
        for i in range(3, 9):
            store.append(_record(i, run.run_id, now, state_rows=500 + 100 * i, removed=0))
        leak = sensor(dg.build_sensor_context(instance=instance, cursor=quiet.cursor))
        assert isinstance(leak, dg.SensorResult)
        assert _checks(leak) == {"state_growth": False}
        (failed,) = [e for e in leak.asset_events or [] if isinstance(e, dg.AssetCheckEvaluation)]
        assert failed.description is not None
        assert "state grew from 800 to 1,300 rows over 6 batches" in failed.description
        assert _observations(leak)[0].metadata["state_rows"].value == 1300


def test_the_restart_sensor_relaunches_a_crash_but_never_a_cancel(tmp_path: Path):
    settings = PlatformSettings(local_dir=tmp_path, restart_base_delay_seconds=0)
    stream = builtin_streams().get("events")

    @dg.op
    def run_events() -> None: ...

    @dg.job(name="stream_events")
    def job() -> None:
        run_events()

    defs = health_definitions([stream], [job], {"stream_events": [stream]}, settings)
    sensor = next(s for s in defs.sensors or [] if s.name == "stream_auto_restart")  # type: ignore[union-attr]
    config = {"ops": {"run_events": {}}}
    with dg.instance_for_test() as instance:
        cancelled = instance.create_run_for_job(job, run_config=config)
        instance.report_run_canceled(cancelled, "cancelled by a user")
        quiet = sensor(dg.build_sensor_context(instance=instance, cursor=None))
        assert isinstance(quiet, dg.SensorResult)
        assert (quiet.run_requests, quiet.asset_events) == ([], [])  # a cancel is never relaunched

        crashed = instance.create_run_for_job(job, run_config=config)
        instance.report_run_failed(crashed, "the query died")
        result = sensor(dg.build_sensor_context(instance=instance, cursor=quiet.cursor))
        assert isinstance(result, dg.SensorResult)
        (request,) = result.run_requests or []
        assert json.loads(result.cursor or "{}") == {crashed.run_id: "warn"}  # latest runs only
        assert (request.job_name, request.run_config) == ("stream_events", config)
        assert request.tags == {
            "platform/restart_attempt": "1",
            "platform/restart_of": crashed.run_id,
        }
        (check,) = [e for e in result.asset_events or [] if isinstance(e, dg.AssetCheckEvaluation)]
        assert (check.check_name, check.passed) == ("auto_restart", False)
        assert check.severity is dg.AssetCheckSeverity.WARN
        assert check.description == (
            "warn auto_restart: stream_events failed and was relaunched (relaunch 1 of at most 5): "
            "the query died -> Look at the failed run's logs if it keeps happening."
        )
