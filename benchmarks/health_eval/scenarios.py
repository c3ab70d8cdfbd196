"""The labelled scenarios: thirteen healthy, thirteen faulty, each with what every check must say.

A healthy scenario must pass every check at every moment of its recording. A faulty one must be
failed (or warned, where warning is the documented level) by the checks that watch its cause,
within the number of batches (or seconds) their documentation states, with a remedy that names
the cause; every other check must pass. The bounds come from the default policy:
``HealthPolicy`` (``leak_min_batches`` batches for a leak or a forecast, ``min_rate_batches``
full batches for rates), the liveness check's stale limit for silence (three triggers or the
longest recent batches, at least ``min_stale_seconds``), and the first look for what the
checkpoint, the broker or the run says.
"""

from __future__ import annotations

from datetime import timedelta

from benchmarks.health_eval import streams as s
from benchmarks.health_eval.model import Expect, RunFacts, Scenario
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.policy import HealthPolicy

POLICY = HealthPolicy()
FAIL, WARN = Status.FAIL, Status.WARN
FIRST_LOOK = 1  # a fact of the checkpoint or the broker is judged on the next evaluation
SLOW = s.keyed(s.SlowCount(seconds_per_event=0.004))  # a count that spends 4 ms on each event
# A stream too slow for its input: warned once the rates of min_rate_batches full batches say so.
BEHIND = {
    "falling_behind": Expect(
        WARN, within_batches=POLICY.min_rate_batches, remedy_names=("keep up", "capacity")
    )
}


def healthy(name: str, summary: str, streams: s.Streams, stream: str, **kw: object) -> Scenario:
    return Scenario(name, True, summary, streams, stream, **kw)  # type: ignore[arg-type]


def faulty(name: str, summary: str, streams: s.Streams, stream: str, **kw: object) -> Scenario:
    return Scenario(name, False, summary, streams, stream, **kw)  # type: ignore[arg-type]


HEALTHY = [
    healthy(
        "steady_dedup_within_watermark",
        "events deduplicates a steady flow with duplicates; its ids expire with a 10 s watermark",
        s.dedup(timedelta(seconds=10)),
        "events",
    ),
    healthy(
        "long_lived_sessions",
        "users arrive one after another and stay active: their sessions outlast the recording",
        s.sessions,
        "user_sessions",
    ),
    healthy(
        "bursty_source",
        "bronze gets thousands of records at once, then nothing, three times over",
        s.bronze,
        "clickstream_raw",
    ),
    healthy(
        "idle_source",
        "the producers stop; the stream runs on for over a minute with nothing to read",
        s.dedup(timedelta(minutes=1)),
        "events",
    ),
    healthy(
        "stopped_stream",
        "the stream was stopped an hour ago; its topic has gained 20,000 records since",
        s.dedup(timedelta(minutes=1)),
        "events",
        run=RunFacts("CANCELED"),
        judged_after=3600.0,
    ),
    healthy(
        "input_surge",
        "on a 20 s trigger, after three batches of a trickle the input rises to 2,000 records a second: bronze keeps up",
        s.bronze,
        "clickstream_raw",
    ),
    healthy(
        "catch_up_of_a_large_backlog",
        "a catch-up run works through a 40-minute backlog of 40,000 records, half done",
        s.bronze,
        "clickstream_raw",
    ),
    healthy(
        "quarantine_spike",
        "for a few batches most records are malformed: bronze quarantines them",
        s.bronze,
        "clickstream_raw",
    ),
    healthy(
        "valid_rows_late_by_design",
        "a quarter of the events arrive 30-90 s out of order, inside a 2-minute watermark",
        s.dedup(timedelta(minutes=2)),
        "events",
    ),
    healthy(
        "restart_after_a_stop",
        "the stream is stopped, its topic gains records, and a new run picks them up",
        s.dedup(timedelta(minutes=1)),
        "events",
    ),
    healthy(
        "duplicate_storm",
        "a producer's retries send every record three times for a while: dedup removes them",
        s.dedup(timedelta(minutes=1)),
        "events",
    ),
    healthy(
        "keys_expire_by_timer",
        "a count per key that forgets each key 5 s after its last event (processing time)",
        s.keyed(
            s.ExpiringCount(ttl_ms=5_000),
            timeout="processing_time",
            key_lifetime=timedelta(seconds=5),
        ),
        "key_counts",
    ),
    healthy(
        "slow_trickle",
        "one event every few seconds: most triggers find nothing",
        s.dedup(timedelta(minutes=1)),
        "events",
    ),
]

FAULTY = [
    faulty(
        "state_leak",
        "a count per key with no timeout and no watermark: every key stays forever",
        s.keyed(s.RunningCount()),
        "key_counts",
        cause="no state timeout and no watermark",
        expect={
            "state_growth": Expect(
                FAIL, within_batches=POLICY.leak_min_batches, remedy_names=("watermark", "timer")
            )
        },
    ),
    faulty(
        "key_cardinality_explosion",
        "a client starts sending a new user_id with every event: about 1,000 new keys a second",
        s.first_visits,
        "active_users",
        cause="the key space explodes (a new key per event)",
        expect={
            "state_growth": Expect(
                WARN,
                within_batches=POLICY.leak_min_batches,
                remedy_names=("key space", "fewer keys"),
            )
        },
    ),
    faulty(
        "stuck_query",
        "the stream's logic never returns from one key: its batch never ends",
        s.keyed(s.HangingCount()),
        "key_counts",
        cause="a batch that never ends (the query is hung)",
        expect={"liveness": Expect(FAIL, within_stale=True, remedy_names=("hung",))},
        judged_after=180.0,
    ),
    faulty(
        "broker_down",
        "the Kafka broker goes away while the stream runs, and stays away",
        s.dedup(timedelta(minutes=1)),
        "events",
        cause="the Kafka broker is down",
        expect={
            "liveness": Expect(FAIL, within_stale=True, remedy_names=("broker",)),
            "falling_behind": Expect(FAIL, within_batches=FIRST_LOOK, remedy_names=("broker",)),
            "kafka_replication": Expect(WARN, within_batches=FIRST_LOOK, remedy_names=("broker",)),
        },
        judged_after=120.0,
    ),
    faulty(
        "missing_topic",
        "the stream is declared on a misspelled topic that does not exist",
        s.misspelled(s.dedup(timedelta(minutes=1))),
        "events",
        cause="the stream's topic does not exist",
        # the run waits for the topic (warned, the documented level); lag is not judged then
        expect={
            "liveness": Expect(WARN, within_batches=FIRST_LOOK, remedy_names=("create the topic",))
        },
        judged_after=120.0,
    ),
    faulty(
        "watermark_stops_moving",
        "the producers' clock stops: every new event carries the same time, 59 minutes back",
        s.dedup(timedelta(minutes=10)),
        "events",
        cause="event times stop advancing (the watermark is stuck)",
        expect={
            "late_data": Expect(
                WARN,
                # warned once the watermark is watermark_delay_warn_seconds behind the clock;
                # the recording starts 59 minutes behind, so a minute of standing still
                within_seconds=90.0,
                remedy_names=("event timestamps", "stuck"),
            )
        },
    ),
    faulty(
        "growing_lag",
        "the stream's logic is too slow for its input: every batch is longer than the last",
        SLOW,
        "key_counts",
        cause="processing is slower than the input",
        expect=BEHIND,
    ),
    faulty(
        "surge_past_capacity",
        "after three batches of a trickle, the input rises to four times what the logic processes",
        SLOW,
        "key_counts",
        cause="the input rose past what the stream processes",
        expect=BEHIND,
    ),
    faulty(
        "tight_watermark_drops_valid_rows",
        "a 5 s watermark while a fifth of the events arrive 30-60 s out of order",
        s.dedup(timedelta(seconds=5)),
        "events",
        cause="the watermark delay is shorter than the data's lateness",
        expect={"late_data": Expect(FAIL, within_batches=1, remedy_names=("watermark",))},
    ),
    faulty(
        "checkpoint_damage",
        "a state changelog of the stopped stream is cut short (a disk filled up)",
        s.dedup(timedelta(minutes=1)),
        "events",
        cause="a damaged checkpoint file",
        expect={"checkpoint": Expect(FAIL, within_batches=0, remedy_names=("savepoint",))},
        run=RunFacts("CANCELED"),
    ),
    faulty(
        "partition_count_change",
        "the deployment's state partitions go from 2 to 4 on a stream that already has state",
        s.dedup(timedelta(minutes=1)),
        "events",
        cause="the configured state partitions differ from the checkpoint's",
        expect={"checkpoint": Expect(WARN, within_batches=0, remedy_names=("state_partitions",))},
    ),
    faulty(
        "crashed_run",
        "the stream's logic raises on one key: the query dies and its run fails",
        s.keyed(s.CrashingCount()),
        "key_counts",
        cause="the query died with an error",
        expect={"liveness": Expect(FAIL, within_batches=FIRST_LOOK, remedy_names=("error",))},
        run=RunFacts("FAILURE"),
    ),
    faulty(
        "rebuilt_upstream",
        "clickstream_raw is rebuilt by platform reprocess; events, left out, still points at the old table",
        s.bronze_and_dedup,
        "events",
        cause="the upstream table was replaced by a rebuild",
        # its checkpoint holds positions in a table that is gone: the runner refuses its next
        # start (as for a damaged checkpoint), so the checkpoint check must say so, stopped or not
        expect={"checkpoint": Expect(FAIL, within_batches=FIRST_LOOK, remedy_names=("reprocess",))},
        run=RunFacts("CANCELED"),
    ),
]

SCENARIOS = [*HEALTHY, *FAULTY]
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
