"""The ``reprocess`` job: ``platform reprocess`` from the Dagster launchpad (``runtime.reprocess``)."""

from collections.abc import Sequence
from enum import Enum

import dagster as dg
from pydantic import Field

from platform_pipelines.core.times import instant_ms
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.runtime.lock import CheckpointBusyError
from platform_pipelines.runtime.reprocess import ReprocessRefused, load_plan, plan_reprocess
from platform_pipelines.runtime.reprocess_rebuild import rebuild
from platform_pipelines.runtime.reprocess_switch import switch
from platform_pipelines.streams.declare import Stream
from platform_pipelines.streams.registry import StreamRegistry

REPROCESS_JOB = "reprocess"


class Start(Enum):
    earliest = "earliest"
    timestamp = "timestamp"
    bronze = "bronze"


class Downstream(Enum):
    notify = "notify"
    reprocess = "reprocess"


class ReprocessConfig(dg.Config):
    """Launch config of the reprocess job."""

    stream: str = Field(description="The stream to rebuild, e.g. user_sessions.")
    start: Start = Field(
        default=Start.earliest,
        description="earliest: all input still held; timestamp: input from `timestamp` on; "
        "bronze: from the bronze table (Kafka is not read again).",
    )
    timestamp: str | None = Field(
        default=None, description="With start=timestamp: ISO 8601, e.g. 2026-11-23T10:00:00Z."
    )
    downstream: Downstream = Field(
        default=Downstream.notify,
        description="Streams that read a rebuilt table: reprocess them too, or notify (their "
        "next start is refused until they are reprocessed).",
    )
    switch_only: str | None = Field(
        default=None,
        description="The id of a finished rebuild to switch in (after its streams were stopped).",
    )


def _instant(value: str | None) -> int | None:
    try:
        return None if value is None else instant_ms(value)
    except ValueError as error:
        raise ReprocessRefused(f"timestamp: {error}") from None


def reprocess_definitions(streams: Sequence[Stream]) -> dg.Definitions:
    """The reprocess job for the declared ``streams``."""
    registry = StreamRegistry(streams)

    @dg.op(
        name="rebuild_and_switch",
        description="Rebuilds the chosen streams on new checkpoints and table generations while "
        "the current tables serve, then switches to the rebuild (the streams must be stopped).",
    )
    def rebuild_and_switch(
        context: dg.OpExecutionContext,
        config: ReprocessConfig,
        spark: SparkStreamingResource,
        kafka: KafkaResource,
        lakehouse: LakehouseResource,
    ) -> None:
        lake = lakehouse.lakehouse()
        if config.stream not in registry:
            raise dg.Failure(
                f"stream: {config.stream!r} is not declared; use one of: "
                f"{', '.join(registry.names())}."
            )
        try:
            if config.switch_only:
                plan = load_plan(lake, config.switch_only)
            else:
                when = _instant(config.timestamp)
                plan = plan_reprocess(
                    registry, config.stream, config.start.value, config.downstream.value, when
                )
            context.log.info(
                f"Rebuild {plan.rebuild_id}: {', '.join(plan.streams)} from "
                f"{plan.start}; told: {', '.join(plan.told) or 'none'}"
            )
            session = spark.get_session()
            rows: dict[str, int] = {}
            if not config.switch_only:
                rows = rebuild(
                    session,
                    lake,
                    kafka.servers(),
                    registry,
                    plan,
                    lambda s: context.log.info(f"Rebuilding {s}"),
                ).rows
            switched = switch(session, lake, registry, plan)
        except (ReprocessRefused, CheckpointBusyError) as error:
            hint = ""
            if isinstance(error, CheckpointBusyError):
                hint = " Stop the running streams, then launch this job with switch_only set."
            raise dg.Failure(description=f"{error}{hint}") from None
        for name in plan.streams:
            table = registry.get(name).table
            context.log_event(
                dg.AssetMaterialization(
                    asset_key=table,
                    description=f"Rebuilt by reprocess {plan.rebuild_id} (from {plan.start}).",
                    metadata={
                        "rows": dg.MetadataValue.int(rows.get(name, 0)),
                        "generation": dg.MetadataValue.text(switched.tables[table]),
                        "table_path": dg.MetadataValue.path(str(lake.table(table))),
                    },
                )
            )
        for reader in plan.told:
            context.log.warning(
                f"{reader} reads a rebuilt table: its next start is refused until "
                "it is reprocessed."
            )

    @dg.job(
        name=REPROCESS_JOB,
        description="Rebuilds a stream's tables from its input (after a logic fix or a "
        "declaration change) while the current ones keep serving, then switches to them.",
        tags={"platform/kind": "reprocess"},
    )
    def reprocess_job() -> None:
        rebuild_and_switch()

    return dg.Definitions(jobs=[reprocess_job])
