"""The savepoint jobs run from Dagster: config names the field and the fix, results are metadata."""

from __future__ import annotations

import dagster as dg
import pytest

from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.defs.savepoints import SavepointCreateConfig, savepoint_definitions
from platform_pipelines.lakehouse.delta import Lakehouse, batch_tag
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.unit.test_savepoint_manifest import batch, commit
from user_streams.running_count import STREAMS

pytestmark = [pytest.mark.dagster]
RESOURCES = {"lakehouse": LakehouseResource(), "spark": SparkStreamingResource()}


@pytest.fixture
def defs(tmp_path, monkeypatch) -> dg.Definitions:
    """The jobs for key_counts, whose checkpoint (query q1) committed batch 0."""
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    checkpoint = lake.checkpoint("key_counts")
    checkpoint.mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id":"q1"}\n')
    batch(checkpoint, 0)
    commit(lake.table("key_counts"), 0)
    commit(lake.table("key_counts"), 1, batch_tag("key_counts/q1", 0))
    registry = StreamRegistry()
    declare_stream(registry, STREAMS[0])
    jobs = savepoint_definitions(list(registry), get_settings())
    return dg.Definitions.merge(jobs, dg.Definitions(resources=RESOURCES))  # as the root does


def launch(defs: dg.Definitions, job: str, op: str, config: dict) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(job).execute_in_process(
        run_config={"ops": {op: {"config": config}}},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def test_a_savepoint_is_taken_and_restored_from_dagster_with_its_numbers(defs):
    created = launch(
        defs, "savepoint_create", "create_savepoint", {"stream": "key_counts", "name": "before"}
    )
    restored = launch(defs, "savepoint_restore", "restore_savepoint", {"stream": "key_counts"})

    assert created.success and restored.success
    (observed,) = [
        e.event_specific_data.asset_observation  # type: ignore[union-attr]
        for e in created.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    ]
    assert observed.asset_key == dg.AssetKey("key_counts")
    assert {k: observed.metadata[k].value for k in ("batch", "key_counts_version")} == {
        "batch": 0,
        "key_counts_version": 1,
    }
    (materialized,) = restored.asset_materializations_for_node("restore_savepoint")
    assert materialized.metadata["savepoint"].value == "before"
    assert "recomputes from batch 1" in (materialized.description or "")
    assert all(
        defs.resolve_job_def(j).description for j in ("savepoint_create", "savepoint_restore")
    )


def test_a_bad_launch_names_the_field_and_the_fix(defs):
    unknown = launch(defs, "savepoint_create", "create_savepoint", {"stream": "key_count"})
    missing = launch(
        defs, "savepoint_restore", "restore_savepoint", {"stream": "key_counts", "name": "typo"}
    )

    assert (
        "stream: 'key_count' is not a declared stream; use one of: key_events_raw, key_counts"
        in (
            unknown.failure_data_for_node("create_savepoint").error.message  # type: ignore[union-attr]
        )
    )
    assert "has no savepoint; take one with `platform savepoint create key_counts`" in (
        missing.failure_data_for_node("restore_savepoint").error.message  # type: ignore[union-attr]
    )
    with pytest.raises(ValueError, match=r"name: '\.\./x' is not a valid savepoint name"):
        SavepointCreateConfig(stream="key_counts", name="../x")
