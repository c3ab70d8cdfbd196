"""Savepoints from the Dagster UI: ``savepoint_create`` before a risky deploy, ``savepoint_restore``
to go back (``runtime.savepoint_create``, ``runtime.savepoint_restore``). Both need the stream
stopped (its checkpoint lock); a refusal fails the run with the reason and what to do."""

from collections.abc import Sequence

import dagster as dg
from pydantic import Field, ValidationInfo, field_validator

from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.lakehouse.savepoint_manifest import Manifest, savepoint_name_problem
from platform_pipelines.runtime.savepoint_create import create_savepoint
from platform_pipelines.runtime.savepoint_restore import restore_savepoint
from platform_pipelines.runtime.savepoints import SavepointRefused
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.declare import Stream, asset_key

SAVEPOINT_TAG = "platform/savepoint"


def _valid_name(value: str, info: ValidationInfo) -> str:
    problem = savepoint_name_problem(str(info.field_name), value) if value else None
    if problem:
        raise ValueError(f"{problem} Or leave it empty for the default.")
    return value


class SavepointCreateConfig(dg.Config):
    """Launch config of ``savepoint_create``."""

    stream: str = Field(description="The declared stream to save (stopped), e.g. key_counts.")
    name: str = Field(
        default="",
        description="The savepoint's name, e.g. before-deploy-42; empty: the UTC time "
        "(20261122T101500Z).",
    )

    _check = field_validator("name")(_valid_name)


class SavepointRestoreConfig(dg.Config):
    """Launch config of ``savepoint_restore``."""

    stream: str = Field(description="The declared stream to put back (stopped), e.g. key_counts.")
    name: str = Field(default="", description="The savepoint to restore; empty: the newest.")

    _check = field_validator("name")(_valid_name)


def _declared(streams: Sequence[Stream], name: str) -> Stream:
    for stream in streams:
        if stream.name == name:
            return stream
    known = ", ".join(s.name for s in streams)
    raise dg.Failure(description=f"stream: {name!r} is not a declared stream; use one of: {known}.")


def _numbers(manifest: Manifest) -> dict[str, dg.MetadataValue]:
    metadata: dict[str, dg.MetadataValue] = {
        "savepoint": dg.MetadataValue.text(manifest.name),
        "batch": dg.MetadataValue.int(manifest.batch),
        "checkpoint_bytes": dg.MetadataValue.int(manifest.checkpoint_bytes),
    }
    for mark in manifest.own:
        if mark.version is not None:
            metadata[f"{mark.table}_version"] = dg.MetadataValue.int(mark.version)
    return metadata


def savepoint_definitions(streams: Sequence[Stream], settings: PlatformSettings) -> dg.Definitions:
    """The ``savepoint_create`` and ``savepoint_restore`` jobs for ``streams`` (the resources
    ``spark`` and ``lakehouse`` come from the root definitions)."""
    names = ", ".join(s.name for s in streams)
    kept = f"Savepoints are kept in {settings.lakehouse_dir / 'savepoints'}/<stream>/<name>/."

    @dg.op(
        name="create_savepoint",
        tags={SAVEPOINT_TAG: "create"},
        description="Copies the stream's checkpoint (up to its last committed batch) and records "
        f"the Delta version of every table it writes. The stream must be stopped. Streams: {names}. {kept}",
    )
    def create_op(
        context: dg.OpExecutionContext, config: SavepointCreateConfig, lakehouse: LakehouseResource
    ) -> None:
        stream = _declared(streams, config.stream)
        try:
            saved = create_savepoint(lakehouse.lakehouse(), stream, config.name or None)
        except SavepointRefused as refused:
            raise dg.Failure(description=str(refused)) from None
        context.log.info(f"Savepoint {saved.name} of {stream.name}: after batch {saved.batch}.")
        context.log_event(
            dg.AssetObservation(
                asset_key=asset_key(stream),
                metadata=_numbers(saved),
                description=f"Savepoint {saved.name} taken after batch {saved.batch}",
            )
        )

    @dg.op(
        name="restore_savepoint",
        tags={SAVEPOINT_TAG: "restore"},
        description="Puts the stream back to a savepoint: its checkpoint replaced (the current one "
        "archived), its own tables rolled back with Delta RESTORE, its later rows deleted from "
        "the shared tables. The stream must be stopped; refused when another stream reads its "
        "tables or a version was vacuumed.",
    )
    def restore_op(
        context: dg.OpExecutionContext,
        config: SavepointRestoreConfig,
        lakehouse: LakehouseResource,
        spark: SparkStreamingResource,
    ) -> None:
        stream = _declared(streams, config.stream)
        try:
            done = restore_savepoint(
                lakehouse.lakehouse(), stream, streams, spark.get_session, config.name or None
            )
        except SavepointRefused as refused:
            raise dg.Failure(description=str(refused)) from None
        manifest = done.manifest
        for t in done.tables:
            context.log.info(
                f"{t.table}: {t.action}"
                + (f" to version {t.version}" if t.version is not None else f" ({t.rows} rows)")
            )
        metadata = {
            **_numbers(manifest),
            "archived_checkpoint": dg.MetadataValue.path(str(done.archived)),
            "run": dg.MetadataValue.dagster_run(context.run_id),
        }
        context.log_event(
            dg.AssetMaterialization(
                asset_key=asset_key(stream),
                metadata=metadata,
                description=f"Restored to savepoint {manifest.name} (after batch {manifest.batch}); "
                f"the next run recomputes from batch {manifest.batch + 1}",
            )
        )

    @dg.job(
        name="savepoint_create",
        tags={SAVEPOINT_TAG: "create"},
        description="Takes a savepoint of one stopped stream (config: stream, name), e.g. "
        "before a risky deploy; `platform savepoint create` does the same.",
    )
    def create_job() -> None:
        create_op()

    @dg.job(
        name="savepoint_restore",
        tags={SAVEPOINT_TAG: "restore"},
        description="Puts one stopped stream back to a savepoint (config: stream, name); start "
        "the stream afterwards to recompute what came after; `platform savepoint restore` "
        "does the same.",
    )
    def restore_job() -> None:
        restore_op()

    return dg.Definitions(jobs=[create_job, restore_job])
