"""Dagster on PostgreSQL: the local server (`platform postgres`), the instance config, and
`dagster dev` (webserver, daemon, code server) with dagster_home/dagster-postgres.yaml on a real
PostgreSQL server, in a fresh database.

In the `dagster dev` test, one catch-up run of ``clickstream_raw`` is submitted and the deep
health-check schedule (every minute here) is started at once; meanwhile the health sensor ticks
every 10 s. Each is read back three ways: the webserver's GraphQL, the instance
(``DagsterInstance.from_config``), and SQL on the database itself. They share one test (one
`dagster dev`, ~30 s to start) rather than a module fixture: `--dist loadgroup` does not keep a
module's tests in one worker with pytest 9.2 (pytest-xdist issue 1386).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import requests
import yaml
from click.testing import CliRunner
from dagster import DagsterEventType, DagsterRunStatus

from platform_pipelines.cli.postgres import postgres
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.runtime.postgres_server import LocalPostgres
from platform_pipelines.settings import REPO_ROOT
from tests.dagster.test_health_sensors import latest_check
from tests.fixtures.dagster import sensor_ticks_since
from tests.fixtures.postgres import POSTGRES_YAML, DagsterOnPostgres
from tests.integration.events import U1_SHOPPING
from tests.sockets import listening
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.dagster,
    pytest.mark.filterwarnings(
        "ignore:Using variable_values and operation_name:DeprecationWarning"
    ),
]

JOB = "stream_clickstream_raw"
SCHEDULE = "stream_health_check_schedule"
SENSOR = "stream_health_sensor"
REPOSITORY = {
    "repositoryLocationName": "platform_pipelines.definitions",
    "repositoryName": "__repository__",
}
ENDED = (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)


def graphql(pg: DagsterOnPostgres, query: str, **variables: Any) -> dict[str, Any]:
    response = requests.post(
        f"{pg.ui.url}/graphql", timeout=60, json={"query": query, "variables": variables}
    )
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body
    return dict(body["data"])


START_SCHEDULE = """mutation($s: ScheduleSelector!) { startSchedule(scheduleSelector: $s) {
  __typename ... on ScheduleStateResult { scheduleState { id status } }
  ... on PythonError { message } } }"""
STOP_SCHEDULE = """mutation($id: String!) { stopRunningSchedule(id: $id) {
  __typename ... on ScheduleStateResult { scheduleState { status } } } }"""
SCHEDULE_TICKS = """query($s: ScheduleSelector!) { scheduleOrError(scheduleSelector: $s) {
  ... on Schedule { scheduleState { status ticks(limit: 10) { status timestamp runIds } } } } }"""
SENSOR_TICKS = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
  ... on Sensor { sensorState { status ticks(limit: 10) { status timestamp } } } } }"""


def test_platform_postgres_start_env_stop_keeps_the_data_and_the_address():
    folder = Path(tempfile.mkdtemp(prefix="pytest-postgres-cli-"))  # see tests/fixtures/postgres.py
    server, cli = LocalPostgres(folder), CliRunner()
    try:
        started = cli.invoke(postgres, ["start", "--dir", str(folder)])
        assert started.exit_code == 0, started.output
        conn, info = server.connection(), server.running()
        assert info is not None and f"127.0.0.1:{conn.port}" in started.output
        assert [(ip, port) for ip, port, _ in listening(info["pid"])] == [("127.0.0.1", conn.port)]
        exports = cli.invoke(postgres, ["env", "--dir", str(folder)]).output
        assert exports.splitlines() == [
            "export DAGSTER_PG_HOST=127.0.0.1",
            f"export DAGSTER_PG_PORT={conn.port}",
            "export DAGSTER_PG_USERNAME=dagster",
            f'export DAGSTER_PG_PASSWORD="$(cat {folder}/password)"',
            "export DAGSTER_PG_DB=dagster",
        ]
        shell = subprocess.run(
            ["bash", "-c", exports + 'echo "$DAGSTER_PG_PASSWORD"'],
            capture_output=True,
            text=True,
            check=True,
        )
        assert shell.stdout.strip() == conn.password
        server.sql("dagster", "CREATE TABLE kept AS SELECT 42 AS answer")

        stopped = cli.invoke(postgres, ["stop", "--dir", str(folder)])
        assert (stopped.exit_code, server.running()) == (0, None), stopped.output
        assert cli.invoke(postgres, ["env", "--dir", str(folder)]).exit_code == 1
        assert cli.invoke(postgres, ["start", "--dir", str(folder)]).exit_code == 0

        assert server.connection().port == conn.port
        assert server.sql("dagster", "SELECT answer FROM kept") == [["42"]]
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_postgres_config_is_the_project_config_with_postgres_storage():
    project = yaml.safe_load((REPO_ROOT / "dagster_home" / "dagster.yaml").read_text())
    postgres = yaml.safe_load(POSTGRES_YAML.read_text())

    assert {k: v for k, v in postgres.items() if k != "storage"} == project
    assert postgres["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_PG_PASSWORD"
    }


@dataclass
class Started:
    pg: DagsterOnPostgres
    instance: dg.DagsterInstance  # the same instance, opened in the test's process
    since: float  # epoch seconds, just before the schedule started
    schedule_state: str  # its InstigationState id (to stop it)
    run_id: str  # the catch-up run of clickstream_raw


def selector_id(instance: dg.DagsterInstance, name: str) -> str:
    """The selector id under which ``name``'s (sensor or schedule) ticks are stored."""
    states = [s for s in instance.all_instigator_state() if s.instigator_name == name]
    assert len(states) == 1, states
    return states[0].selector_id


@pytest.mark.spark
@pytest.mark.kafka
def test_on_postgres_a_stream_run_the_health_sensor_and_a_schedule_are_stored_in_postgres(
    dagster_on_postgres: DagsterOnPostgres, kafka_broker: str, monkeypatch: pytest.MonkeyPatch
):
    """One `dagster dev` for the three (each part waits on its own observable event): the run and
    the schedule's first tick go on together, and the sensor ticks all along."""
    pg = dagster_on_postgres
    create_topics(kafka_broker, {pg.topic: 1})
    produce_events(kafka_broker, pg.topic, [*U1_SHOPPING, U1_SHOPPING[0]])  # 7 records
    since = time.time()
    state = graphql(pg, START_SCHEDULE, s={**REPOSITORY, "scheduleName": SCHEDULE})["startSchedule"]
    assert state["__typename"] == "ScheduleStateResult", state
    run_id = pg.ui.client.submit_job_execution(
        JOB, run_config={"ops": {f"run_{JOB}": {"config": {"mode": "catch_up"}}}}
    )
    for name, value in pg.database.dagster_env().items():  # what the yaml reads when loaded
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.from_config(str(pg.ui.home)) as instance:
        started = Started(pg, instance, since, state["scheduleState"]["id"], run_id)
        try:
            the_schedule_ticks_and_its_run_waits_in_the_queue(started)
        finally:
            graphql(pg, STOP_SCHEDULE, id=started.schedule_state)  # one tick is enough
        the_stream_run_succeeds_with_its_event_log_in_postgres(started)
        the_health_sensor_ticks_and_reports_its_checks_into_postgres(started)


def the_schedule_ticks_and_its_run_waits_in_the_queue(started: Started) -> None:
    pg, instance = started.pg, started.instance

    def ticks() -> list[dict[str, Any]]:
        data = graphql(pg, SCHEDULE_TICKS, s={**REPOSITORY, "scheduleName": SCHEDULE})
        return list(data["scheduleOrError"]["scheduleState"]["ticks"])

    def launched() -> list[dict[str, Any]]:
        return [t for t in ticks() if t["status"] == "SUCCESS" and t["timestamp"] > started.since]

    tick = wait_for(
        launched, 150, f"a tick of {SCHEDULE} that launched a run", every=2, show=ticks
    )[-1]
    (run_id,) = tick["runIds"]

    run = instance.get_run_by_id(run_id)
    assert run is not None
    assert (run.job_name, run.tags["dagster/schedule_name"]) == ("stream_health_check", SCHEDULE)
    assert run.status == DagsterRunStatus.QUEUED  # held by the fixture's tag limit: no JVM
    pg.ui.client.terminate_run(run_id)
    assert pg.ui.client.get_run_status(run_id) == DagsterRunStatus.CANCELED
    stored = pg.sql(
        f"SELECT status, count(*) FROM job_ticks WHERE type = 'SCHEDULE' AND "
        f"selector_id = '{selector_id(instance, SCHEDULE)}' GROUP BY status"
    )
    assert ["SUCCESS", "1"] in stored, stored
    assert pg.sql(f"SELECT pipeline_name, status FROM runs WHERE run_id = '{run_id}'") == [
        ["stream_health_check", "CANCELED"]
    ]


def the_stream_run_succeeds_with_its_event_log_in_postgres(started: Started) -> None:
    pg, instance, client = started.pg, started.instance, started.pg.ui.client
    status = wait_for(
        lambda: (
            client.get_run_status(started.run_id) in ENDED and client.get_run_status(started.run_id)
        ),
        300,
        f"the {JOB} run to end",
        every=2,
    )
    logs = instance.all_logs(started.run_id)
    assert status == DagsterRunStatus.SUCCESS, [e.user_message for e in logs][-10:]

    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert "All streams done: clickstream_raw 1 batch" in [e.user_message for e in logs]
    done = instance.get_latest_materialization_event(dg.AssetKey("clickstream_raw"))
    assert done is not None and done.run_id == started.run_id
    assert done.asset_materialization is not None
    assert done.asset_materialization.metadata["rows_read_in_run"].value == 7
    assert pg.sql(f"SELECT status FROM runs WHERE run_id = '{started.run_id}'") == [["SUCCESS"]]
    # Engine events may still be appended after the run's end: count the ones that mark it.
    kinds = [
        DagsterEventType.ASSET_MATERIALIZATION,
        DagsterEventType.STEP_SUCCESS,
        DagsterEventType.RUN_SUCCESS,
    ]
    stored = pg.sql(
        f"SELECT dagster_event_type, count(*) FROM event_logs WHERE run_id = "
        f"'{started.run_id}' AND dagster_event_type IN "
        f"({', '.join(repr(k.value) for k in kinds)}) GROUP BY 1"
    )
    assert {kind: int(n) for kind, n in stored} == {k.value: 1 for k in kinds} | {
        DagsterEventType.ASSET_MATERIALIZATION.value: 2  # the streams started, and stopped
    }


def the_health_sensor_ticks_and_reports_its_checks_into_postgres(started: Started) -> None:
    pg, instance = started.pg, started.instance
    wait_for(
        lambda: sensor_ticks_since(instance, SENSOR, started.since) >= 2,
        90,
        f"two ticks of {SENSOR}",
    )

    data = graphql(pg, SENSOR_TICKS, s={**REPOSITORY, "sensorName": SENSOR})
    state = data["sensorOrError"]["sensorState"]
    assert state["status"] == "RUNNING"
    stored = pg.sql(
        f"SELECT count(*) FROM job_ticks WHERE type = 'SENSOR' AND "
        f"selector_id = '{selector_id(instance, SENSOR)}'"
    )
    assert int(stored[0][0]) >= 2 and state["ticks"]
    liveness = wait_for(
        lambda: latest_check(instance, "clickstream_raw", "liveness"),
        60,
        "the sensor's liveness result for clickstream_raw",
    )
    assert liveness.asset_key == dg.AssetKey("clickstream_raw")
    results = pg.sql(
        "SELECT count(*) FROM asset_check_executions WHERE check_name = 'liveness' "
        f"AND asset_key = '{dg.AssetKey('clickstream_raw').to_string()}'"
    )
    assert int(results[0][0]) >= 1
