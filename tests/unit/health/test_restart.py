"""The auto-restart decision: backoff doubles up to a cap, gives up after max attempts, and never
relaunches a failure that can only fail again."""

from __future__ import annotations

import pytest

from platform_pipelines.health.restart import Decision, RestartPolicy, classify_failure, decide

POLICY = RestartPolicy(
    max_attempts=3, base_delay_seconds=10, max_delay_seconds=25, healthy_after_seconds=600
)
BUSY = "another run holds the stream's checkpoint; relaunching would only be refused again"
DAMAGED = "the checkpoint is damaged; a relaunch would be refused until it is repaired or reset"
INVALID_CONFIG = "the run's configuration is invalid; the same configuration fails again"
INVALID_DECLARATION = "a stream declaration is invalid; fix the declaration"


def test_backoff_doubles_and_is_capped():
    assert [POLICY.delay(n) for n in range(4)] == [10, 20, 25, 25]


def test_the_default_backoff_starts_at_half_a_minute_and_stops_at_ten():
    assert [RestartPolicy().delay(n) for n in (0, 1, 4, 5, 10)] == [30, 60, 480, 600, 600]


def test_waits_until_the_backoff_has_passed_then_restarts():
    waiting = decide(attempt=1, started_at=0, ended_at=100, now=105, policy=POLICY)
    due = decide(attempt=1, started_at=0, ended_at=100, now=120, policy=POLICY)

    assert waiting == Decision("wait", 1, 15, "relaunch 2 in 15 s")
    assert due == Decision("restart", 1, reason="relaunch 2 of at most 3")


def test_a_first_failure_is_relaunched_after_the_base_delay():
    assert decide(attempt=0, started_at=0, ended_at=100, now=100, policy=POLICY) == Decision(
        "wait", 0, 10, "relaunch 1 in 10 s"
    )
    assert decide(attempt=0, started_at=0, ended_at=100, now=110, policy=POLICY) == Decision(
        "restart", 0, reason="relaunch 1 of at most 3"
    )


def test_gives_up_after_the_cap_with_a_reason():
    decision = decide(attempt=3, started_at=0, ended_at=100, now=10_000, policy=POLICY)

    assert decision == Decision(
        "give_up", 3, reason="gave up after 3 relaunches, each of which failed (cap: 3)"
    )


def test_a_run_that_was_healthy_for_a_while_starts_a_new_count():
    decision = decide(attempt=3, started_at=0, ended_at=700, now=710, policy=POLICY)

    assert decision == Decision("restart", 0, reason="relaunch 1 of at most 3")


def test_a_run_that_failed_just_before_the_healthy_mark_keeps_its_count():
    decision = decide(attempt=3, started_at=0, ended_at=599, now=10_000, policy=POLICY)

    assert decision.action == "give_up"


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("checkpoint_busy", BUSY),
        ("checkpoint_damaged", DAMAGED),
        ("invalid_config", INVALID_CONFIG),
        ("invalid_declaration", INVALID_DECLARATION),
    ],
)
def test_each_permanent_failure_kind_says_why_it_can_only_fail_again(kind: str, why: str):
    assert classify_failure(kind) == why


@pytest.mark.parametrize(
    "error_class",
    [
        "DagsterInvalidConfigError",
        "dagster._core.errors.DagsterInvalidConfigError",
        "DagsterTypeCheckDidNotPass",
        "pydantic_core._pydantic_core.ValidationError",
    ],
)
def test_a_configuration_error_without_a_kind_is_an_invalid_configuration(error_class: str):
    assert classify_failure(None, error_class) == INVALID_CONFIG


def test_the_reported_kind_wins_over_the_error_class():
    assert classify_failure("checkpoint_busy", "DagsterInvalidConfigError") == BUSY


@pytest.mark.parametrize(
    ("kind", "error_class"),
    [
        ("stream_failed", "StreamFailedError"),  # a query that died may run again
        ("process_gone", None),
        (None, "Py4JJavaError"),
        (None, None),
        ("", ""),
    ],
)
def test_other_failures_may_be_transient(kind: str | None, error_class: str | None):
    assert classify_failure(kind, error_class) is None


def test_a_permanent_failure_is_refused_at_once_with_why():
    decision = decide(
        attempt=0,
        started_at=0,
        ended_at=100,
        now=101,
        policy=POLICY,
        permanent=classify_failure("checkpoint_busy"),
    )

    assert decision == Decision("refuse", 0, reason=f"not relaunched: {BUSY}")


def test_a_permanent_failure_is_refused_rather_than_given_up_past_the_cap():
    decision = decide(
        attempt=3, started_at=0, ended_at=100, now=10_000, policy=POLICY, permanent=DAMAGED
    )

    assert decision == Decision("refuse", 3, reason=f"not relaunched: {DAMAGED}")


def test_a_transient_failure_is_decided_by_the_backoff():
    decision = decide(
        attempt=0,
        started_at=0,
        ended_at=100,
        now=200,
        policy=POLICY,
        permanent=classify_failure("stream_failed"),
    )

    assert decision.action == "restart"
