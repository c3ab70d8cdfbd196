"""Judgements about the state store: snapshots, partition folders, partition count, provider.

Spark keeps a checkpoint's partition count and state store provider over what is configured, so
these compare what the checkpoint recorded with what the platform configures now.
"""

from __future__ import annotations

from platform_pipelines.core.verdict import Verdict, failed, passed, warned
from platform_pipelines.health.checkpoint.expectations import (
    PROVIDER_CLASS,
    SHUFFLE_PARTITIONS,
    CheckpointExpectations,
)
from platform_pipelines.health.checkpoint.files import as_int
from platform_pipelines.health.checkpoint.model import (
    CheckpointFacts,
    OperatorFacts,
    missing_between,
)
from platform_pipelines.health.checkpoint.text import id_list, listed, short_name


def judge_snapshots(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """A store far past its newest snapshot makes restarts replay many changelogs."""
    check = "checkpoint_snapshots"
    stores = facts.stores
    lagging = [s for s in stores if s.snapshot_lag > expected.snapshot_lag_warn]
    worst = max((s.snapshot_lag for s in stores), default=0)
    evidence = {"max_snapshot_lag": worst, "lagging_stores": len(lagging)}
    if not stores:
        return passed(check, "no state snapshots to take", evidence)
    if lagging:
        summary = (
            f"{len(lagging)} of {len(stores)} state stores are up to {worst} versions past their "
            f"newest snapshot ({listed(s.path for s in lagging)}; warning above "
            f"{expected.snapshot_lag_warn})"
        )
        remedy = (
            "State snapshots are not being written, so a restart replays that many changelogs: "
            "let runs outlast the maintenance interval (60 s) and look for snapshot upload errors "
            "in the executor logs."
        )
        return warned(check, summary, remedy, evidence)
    return passed(
        check, f"state stores at most {worst} versions past their newest snapshot", evidence
    )


def judge_partition_dirs(facts: CheckpointFacts) -> Verdict:
    """Each operator must have one folder per state partition the checkpoint was created with."""
    check = "checkpoint_state_partitions"
    recorded = as_int(facts.checkpoint_conf.get(SHUFFLE_PARTITIONS))
    evidence: dict[str, int | float | str] = {
        "checkpoint_partitions": recorded if recorded is not None else -1
    }
    evidence.update(
        {
            f"partition_dirs_op{op.operator_id}": len(op.partitions)
            for op in facts.operators.values()
        }
    )
    if not facts.operators:
        return passed(check, "stateless", evidence)
    if not facts.commits:
        return passed(check, "no committed state yet", evidence)
    if recorded is None:
        return passed(check, f"{SHUFFLE_PARTITIONS} is not recorded in the checkpoint", evidence)
    problems = [p for op in facts.operators.values() if (p := _partition_problem(op, recorded))]
    if problems:
        remedy = (
            f"The state does not match the {recorded} partitions this checkpoint was created with "
            "(folders lost or copied in): restore the stream's newest savepoint (`platform savepoint restore`) or rebuild it on a new checkpoint (`platform reprocess STREAM`)."
        )
        return failed(check, "; ".join(problems), remedy, evidence)
    return passed(check, f"{recorded} state partitions per operator", evidence)


def _partition_problem(op: OperatorFacts, recorded: int) -> str:
    """What is wrong with one operator's partition folders ("" when they match ``recorded``)."""
    absent = missing_between(op.partitions, 0, recorded - 1)
    extra = [p for p in op.partitions if p >= recorded]
    details = [f"missing {absent}"] if absent.count else []
    details += [f"unexpected {id_list(extra)}"] if extra else []
    if op.metadata_partitions not in (None, recorded):
        details.append(f"its metadata records {op.metadata_partitions}")
    if not details:
        return ""
    head = f"operator {op.operator_id} has {len(op.partitions)} partition folders, the checkpoint records {recorded}"
    return f"{head} ({', '.join(details)})"


def judge_partition_config(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """The checkpoint keeps its own partition count: a different configured one is not used."""
    check = "checkpoint_partition_config"
    recorded = as_int(facts.checkpoint_conf.get(SHUFFLE_PARTITIONS))
    evidence = {"configured_partitions": expected.state_partitions}
    if recorded is None:
        return passed(check, f"{SHUFFLE_PARTITIONS} is not recorded in the checkpoint", evidence)
    if recorded == expected.state_partitions:
        return passed(check, f"{recorded} state partitions, as configured", evidence)
    if not facts.operators:
        return passed(
            check,
            f"stateless: {recorded} partitions recorded, {expected.state_partitions} configured",
            evidence,
        )
    summary = (
        f"checkpoint was created with {recorded} state partitions but {expected.state_partitions} "
        f"are configured; Spark keeps {recorded} for this stream"
    )
    remedy = (
        f"Keep state_partitions={recorded} for this stream, or rebuild it on a new checkpoint "
        f"(`platform reprocess STREAM`) to use {expected.state_partitions}."
    )
    return warned(check, summary, remedy, evidence)


def judge_provider(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Spark runs a stateful checkpoint on the provider that wrote it, whatever is configured."""
    check = "checkpoint_provider"
    recorded = facts.checkpoint_conf.get(PROVIDER_CLASS)
    evidence = {
        "checkpoint_provider": short_name(recorded or ""),
        "configured_provider": short_name(expected.state_provider),
    }
    if recorded is None or recorded == expected.state_provider:
        return passed(
            check, f"state store provider {short_name(expected.state_provider)}", evidence
        )
    if not facts.operators:
        return passed(
            check, f"stateless: provider {short_name(recorded)} recorded, not used", evidence
        )
    summary = (
        f"checkpoint state was written by {short_name(recorded)} but {short_name(expected.state_provider)} "
        "is configured; Spark keeps the checkpoint's provider, so this stream does not run on the "
        "configured store"
    )
    remedy = (
        f"Rebuild the stream on a new checkpoint (`platform reprocess STREAM`) to move it to "
        f"{short_name(expected.state_provider)}, or configure {short_name(recorded)} for it."
    )
    return failed(check, summary, remedy, evidence)
