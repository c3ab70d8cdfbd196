"""When the health sensor reports a check result again, and when it observes the numbers."""

from __future__ import annotations

import json

from platform_pipelines.health.reporting import REPORT_EVERY_SECONDS, Reported

CHECK = "events/liveness"


def test_a_check_is_reported_the_first_time_it_is_seen():
    reported = Reported()

    assert reported.check_due(CHECK, "pass", now=1000)
    assert reported.checks == {CHECK: ("pass", 1000)}


def test_an_unchanged_result_is_reported_again_only_after_five_minutes():
    reported = Reported()
    reported.check_due(CHECK, "pass", now=0)

    assert REPORT_EVERY_SECONDS == 300.0
    assert not reported.check_due(CHECK, "pass", now=299)
    assert reported.check_due(CHECK, "pass", now=300)
    assert not reported.check_due(CHECK, "pass", now=599)  # the clock restarted at 300


def test_a_changed_result_is_reported_at_once():
    reported = Reported()
    reported.check_due(CHECK, "pass", now=0)

    assert reported.check_due(CHECK, "fail", now=10)
    assert not reported.check_due(CHECK, "fail", now=20)
    assert reported.checks == {CHECK: ("fail", 10)}


def test_the_re_report_interval_can_be_given():
    reported = Reported()
    reported.check_due(CHECK, "pass", now=0)

    assert not reported.check_due(CHECK, "pass", now=59, every=60)
    assert reported.check_due(CHECK, "pass", now=60, every=60)


def test_each_check_has_its_own_clock():
    reported = Reported()
    reported.check_due(CHECK, "pass", now=0)

    assert reported.check_due("events/late_data", "pass", now=10)
    assert not reported.check_due(CHECK, "pass", now=10)


def test_the_first_look_at_a_stream_is_a_run_change():
    assert Reported().run_changed("events", "1a2b:running")


def test_a_new_run_or_a_new_run_status_is_a_run_change():
    reported = Reported()
    reported.run_changed("events", "1a2b:running")

    assert not reported.run_changed("events", "1a2b:running")
    assert reported.run_changed("events", "1a2b:stopped")
    assert reported.run_changed("events", "3c4d:running")
    assert not reported.run_changed("events", "3c4d:running")
    assert reported.runs == {"events": "3c4d:running"}


def test_a_run_change_forces_every_unchanged_result_to_be_reported_again():
    reported = Reported()
    reported.run_changed("events", "1a2b:running")
    reported.check_due(CHECK, "pass", now=0)

    fresh = reported.run_changed("events", "1a2b:stopped")

    assert fresh
    assert not reported.check_due(CHECK, "pass", now=1)
    assert reported.check_due(CHECK, "pass", now=1, force=fresh)
    assert reported.checks == {CHECK: ("pass", 1)}


def test_numbers_are_observed_for_each_new_batch():
    reported = Reported()

    assert reported.observation_due("events", 7, now=0)
    assert not reported.observation_due("events", 7, now=10)
    assert reported.observation_due("events", 8, now=11)
    assert reported.observed == {"events": (8, 11)}


def test_numbers_without_a_new_batch_are_observed_every_five_minutes():
    reported = Reported()
    reported.observation_due("events", 7, now=0)

    assert not reported.observation_due("events", 7, now=299)
    assert reported.observation_due("events", 7, now=300)
    assert not reported.observation_due("events", 7, now=301)


def test_a_stream_without_a_batch_is_observed_once_then_every_five_minutes():
    reported = Reported()

    assert reported.observation_due("events", -1, now=0)
    assert not reported.observation_due("events", -1, now=1)


def test_the_cursor_round_trips_as_json():
    reported = Reported()
    reported.check_due(CHECK, "warn", now=11.5)
    reported.observation_due("events", 8, now=11)
    reported.run_changed("events", "1a2b:running")

    cursor = json.dumps(reported.to_json())

    assert json.loads(cursor) == {
        "checks": {CHECK: ["warn", 11.5]},
        "observed": {"events": [8, 11]},
        "runs": {"events": "1a2b:running"},
    }
    assert Reported.from_json(json.loads(cursor)) == reported


def test_a_restored_cursor_keeps_deciding_as_before():
    reported = Reported()
    reported.check_due(CHECK, "pass", now=0)
    restored = Reported.from_json(json.loads(json.dumps(reported.to_json())))

    assert not restored.check_due(CHECK, "pass", now=100)
    assert restored.check_due(CHECK, "fail", now=100)


def test_an_empty_or_partial_cursor_starts_afresh():
    assert Reported.from_json({}) == Reported()
    assert Reported.from_json({"runs": {"events": "1a2b:running"}}) == Reported(
        runs={"events": "1a2b:running"}
    )
