"""When the health sensor reports a check result again, and when it observes the numbers."""

from __future__ import annotations

import json

from platform_pipelines.health.reporting import Reported


def test_a_result_is_reported_on_change_and_again_after_five_minutes():
    reported = Reported()
    assert reported.check_due("events/liveness", "pass", now=0)
    assert not reported.check_due("events/liveness", "pass", now=100)
    assert reported.check_due("events/liveness", "fail", now=110)
    assert not reported.check_due("events/liveness", "fail", now=200)
    assert reported.check_due("events/liveness", "fail", now=410)


def test_a_new_run_of_a_stream_forces_every_result_again():
    reported = Reported()
    assert reported.run_changed("events", "run1:running")
    reported.check_due("events/liveness", "pass", now=0)
    assert not reported.run_changed("events", "run1:running")
    assert reported.run_changed("events", "run1:cancelled")
    assert reported.check_due("events/liveness", "pass", now=1, force=True)


def test_numbers_are_observed_per_new_batch_and_the_cursor_round_trips_as_json():
    reported = Reported()
    assert reported.observation_due("events", 7, now=0)
    assert not reported.observation_due("events", 7, now=10)
    assert reported.observation_due("events", 8, now=11)
    reported.check_due("events/liveness", "warn", now=11)
    reported.run_changed("events", "run1:running")
    again = Reported.from_json(json.loads(json.dumps(reported.to_json())))
    assert again == reported
