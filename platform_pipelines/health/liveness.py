"""Is the query alive when its owner says it should be? (check ``liveness``)"""

from __future__ import annotations

from collections.abc import Sequence

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import batch_id, batch_seconds
from platform_pipelines.core.units import duration
from platform_pipelines.core.verdict import Verdict, failed, passed, warned
from platform_pipelines.health.history import batches, by_time, progress_of
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy
from platform_pipelines.health.runs import RunState

LIVENESS = "liveness"


def stale_after_seconds(records: Sequence[ProgressRecord], policy: HealthPolicy) -> float:
    """How long a running query may go without recording anything.

    ``max(stale_after_triggers * interval, min_stale_seconds)``, where ``interval`` is the newest
    record's trigger interval or, when longer, the longest batch among the last
    ``window_batches`` (a query whose batches outlast their trigger runs them back to back, and
    Spark records a batch only when it ends).
    """
    ordered = by_time(records)
    trigger = ordered[-1].trigger_seconds if ordered else 0.0
    longest = max(
        (batch_seconds(progress_of(r)) for r in batches(ordered)[-policy.window_batches :]),
        default=0.0,
    )
    return max(policy.stale_after_triggers * max(trigger, longest), policy.min_stale_seconds)


def judge_liveness(
    records: Sequence[ProgressRecord],
    run: RunState,
    now: float,
    policy: HealthPolicy = DEFAULT_POLICY,
    cause: str | None = None,
) -> Verdict:
    """Is the query alive when its owner says it should be?

    In order:

    * the run failed: fail, with the run's detail in the summary;
    * the run is stopped, cancelled or never ran: pass, ``not running: <detail>``;
    * the run is running but waits for the Kafka topic its input needs (``RunState.waiting_for``):
      warn, with the command that creates the topic (the run starts the stream by itself once
      the topic exists);
    * the run is running and
        * nothing was recorded yet: warn (the query never reported starting);
        * the newest record is ``terminated`` with an ``error_class``: fail naming it;
        * the newest record is a clean ``terminated``: pass while it is younger than the stale
          limit (the run is finishing, or between its catch-up and continuous phases), warn after;
        * the newest record is older than ``stale_after_seconds``: fail ``no progress for N``,
          naming ``cause`` when the caller knows one (an unreachable broker) instead of guessing;
        * else pass with the age of the last batch.

    Evidence: ``age_seconds`` (of the newest record), ``stale_after_seconds``,
    ``trigger_seconds`` and, once there is a batch, ``last_batch_age_seconds``/``last_batch_id``.
    """
    if run.status == "failed":
        return failed(
            LIVENESS,
            f"run failed: {run.detail}" if run.detail else "run failed",
            "Read the run's error, fix its cause and launch the stream again.",
        )
    if run.status != "running":
        return passed(LIVENESS, f"not running: {run.detail or run.status.replace('_', ' ')}")
    ordered = by_time(records)
    if run.waiting_for:
        return _waiting(run.waiting_for, ordered, now)
    if not ordered:
        return warned(
            LIVENESS,
            "the run is running but the query has recorded nothing yet",
            "Check the run's logs: the query may not have started.",
        )
    newest = ordered[-1]
    limit = stale_after_seconds(ordered, policy)
    # A record written after ``now`` was taken (the run writes while its records are read) is
    # as fresh as can be, not from the future.
    now = max(now, newest.ts)
    age = now - newest.ts
    evidence: dict[str, float | int | str] = {
        "age_seconds": round(age, 1),
        "stale_after_seconds": round(limit, 1),
        "trigger_seconds": newest.trigger_seconds,
    }
    done = batches(ordered)
    if done:
        evidence["last_batch_age_seconds"] = round(now - done[-1].ts, 1)
        evidence["last_batch_id"] = batch_id(progress_of(done[-1]))
    if newest.event == "terminated":
        return _terminated(newest, age, limit, evidence)
    if age > limit:
        if cause:
            return failed(
                LIVENESS,
                f"no progress for {duration(age)}: {cause}",
                "Bring the broker back (or point the stream at one that runs); the "
                "query resumes from its checkpoint.",
                evidence,
            )
        return failed(
            LIVENESS,
            f"no progress for {duration(age)} (trigger every {duration(newest.trigger_seconds)})",
            "The query is hung, starved of cores, or its driver is gone: in the run's Spark UI "
            "(port 4040 or the next free one), a job of this stream that still completes tasks "
            "is slow or starved (give the run more cores or run fewer streams beside it: a "
            "restart throws its work away); otherwise check the run's logs, then restart the run.",
            evidence,
        )
    if done:
        return passed(LIVENESS, f"last batch {duration(now - done[-1].ts)} ago", evidence)
    return passed(LIVENESS, f"running, no batch yet ({newest.event} {duration(age)} ago)", evidence)


def _terminated(
    newest: ProgressRecord, age: float, limit: float, evidence: dict[str, float | int | str]
) -> Verdict:
    if newest.error_class:
        evidence["error_class"] = newest.error_class
        error = f": {newest.error}" if newest.error else ""
        return failed(
            LIVENESS,
            f"query terminated with {newest.error_class}{error}",
            "Fix the cause of the error and restart the run; the checkpoint resumes the stream.",
            evidence,
        )
    if age <= limit:
        return passed(
            LIVENESS, f"query ended cleanly {duration(age)} ago; its run goes on", evidence
        )
    return warned(
        LIVENESS,
        f"query ended {duration(age)} ago but its run still says running",
        "Check the run: its query is gone; stop the run and launch it again.",
        evidence,
    )


def create_topic_command(topic: str) -> str:
    """The command that creates ``topic`` on the broker the platform uses."""
    return f"platform kafka create-topic {topic}"


def _waiting(topic: str, ordered: Sequence[ProgressRecord], now: float) -> Verdict:
    since = next((r.ts for r in reversed(ordered) if r.event == "waiting"), now)
    return warned(
        LIVENESS,
        f"waiting for Kafka topic {topic} to exist (for {duration(now - since)}): the run "
        "starts the stream once it does",
        f"Create the topic with `{create_topic_command(topic)}` (or start the producer that "
        "writes it, if it creates its topics); nothing else is needed.",
        {"waiting_seconds": round(now - since, 1)},
    )
