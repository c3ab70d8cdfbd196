"""The launchpad cannot inject code or paths: a run config that sets a JVM option, a jar, a class
path, a Python executable, a file-system root or a network setting is refused at submission,
through the webserver's GraphQL, before any run process or JVM starts."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster_graphql import DagsterGraphQLClientError

from tests.unit.test_spark_policy import FORBIDDEN

pytestmark = [pytest.mark.dagster]

JOB = "stream_service_status"


def test_every_forbidden_spark_setting_is_refused_through_graphql_before_a_jvm_starts(
    dagster_ui,
):
    with dg.DagsterInstance.from_config(str(dagster_ui.home)) as instance:
        for key, instead in FORBIDDEN.items():
            config = {"resources": {"spark": {"config": {"spark_conf": {key: "-javaagent:x"}}}}}
            with pytest.raises(DagsterGraphQLClientError) as refusal:
                dagster_ui.client.submit_job_execution(JOB, run_config=config)
            message = str(refusal.value)
            assert f"resources.spark.config.spark_conf: {key!r} is refused" in message
            assert instead in message, message

        runs = instance.get_runs(filters=dg.RunsFilter(job_name=JOB))
        assert len(runs) == len(FORBIDDEN)
        for run in runs:
            # Dagster marks a run whose submission raised as failed.
            assert run.status is dg.DagsterRunStatus.FAILURE
            assert run.tags["platform/refused"] == "true"
            # Never started: no run worker, no step, so no SparkSession and no JVM.
            events = {
                e.dagster_event_type for e in instance.all_logs(run.run_id) if e.dagster_event
            }
            assert dg.DagsterEventType.RUN_START not in events
            assert dg.DagsterEventType.STEP_START not in events


def test_the_lakehouse_root_and_kafka_address_are_not_run_config(dagster_ui):
    for resource, field in (("lakehouse", "root"), ("kafka", "bootstrap_servers")):
        config = {"resources": {resource: {"config": {field: "/etc"}}}}
        with pytest.raises(DagsterGraphQLClientError) as refusal:
            dagster_ui.client.submit_job_execution(JOB, run_config=config)
        # Dagster's own config validation: the field does not exist.
        assert f'Received unexpected config entry "{field}"' in str(refusal.value)
