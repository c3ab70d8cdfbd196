"""`platform state show` on every stateful built-in stream and the example user stream, after one
catch-up run on a small hand-written input, and on a stream that is running (real Spark, Delta)."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner

from platform_pipelines.cli.state import state
from platform_pipelines.core.state_view import StateReport
from platform_pipelines.core.times import MS, from_ms, iso
from platform_pipelines.kafka.heartbeats import heartbeat
from platform_pipelines.lakehouse.checkpoints import offsets_metadata
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.state_operators import operators_from_files
from platform_pipelines.lakehouse.state_reader import read_state
from platform_pipelines.lakehouse.state_source import committed_batch, spark_operators
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import start_stream
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.declare import Stream
from platform_pipelines.streams.keyed import encode
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import U1_SHOPPING, U2_BROWSING, at, ev
from tests.integration.helpers import run_catch_up
from tests.waiting import wait_for
from user_streams.running_count import STREAMS as USER_STREAMS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

STALE_AFTER = timedelta(hours=1)
ALERTS_TOPIC = f"state-inspection-alerts-{uuid.uuid4().hex[:10]}"
# u1 logs out and u2 goes quiet early: both sessions close. u4 browses, u5 fails to log in three
# times, u3 arrives last and moves every watermark to minute 110 (120 - 10 min).
CLICKS = [
    *U1_SHOPPING,
    *U2_BROWSING,
    ev("s1", "u4", "page_view", 100, "/home"),
    ev("s2", "u4", "page_view", 105, "/pricing"),
    *[ev(f"f{m}", "u5", "login_failed", m, "/login") for m in (101, 102, 103)],
    ev("s9", "u3", "page_view", 120, "/home"),
    ev("s9", "u3", "page_view", 120, "/home"),  # a duplicate: one s9 in the dedup state
]


def ms(minute: float) -> int:
    return int(at(minute).timestamp() * 1000)


def keyed(key: str, minute: float) -> dict:
    return {"key": key, "event_time": at(minute).isoformat().replace("+00:00", "Z")}


def spark_json(value: dict) -> str:
    """A struct as Spark's ``to_json`` writes it (compact, nulls left out)."""
    return json.dumps({k: v for k, v in value.items() if v is not None}, separators=(",", ":"))


STATEFUL = ["events", "user_sessions", "security_alerts", "service_status", "key_counts"]


@pytest.fixture(scope="module")
def lake(spark, kafka_broker, tmp_path_factory) -> Lakehouse:
    """Every stateful built-in stream and key_counts, run once to the end of a small input (the
    bronze tables they read are written here, as their streams would: state needs no topic; the
    broker only gets security_alerts' topic, which no alert reaches here)."""
    registry = user_registry()
    lake = Lakehouse(tmp_path_factory.mktemp("lake"))
    beats = [heartbeat("svc-a", at(0))]
    keys = [keyed("a", 0), keyed("b", 1), keyed("a", 2)]
    for stream, rows in (("events", CLICKS), ("service_status", beats), ("key_counts", keys)):
        write_bronze(spark, lake, registry.get(registry.get(stream).upstream), rows)
    run_catch_up(spark, lake, kafka_broker, "unused", STATEFUL, registry=registry)
    return lake


def write_bronze(spark, lake: Lakehouse, bronze: Stream, records: list[dict]) -> None:
    """Append records (JSON-like dicts, ISO event times) to a bronze table, as parsed rows."""
    rows = [
        {**r, "event_time": datetime.fromisoformat(r["event_time"].replace("Z", "+00:00"))}
        for r in records
    ]
    df = spark.createDataFrame(rows, bronze.outputs[bronze.table])
    df.write.format("delta").mode("append").save(str(lake.table(bronze.table)))


def user_registry() -> StreamRegistry:
    """The built-in streams on their bronze path (events reads clickstream_raw, security_alerts
    reads events), then the user streams."""
    settings = BuiltinSettings(
        events_reads="bronze",
        alerts_reads="bronze",
        alerts_topic=ALERTS_TOPIC,
        stale_after=STALE_AFTER,  # no stale timer fires
    )
    registry = builtin_streams(settings)
    for stream in USER_STREAMS:
        declare_stream(registry, stream)
    return registry


def show(lake: Lakehouse, *args: str) -> dict:
    # The command joins the tests' shared session: with the deployment's default of 4 state
    # partitions it would set that session's count for every test after this one.
    env = {"PLATFORM_LAKEHOUSE_DIR": str(lake.root), "PLATFORM_STATE_PARTITIONS": "2"}
    result = CliRunner().invoke(state, ["show", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("stream", STATEFUL)
def test_the_operators_read_from_the_metadata_files_are_the_ones_spark_lists(spark, lake, stream):
    """`state show` names a checkpoint's operators from its metadata files, without the Spark job
    of the ``state-metadata`` source; both name the same operators, stores, time modes and state
    variables, at the latest batch and at the first."""
    checkpoint = lake.checkpoint(stream)
    for batch in (committed_batch(checkpoint, stream), 0):
        from_files = operators_from_files(checkpoint, batch)
        assert from_files == spark_operators(spark, checkpoint, batch)
        assert from_files and all(op.stores == ("default",) for op in from_files)


@pytest.mark.parametrize("stream", STATEFUL)
def test_a_small_state_decoded_in_the_driver_equals_the_state_decoded_in_spark(spark, lake, stream):
    """`state show` decodes a small state in the driver (no Python workers to start) and a big
    one in Spark; both give the same report, totals included, for every kind of state."""
    checkpoint = lake.checkpoint(stream)
    in_driver = read_state(spark, checkpoint, stream, top=1000)
    in_spark = read_state(spark, checkpoint, stream, top=1000, local_rows=0)

    assert in_driver == in_spark
    assert in_driver.totals.keys == len(in_driver.shown) > 0
    first = in_driver.shown[0].key
    one = read_state(spark, checkpoint, stream, key=first)
    assert one == read_state(spark, checkpoint, stream, key=first, local_rows=0)
    assert [s.key for s in one.shown] == [first] and one.totals == in_driver.totals


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        ("nope", "No stream named 'nope'; declared streams: clickstream_raw, events, "),
        ("clickstream_raw", "clickstream_raw is a bronze stream: it keeps no state"),
        ("user_sessions", "user_sessions has no checkpoint at "),
    ],
)
def test_what_has_no_state_is_refused_at_once_saying_what_to_do(stream, message, tmp_path):
    result = CliRunner().invoke(
        state, ["show", stream], env={"PLATFORM_LAKEHOUSE_DIR": str(tmp_path), "COLUMNS": "300"}
    )

    assert result.exit_code == 1
    assert message in result.output


def test_events_dedup_state_holds_each_recent_event_id_until_its_expiry(lake):
    expiry = {"expiresAtMicros": ms(130) * 1000}  # s9's event time + the 10 min watermark

    report = show(lake, "events", "--top", "100")

    assert report["parts"] == ["dedupeWithinWatermark"]
    assert {s["key"] for s in report["shown"]} == {"f101", "f102", "f103", "s2", "s9"}  # > 110
    (s9,) = [s for s in report["shown"] if s["key"] == "s9"]
    assert s9 == {
        "key": "s9",
        "bytes": 2 + len(spark_json(expiry)),
        "timers_ms": [],
        "timers": [],
        "value": expiry,
    }
    assert report["keys"] == 5
    assert report["total_bytes"] == sum(s["bytes"] for s in report["shown"])


U4_SESSION = {
    "user_id": "u4",
    "session_start_ms": ms(100),
    "last_event_ms": ms(105),
    "event_count": 2,
    "pages": ["/home", "/pricing"],
    "page_times_ms": [ms(100), ms(105)],
    "reached_checkout": False,
    "purchased": False,
    "revenue": 0.0,
}
U3_HELD = {"event_time_ms": ms(120), "event_id": "s9", "event_type": "page_view", "page": "/home"}


def test_user_sessions_state_shows_an_open_session_with_its_timer_at_last_event_plus_gap(lake):

    report = show(lake, "user_sessions", "--top", "3")

    # The built-in sessions run on flatMapGroupsWithState: one groupState per user, its timeout
    # the timer, the time mode from the stream's declaration.
    assert (report["batch_id"], report["parts"], report["time_mode"]) == (
        1,
        ["flatMapGroupsWithState"],
        "EventTime",
    )
    shown = {s["key"]: s for s in report["shown"]}
    assert set(shown) == {"u3", "u4", "u5"}  # u1 logged out, u2's session timed out
    u4_json = f'{{"open":{spark_json(U4_SESSION)},"pending":[]}}'
    assert shown["u4"] == {
        "key": "u4",
        "bytes": 2 + len(u4_json) + 8,
        "timers_ms": [ms(135)],
        "timers": ["2026-11-22T12:15:00.000Z"],
        "value": {"open": U4_SESSION, "pending": []},
    }
    # u3's only event is beyond the watermark (110): held, with a timer at its event time
    assert (shown["u3"]["value"], shown["u3"]["timers_ms"]) == ({"pending": [U3_HELD]}, [ms(120)])


def test_a_closed_session_has_no_state_and_the_table_says_so(lake):
    env = {"PLATFORM_LAKEHOUSE_DIR": str(lake.root), "COLUMNS": "200"}

    table = CliRunner().invoke(state, ["show", "user_sessions"], env=env)
    gone = CliRunner().invoke(state, ["show", "user_sessions", "--key", "u1"], env=env)

    assert table.exit_code == 0, table.output
    assert "user_sessions at batch 1: 3 keys" in table.output
    assert "2026-11-22T12:15:00.000Z" in table.output and "u4" in table.output
    assert "3 biggest of 3 keys shown" in table.output
    assert "holds no state for key 'u1' at batch 1 (3 keys)" in gone.output


def test_security_alerts_state_keeps_failures_in_the_window_until_newest_plus_window(lake):
    logins = [{"event_id": f"f{m}", "event_time_ms": ms(m)} for m in (101, 102, 103)]
    # the ids, for the alerts' own deduplication, until the watermark passes their times
    failures = {"failures_ms": [ms(101), ms(102), ms(103)], "seen": logins}

    report = show(lake, "security_alerts", "--top", "5")

    # The built-in alerts run on flatMapGroupsWithState too: the groupState, its timeout the timer
    assert report["shown"] == [
        {
            "key": "u5",
            "bytes": 2 + len(spark_json(failures)) + 8,
            "timers_ms": [ms(113)],
            "timers": ["2026-11-22T11:53:00.000Z"],
            "value": failures,
        }
    ]
    assert (report["keys"], report["total_bytes"]) == (1, report["shown"][0]["bytes"])


def test_service_status_state_shows_the_status_and_its_processing_time_timer(lake):
    status = {"status": "ok", "changed_at_ms": ms(0), "last_heartbeat_ms": ms(0)}
    batch = offsets_metadata(lake.checkpoint("service_status"), 0)
    # The heartbeat is days old: the timer counts from half the timeout before the first batch's
    # clock (the most a heartbeat's own time is credited), so it is that clock + 30 min.
    timeout = STALE_AFTER // MS
    timer = int(batch["batchTimestampMs"]) - timeout // 2 + timeout

    report = show(lake, "service_status", "--key", "svc-a")

    # The built-in status runs on flatMapGroupsWithState: the groupState, its timeout the timer
    assert (report["parts"], report["time_mode"]) == (["flatMapGroupsWithState"], "ProcessingTime")
    assert report["shown"] == [
        {
            "key": "svc-a",
            "bytes": 5 + len(spark_json(status)) + 8,
            "timers_ms": [timer],
            "timers": [iso(from_ms(timer))],
            "value": status,
        }
    ]


def test_key_counts_state_ranks_keys_by_bytes_and_has_no_timers(lake):
    a = {"count": 2, "last_seen_ms": ms(2)}
    b = {"count": 1, "last_seen_ms": ms(1)}

    report = show(lake, "key_counts", "--top", "1")

    assert report["shown"] == [
        {"key": "a", "bytes": 1 + len(encode(a, None)), "timers_ms": [], "timers": [], "value": a}
    ]
    assert report["keys"] == 2
    assert report["total_bytes"] == 2 + len(encode(a, None)) + len(encode(b, None))


def test_a_running_stream_shows_its_latest_committed_batch_while_it_writes_new_ones(
    spark, lake, tmp_path
):
    copy = Lakehouse(tmp_path / "lake")
    shutil.copytree(lake.root, copy.root)  # the other tests keep the module's checkpoints
    registry = user_registry()
    counts = registry.get("key_counts")
    checkpoint = copy.checkpoint(counts.name)
    supervisor = Supervisor(lambda *_: None)

    def a_counted(expected: int) -> StateReport | None:
        report = read_state(spark, checkpoint, "key_counts", key="a")
        return report if report.shown[0].value["count"] == expected else None

    try:
        ctx = StreamContext(spark, copy, "127.0.0.1:1")  # key_counts reads its bronze table
        every_second = RunOptions(mode="continuous", processing_time="1 second")
        supervisor.add(counts.name, start_stream(ctx, counts, every_second, "continuous"))
        write_bronze(spark, copy, registry.get(counts.upstream), [keyed("a", 3)])
        # every read races the query: the read pins the last committed batch while it plans more
        report = wait_for(
            lambda: a_counted(3),
            120,
            "a's count of 3",
            every=2,
            show=lambda: read_state(spark, checkpoint, "key_counts", key="a"),
        )
        assert report.shown[0].value == {"count": 3, "last_seen_ms": ms(3)}
        assert (checkpoint / "commits" / str(report.batch_id)).exists()
        supervisor.poll()  # the query kept running through every read
        assert counts.name in {q.name for q in spark.streams.active}
    finally:
        supervisor.stop_all()
