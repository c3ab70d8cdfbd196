"""When to relaunch a stream whose run failed: exponential backoff, a cap, and reasons to refuse.

Pure decisions over plain numbers and names, so the auto-restart sensor's behaviour is unit-tested.
A failure that can only fail again (the checkpoint is held by another run or damaged, the run's
configuration or a stream declaration is invalid) is never relaunched: ``classify_failure``
says so and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["restart", "wait", "give_up", "refuse"]

# The failure kinds a stream run reports (``platform/failure`` on its failure), and why each can
# only fail again. Anything else (a query that died, a process that vanished) may be transient.
PERMANENT_FAILURES = {
    "checkpoint_busy": "another run holds the stream's checkpoint; relaunching would only be "
    "refused again",
    "checkpoint_damaged": "the checkpoint is damaged; a relaunch would be refused until it is "
    "repaired or reset",
    "invalid_config": "the run's configuration is invalid; the same configuration fails again",
    "declaration_changed": "a stream's key or columns changed since its checkpoint started; it "
    "must be reprocessed (`platform reprocess <stream>`) before it can run again",
    "invalid_declaration": "a stream declaration is invalid; fix the declaration",
}
# Dagster error classes that mean the configuration itself is wrong.
CONFIG_ERRORS = ("DagsterInvalidConfigError", "DagsterTypeCheckDidNotPass", "ValidationError")


def classify_failure(kind: str | None, error_class: str | None = None) -> str | None:
    """Why a failure can only fail again, or None when a relaunch may help.

    Args:
        kind: the ``platform/failure`` the run reported (see ``PERMANENT_FAILURES``).
        error_class: the class name of the run's error, when it reported no kind.
    """
    if kind in PERMANENT_FAILURES:
        return PERMANENT_FAILURES[kind]
    if error_class and any(name in error_class for name in CONFIG_ERRORS):
        return PERMANENT_FAILURES["invalid_config"]
    return None


@dataclass(frozen=True)
class RestartPolicy:
    """Attributes:
    max_attempts: consecutive relaunches of a failing stream before giving up.
    base_delay_seconds: the wait before the first relaunch; doubled for each further one.
    max_delay_seconds: the longest wait between two relaunches.
    healthy_after_seconds: a run that ran this long before failing starts a new count (the
        stream was healthy; this is a new incident, not the same one again).
    """

    max_attempts: int = 5
    base_delay_seconds: float = 30.0
    max_delay_seconds: float = 600.0
    healthy_after_seconds: float = 600.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before relaunch number ``attempt + 1`` (``attempt`` done so far)."""
        return float(min(self.base_delay_seconds * 2**attempt, self.max_delay_seconds))


@dataclass(frozen=True)
class Decision:
    action: Action
    attempt: int  # relaunches of this incident so far (before this decision)
    wait_seconds: float = 0.0
    reason: str = ""


def decide(
    attempt: int,
    started_at: float,
    ended_at: float,
    now: float,
    policy: RestartPolicy = RestartPolicy(),
    permanent: str | None = None,
) -> Decision:
    """What to do with a failed run that was relaunch number ``attempt`` of its incident
    (0 for a run a user launched); ``permanent`` is ``classify_failure``'s answer."""
    if permanent:
        return Decision("refuse", attempt, reason=f"not relaunched: {permanent}")
    if ended_at - started_at >= policy.healthy_after_seconds:
        attempt = 0
    if attempt >= policy.max_attempts:
        return Decision(
            "give_up",
            attempt,
            reason=f"gave up after {attempt} relaunches, each of which failed "
            f"(cap: {policy.max_attempts})",
        )
    wait = policy.delay(attempt) - (now - ended_at)
    if wait > 0:
        return Decision("wait", attempt, wait, f"relaunch {attempt + 1} in {wait:.0f} s")
    return Decision(
        "restart", attempt, reason=f"relaunch {attempt + 1} of at most {policy.max_attempts}"
    )


# Query failures that a restart of the query, in the same run, gets past: Spark gave up on
# something of the machine's, not of the data or the code. (What Spark's error says, why it
# passes.) Spark 4.2 starts a Python process for the driver-side setup of a Python
# ``transformWithState`` (its state schemas) at every query start and waits a fixed 10 s for it
# to connect; on a machine busy with other JVMs that wait has run out (CI, 2 cores).
PASSING_FAILURES = (
    (
        "Python worker failed to connect back",
        "a Python process Spark started did not connect back within Spark's fixed 10 s: the "
        "machine was busy",
    ),
)
# Restarts of one stream's query within one run; a failure that returns after these is the
# run's failure, for the auto-restart sensor to judge.
RESTARTS_IN_RUN = 2


def passing_failure(error: str) -> str | None:
    """Why a query that failed with ``error`` may run when restarted in the same run, or None.

    >>> passing_failure("[STREAM_FAILED] Query [id = 1] terminated with exception: Python worker failed to connect back.")
    "a Python process Spark started did not connect back within Spark's fixed 10 s: the machine was busy"
    >>> passing_failure("[DIVIDE_BY_ZERO] Division by zero.") is None
    True
    """
    return next((why for text, why in PASSING_FAILURES if text in error), None)
