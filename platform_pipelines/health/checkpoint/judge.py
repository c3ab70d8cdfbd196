"""Judgements over ``CheckpointFacts``: one verdict per concern, combined into the ``checkpoint`` check."""

from __future__ import annotations

from collections.abc import Sequence

from platform_pipelines.core.units import size
from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned
from platform_pipelines.health.checkpoint.expectations import (
    CHECK,
    CheckpointExpectations,
)
from platform_pipelines.health.checkpoint.judge_state import (
    judge_partition_config,
    judge_partition_dirs,
    judge_provider,
    judge_snapshots,
)
from platform_pipelines.health.checkpoint.model import (
    CheckpointFacts,
    Missing,
)
from platform_pipelines.health.checkpoint.text import (
    gaps_between,
    id_list,
    listed,
    plural,
)


def judge_checkpoint(
    facts: CheckpointFacts, expected: CheckpointExpectations = CheckpointExpectations()
) -> list[Verdict]:
    """Every judgement of one checkpoint, each a Verdict with its numbers (see the module doc)."""
    if not facts.exists:
        return [passed("checkpoint_folder", "no checkpoint yet", {"checkpoint_exists": 0})]
    return [
        _judge_batches(facts),
        _judge_files(facts),
        _judge_retention(facts, expected),
        _judge_size(facts, expected),
        judge_snapshots(facts, expected),
        judge_partition_dirs(facts),
        judge_partition_config(facts, expected),
        judge_provider(facts, expected),
    ]


def checkpoint_verdict(
    facts: CheckpointFacts,
    expected: CheckpointExpectations = CheckpointExpectations(),
    more: Sequence[Verdict] = (),
) -> Verdict:
    """All checkpoint judgements, and ``more`` (judged with what lies outside the folder, such
    as its upstream table), as one Verdict named ``checkpoint``."""
    return combine(CHECK, [*judge_checkpoint(facts, expected), *more])


def _judge_batches(facts: CheckpointFacts) -> Verdict:
    """Offsets and commits must pair up: at most the newest batch may lack its commit, no gaps."""
    check = "checkpoint_batches"
    offsets, commits = facts.offsets, facts.commits
    committed, first_commit = set(commits), commits[0] if commits else 0
    # offsets older than the oldest commit left: purged out of the commit log, nothing to judge
    uncommitted = [b for b in offsets if b not in committed and b >= first_commit]
    offset_gaps, commit_gaps = gaps_between(offsets), gaps_between(commits)
    evidence = {
        "latest_offset_batch": offsets[-1] if offsets else -1,
        "latest_committed_batch": commits[-1] if commits else -1,
        "uncommitted_batches": len(uncommitted),
        "offset_gaps": offset_gaps.count,
        "commit_gaps": commit_gaps.count,
    }
    problems = [
        *_uncommitted_problem(uncommitted, commits),
        *_gap_problem("offsets", offset_gaps, offsets),
        *_gap_problem("commits", commit_gaps, commits),
        *_early_commit_problem(offsets, commits),
    ]
    if problems:
        remedies = dict.fromkeys(r for _, r in problems)  # once each, in order
        return failed(check, "; ".join(s for s, _ in problems), " ".join(remedies), evidence)
    if not offsets:
        return passed(check, "no batch planned yet", evidence)
    in_flight = f", batch {uncommitted[0]} in flight" if uncommitted else ""
    last = f"last committed {commits[-1]}" if commits else "none committed yet"
    return passed(check, f"batches {offsets[0]}-{offsets[-1]}, {last}{in_flight}", evidence)


def _uncommitted_problem(uncommitted: list[int], commits: list[int]) -> list[tuple[str, str]]:
    if len(uncommitted) <= 1:
        return []
    summary = f"{len(uncommitted)} batches ({id_list(uncommitted)}) have offsets but no commit"
    last = commits[-1] if commits else -1
    if all(b > last for b in uncommitted):
        skipped = id_list(uncommitted[:-1])
        remedy = (
            f"On restart Spark would count batch {skipped} as done without running it: stop the "
            f"stream and delete the offsets files newer than the last commit ({last}): "
            f"{id_list(uncommitted)}, so Spark plans those batches again; or rebuild the stream on a new checkpoint (`platform reprocess STREAM`)."
        )
    else:
        remedy = "commits/ lost files: restore the stream's newest savepoint (`platform savepoint restore`) or rebuild it on a new checkpoint (`platform reprocess STREAM`)."
    return [(summary, remedy)]


def _early_commit_problem(offsets: list[int], commits: list[int]) -> list[tuple[str, str]]:
    """Commits newer than every offsets file: Spark writes offsets first, so those were lost."""
    early = [c for c in commits if not offsets or c > offsets[-1]]
    if not early:
        return []
    summary = f"{plural(len(early), 'batch')} ({id_list(early)}) committed without an offsets file"
    return [
        (
            summary,
            "offsets/ lost files: restore the stream's newest savepoint (`platform savepoint restore`) or rebuild it on a new checkpoint (`platform reprocess STREAM`).",
        )
    ]


def _gap_problem(log: str, gaps: Missing, ids: list[int]) -> list[tuple[str, str]]:
    if not gaps.count:
        return []
    summary = (
        f"{log}/ is missing {plural(gaps.count, 'batch')} ({gaps}) between {ids[0]} and {ids[-1]}"
    )
    return [
        (
            summary,
            f"{log}/ lost files: restore the stream's newest savepoint (`platform savepoint restore`) or rebuild it on a new checkpoint (`platform reprocess STREAM`).",
        )
    ]


def _judge_files(facts: CheckpointFacts) -> Verdict:
    """Every file Spark reads back must be whole, and every store must have the changelogs its
    newest version is rebuilt from."""
    check = "checkpoint_files"
    damaged = facts.all_damaged
    broken = [s for s in facts.stores if s.missing_changelogs.count]
    evidence = {"damaged_files": len(damaged), "stores_missing_versions": len(broken)}
    problems = []
    if damaged:
        problems.append(f"{plural(len(damaged), 'damaged file')}: {listed(damaged)}")
    for store in broken[:3]:
        problems.append(
            f"{store.path} lacks changelog {store.missing_changelogs} needed to rebuild version "
            f"{store.newest_version} from snapshot {store.newest_snapshot}"
        )
    if problems:
        remedy = (
            "Spark cannot load state or batches from these files: stop the stream, then restore "
            "its newest savepoint (`platform savepoint restore`) or rebuild it on a new "
            "checkpoint (`platform reprocess STREAM`)."
        )
        return failed(check, "; ".join(problems), remedy, evidence)
    return passed(check, f"{facts.file_count} files readable", evidence)


def _judge_retention(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Far more batches or state versions than Spark keeps means old ones are not deleted."""
    check = "checkpoint_retention"
    state_versions = max((s.retained_versions for s in facts.stores), default=0)
    evidence = {
        "retained_offsets": len(facts.offsets),
        "retained_commits": len(facts.commits),
        "retained_state_versions": state_versions,
        "min_batches_to_retain": expected.min_batches_to_retain,
    }
    problems = []
    log_limit, state_limit = expected.max_retained_batches, expected.max_retained_state_versions
    if max(len(facts.offsets), len(facts.commits)) > log_limit:
        problems.append(
            f"{len(facts.offsets)} offsets and {len(facts.commits)} commits kept (Spark keeps "
            f"{expected.min_batches_to_retain + 1}, warning above {log_limit})"
        )
    if state_versions > state_limit:
        problems.append(
            f"a state store keeps {state_versions} versions (warning above {state_limit})"
        )
    if problems:
        remedy = (
            "Old batches are not being deleted: check spark.sql.streaming.minBatchesToRetain "
            f"(expected {expected.min_batches_to_retain}) and that runs last longer than the state "
            "maintenance interval (spark.sql.streaming.stateStore.maintenanceInterval, 60 s), "
            "which deletes old state versions."
        )
        return warned(check, "; ".join(problems), remedy, evidence)
    kept = f", up to {state_versions} state versions" if facts.stores else ""
    return passed(check, f"{len(facts.offsets)} batches kept{kept}", evidence)


def _judge_size(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Size is evidence; only a checkpoint or per-batch write beyond the configured maxima warns."""
    check = "checkpoint_size"
    per_batch = facts.bytes_per_batch
    evidence = {
        "total_bytes": facts.total_bytes,
        "file_count": facts.file_count,
        "state_bytes": facts.state_bytes,
        "bytes_per_batch": per_batch,
    }
    summary = (
        f"{size(facts.total_bytes)} in {facts.file_count} files "
        f"(state {size(facts.state_bytes)}), about {size(per_batch)} written per batch"
    )
    if facts.total_bytes > expected.max_total_bytes:
        return warned(
            check,
            f"{summary}: over {size(expected.max_total_bytes)}",
            "Find what grows (state/ or offsets/): unbounded state needs a watermark or key_lifetime.",
            evidence,
        )
    if per_batch > expected.max_bytes_per_batch:
        return warned(
            check,
            f"{summary}: over {size(expected.max_bytes_per_batch)} per batch",
            "Each batch rewrites that much state: bound the state (watermark, key_lifetime) or its keys.",
            evidence,
        )
    return passed(check, summary, evidence)
