"""The ``state_snapshots`` asset and its ``state_snapshot`` job: what each stateful stream's state
holds per key, written to a Delta table the UI can browse, with the numbers plotted per run."""

from collections.abc import Sequence
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field, field_validator

from platform_pipelines.core.state_view import StateReport, table_rows
from platform_pipelines.core.units import size
from platform_pipelines.defs.assets import column_schema
from platform_pipelines.defs.jobs import FAILURE_TAG
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.state_snapshots import SNAPSHOT, SNAPSHOT_TABLE, write_snapshot
from platform_pipelines.lakehouse.state_source import StateUnavailable
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.declare import StatefulStream, Stream, asset_key

JOB = "state_snapshot"


class StateSnapshotConfig(dg.Config):
    """Launch config of the state_snapshot job."""

    stream: str = Field(
        default="",
        description="The stateful stream whose state to snapshot, e.g. user_sessions; empty: "
        "every stateful stream.",
    )
    top: int = Field(
        default=1000,
        description="Write the N biggest keys of each stream (0: every key). The numbers "
        "(keys, total_bytes, biggest_key_bytes) always count every key.",
    )

    @field_validator("top")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(
                f"top is {value}; set it to 0 (every key) or a whole number of keys >= 1."
            )
        return value

    def chosen(self, streams: Sequence[StatefulStream]) -> list[StatefulStream]:
        """The streams to snapshot; a name that is not a stateful stream is refused."""
        if not self.stream:
            return list(streams)
        named = [s for s in streams if s.name == self.stream]
        if not named:
            names = ", ".join(s.name for s in streams)
            raise ValueError(
                f"stream: {self.stream!r} is not a stateful stream; use one of: {names} (or "
                "leave it empty for every stateful stream)."
            )
        return named


def _markdown(report: StateReport) -> str:
    cells = [[c.replace("|", "\\|") for c in row] for row in table_rows(report, width=80)]
    rows = [f"| `{key}` | {n} | {timers} | `{value}` |" for key, n, timers, value in cells]
    head = f"**{report.stream}** at batch {report.batch_id}, biggest keys:\n\n"
    return head + "\n".join(["| key | bytes | timers (UTC) | value |", "|---|---|---|---|", *rows])


def _metadata(reports: Sequence[StateReport], table: str) -> dict[str, dg.MetadataValue]:
    """Numbers over every key of every snapshotted stream (plotted per snapshot), and each
    stream's biggest keys as a table."""
    totals = [r.totals for r in reports]
    metadata: dict[str, dg.MetadataValue] = {
        "keys": dg.MetadataValue.int(sum(t.keys for t in totals)),
        "total_bytes": dg.MetadataValue.int(sum(t.total_bytes for t in totals)),
        "biggest_key_bytes": dg.MetadataValue.int(
            max((t.biggest_key_bytes for t in totals), default=0)
        ),
        "streams": dg.MetadataValue.text(", ".join(r.stream for r in reports)),
        "table_path": dg.MetadataValue.path(table),
    }
    for report in reports:
        metadata[f"biggest_keys_{report.stream}"] = dg.MetadataValue.md(_markdown(report))
    return metadata


def state_definitions(streams: Sequence[Stream], settings: PlatformSettings) -> dg.Definitions:
    """The ``state_snapshots`` asset (one row per key per snapshot) and the ``state_snapshot``
    job that materializes it; ``settings`` are the deployment's (the lakehouse is a resource)."""
    stateful = [s for s in streams if isinstance(s, StatefulStream)]
    table = Lakehouse(settings.lakehouse_dir).table(SNAPSHOT_TABLE)

    @dg.asset(
        key=SNAPSHOT_TABLE,
        deps=[asset_key(s) for s in stateful],
        kinds={"spark", "delta"},
        group_name="platform",
        metadata={
            "dagster/column_schema": column_schema(SNAPSHOT),
            "table_path": dg.MetadataValue.path(str(table)),
        },
        tags={"platform/kind": "state"},
    )
    def state_snapshots(
        context: dg.AssetExecutionContext,
        config: StateSnapshotConfig,
        spark: SparkStreamingResource,
        lakehouse: LakehouseResource,
    ) -> dg.MaterializeResult:
        """What each stateful stream's state holds, per key, read from its checkpoint (the latest
        committed batch; running streams too): stream, snapshot time, batch id, key, the decoded
        value as JSON, the next timer and the key's bytes. Plots keys and bytes per snapshot."""
        try:
            chosen = config.chosen(stateful)
        except ValueError as error:
            raise dg.Failure(
                description=str(error),
                metadata={FAILURE_TAG: dg.MetadataValue.text("invalid_config")},
            ) from None
        lake, session, at = lakehouse.lakehouse(), spark.get_session(), datetime.now(UTC)
        reports: list[StateReport] = []
        for stream in chosen:
            try:
                report = write_snapshot(session, lake, stream.name, at, top=config.top)
            except StateUnavailable as nothing:
                if config.stream:  # asked for by name: say why there is nothing
                    raise dg.Failure(description=str(nothing)) from None
                context.log.warning(f"{stream.name}: not snapshotted: {nothing}")
                continue
            totals = report.totals
            context.log.info(
                f"{stream.name} at batch {report.batch_id}: {totals.keys:,} keys, "
                f"{size(totals.total_bytes)}, biggest {size(totals.biggest_key_bytes)}"
            )
            reports.append(report)
        return dg.MaterializeResult(metadata=_metadata(reports, str(lake.table(SNAPSHOT_TABLE))))

    job = dg.define_asset_job(
        JOB,
        selection=[state_snapshots],
        description="Snapshots the state of the stateful streams (one, or all) into "
        "state_snapshots: per key its value, timer and bytes. Running streams are read at their "
        "latest committed batch and keep running.",
        tags={"platform/kind": "state"},
    )
    return dg.Definitions(assets=[state_snapshots], jobs=[job])
