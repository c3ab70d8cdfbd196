"""Verdicts and numbers turned into the Dagster events the UI shows."""

from __future__ import annotations

import dagster as dg

from platform_pipelines.core.verdict import Status, Verdict
from platform_pipelines.health.evaluate import StreamHealth


def _metadata(verdict: Verdict) -> dict[str, dg.MetadataValue]:
    metadata: dict[str, dg.MetadataValue] = {}
    for key, value in verdict.evidence.items():
        if isinstance(value, (bool, str)):
            metadata[key] = dg.MetadataValue.text(str(value))
        elif isinstance(value, int):
            metadata[key] = dg.MetadataValue.int(value)
        else:
            metadata[key] = dg.MetadataValue.float(float(value))
    if verdict.remedy:
        metadata["remedy"] = dg.MetadataValue.text(verdict.remedy)
    return metadata


def _severity(verdict: Verdict) -> dg.AssetCheckSeverity:
    warn = verdict.status is Status.WARN
    return dg.AssetCheckSeverity.WARN if warn else dg.AssetCheckSeverity.ERROR


def check_evaluation(asset: str, verdict: Verdict) -> dg.AssetCheckEvaluation:
    """A runless check result (reported by a sensor)."""
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(asset),
        check_name=verdict.check,
        passed=verdict.passed,
        severity=_severity(verdict),
        description=verdict.line(),
        metadata=_metadata(verdict),
    )


def check_result(asset: str, verdict: Verdict) -> dg.AssetCheckResult:
    """A check result inside a run (the health-check job)."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=verdict.check,
        passed=verdict.passed,
        severity=_severity(verdict),
        description=verdict.line(),
        metadata=_metadata(verdict),
    )


def observation(health: StreamHealth, job: str | None) -> dg.AssetObservation:
    """The stream's curated numbers (plotted on the asset page) and who runs it now."""
    metadata: dict[str, dg.MetadataValue] = {
        name: dg.MetadataValue.int(value)
        if isinstance(value, int)
        else dg.MetadataValue.float(value)
        for name, value in health.metrics.items()
    }
    run = health.run
    metadata["running"] = dg.MetadataValue.bool(run.status == "running")
    metadata["run_state"] = dg.MetadataValue.text(f"{run.status}: {run.detail}")
    if run.run_id:
        metadata["run"] = dg.MetadataValue.dagster_run(run.run_id)
    if job:
        metadata["job"] = dg.MetadataValue.text(job)
    metadata["health"] = dg.MetadataValue.text(health.status.value)
    return dg.AssetObservation(
        asset_key=health.asset,
        metadata=metadata,
        description=f"Stream {health.stream.name}: {run.status} ({run.detail}); health "
        f"{health.status.value}",
    )
