"""The auto-restart decision: backoff doubles up to a cap, gives up after max attempts."""

from platform_pipelines.health.restart import RestartPolicy, classify_failure, decide

POLICY = RestartPolicy(max_attempts=3, base_delay_seconds=10, max_delay_seconds=25,
                       healthy_after_seconds=600)  # fmt: skip


def test_backoff_doubles_and_is_capped():
    assert [POLICY.delay(n) for n in range(4)] == [10, 20, 25, 25]


def test_waits_until_the_backoff_has_passed_then_restarts():
    waiting = decide(attempt=1, started_at=0, ended_at=100, now=105, policy=POLICY)
    assert (waiting.action, waiting.wait_seconds) == ("wait", 15)
    due = decide(attempt=1, started_at=0, ended_at=100, now=120, policy=POLICY)
    assert (due.action, due.attempt, due.reason) == ("restart", 1, "relaunch 2 of at most 3")


def test_gives_up_after_the_cap_with_a_reason():
    decision = decide(attempt=3, started_at=0, ended_at=100, now=10_000, policy=POLICY)
    assert decision.action == "give_up"
    assert decision.reason == "gave up after 3 relaunches, each of which failed (cap: 3)"


def test_a_run_that_was_healthy_for_a_while_starts_a_new_count():
    decision = decide(attempt=3, started_at=0, ended_at=700, now=710, policy=POLICY)
    assert (decision.action, decision.attempt) == ("restart", 0)


def test_a_failure_that_can_only_fail_again_is_refused_at_once_with_why():
    why = classify_failure("checkpoint_busy")
    decision = decide(attempt=0, started_at=0, ended_at=100, now=101, policy=POLICY, permanent=why)
    assert (decision.action, decision.reason) == (
        "refuse", "not relaunched: another run holds the stream's checkpoint; relaunching would "
        "only be refused again",
    )  # fmt: skip


def test_failures_are_classified_by_their_kind_or_their_configuration_error():
    assert classify_failure("checkpoint_damaged").startswith("the checkpoint is damaged")
    assert classify_failure("invalid_config") == classify_failure(None, "DagsterInvalidConfigError")
    assert classify_failure("stream_failed") is None  # a query that died may run again
    assert classify_failure(None, "Py4JJavaError") is None
