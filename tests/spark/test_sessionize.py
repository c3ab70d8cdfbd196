"""``sessionize`` on Spark: both state APIs, a real file stream, a Delta sink and a checkpoint."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.tws_tester import TwsTester

from platform_pipelines.state.sessions import SessionConfig
from platform_pipelines.streams.schemas import CLICKSTREAM
from platform_pipelines.streams.sessions import SessionApi, sessionize
from platform_pipelines.streams.sessions_python import SessionProcessor
from platform_pipelines.streams.watermark import with_watermark

pytestmark = pytest.mark.spark

MIN = 60_000


def event(n: int, user: str, kind: str, hhmm: str, page: str | None = None, amount=None) -> dict:
    """A clickstream record as the JSON source holds it; ``hhmm`` on 2026-11-22 (UTC)."""
    at = f"2026-11-22T{hhmm}:00Z"
    return {
        "event_id": f"e{n}",
        "user_id": user,
        "event_type": kind,
        "page": page,
        "amount": amount,
        "event_time": at,
    }


FIRST = [
    event(1, "u1", "page_view", "10:00", "A"),
    event(2, "u1", "page_view", "10:05", "B"),
    event(3, "u1", "page_view", "10:50", "C"),  # 45 minutes later: a new session
    event(4, "u2", "page_view", "10:00", "A"),
    event(5, "u2", "checkout", "10:02", "cart"),
    event(6, "u2", "purchase", "10:03", "thanks", 12.5),
    event(7, "u2", "logout", "10:04"),
    event(8, "u3", "page_view", "10:08", "X"),  # out of order on purpose
    event(9, "u3", "page_view", "10:01", "W"),
]
# Moves the watermark (10 minutes behind the latest event) from 10:40 to 11:50.
LATER = [event(10, "u9", "page_view", "12:00", "Z")]

# user, session_id suffix, start, end, seconds, count, pages, checkout, purchased, revenue, reason
U1_GAP = (
    "u1",
    "1795341600000",
    "10:00",
    "10:05",
    300.0,
    2,
    ["A", "B"],
    False,
    False,
    0.0,
    "timeout",
)
U2_LOGOUT = (
    "u2",
    "1795341600000",
    "10:00",
    "10:04",
    240.0,
    4,
    ["A", "cart", "thanks"],
    True,
    True,
    12.5,
    "logout",
)
U3_TIMEOUT = (
    "u3",
    "1795341660000",
    "10:01",
    "10:08",
    420.0,
    2,
    ["W", "X"],
    False,
    False,
    0.0,
    "timeout",
)
U1_TIMEOUT = ("u1", "1795344600000", "10:50", "10:50", 0.0, 1, ["C"], False, False, 0.0, "timeout")


def run_available_now(
    spark: SparkSession, source: Path, root: Path, api: SessionApi
) -> list[tuple]:
    """One availableNow run of the sessions stream into Delta; the table's rows afterwards."""
    events = spark.readStream.schema(CLICKSTREAM).json(str(source))
    sessions = sessionize(with_watermark(events, "event_time", timedelta(minutes=10)), api=api)
    query = (
        sessions.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(root / "user_sessions"))
    )
    try:
        query.awaitTermination(300)
    finally:
        query.stop()
    table = spark.read.format("delta").load(str(root / "user_sessions"))
    hhmm = [F.date_format(c, "HH:mm").alias(c) for c in ("session_start", "session_end")]
    rows = table.select(
        "user_id", F.substring_index("session_id", "-", -1), *hhmm, *table.columns[4:]
    ).collect()
    return sorted(tuple(r) for r in rows)


@pytest.mark.parametrize("api", ["jvm", "transform_with_state", "apply_in_pandas_with_state"])
def test_sessions_close_by_gap_logout_and_event_time_timeout_with_either_state_api(
    spark: SparkSession, tmp_path: Path, api: SessionApi
) -> None:
    source = tmp_path / "events"
    source.mkdir()
    (source / "1.json").write_text("\n".join(json.dumps(e) for e in FIRST))

    # availableNow also runs the no-data batch that moves the watermark, so u3's timer fires.
    assert run_available_now(spark, source, tmp_path, api) == [U1_GAP, U2_LOGOUT, U3_TIMEOUT]

    (source / "2.json").write_text("\n".join(json.dumps(e) for e in LATER))
    assert run_available_now(spark, source, tmp_path, api) == [
        U1_GAP,
        U1_TIMEOUT,
        U2_LOGOUT,
        U3_TIMEOUT,
    ]


def row(n: int, minute: int, page: str) -> Row:
    at = datetime(2026, 11, 22, 10, tzinfo=UTC).timestamp() * 1000 + minute * MIN
    return Row(
        event_id=f"e{n}",
        user_id="u1",
        event_type="page_view",
        page=page,
        amount=None,
        event_time=datetime.fromtimestamp(at / 1000, tz=UTC),
    )


def test_the_processor_holds_events_until_the_watermark_and_closes_at_last_event_plus_gap() -> None:
    tester = TwsTester(
        SessionProcessor(SessionConfig()),
        timeMode="EventTime",
        eventTimeExtractor=lambda r: int(r.event_time.timestamp() * 1000),
    )
    t0 = int(datetime(2026, 11, 22, 10, tzinfo=UTC).timestamp() * 1000)

    assert tester.test("u1", [row(1, 0, "A")]) == []
    assert tester.test("u1", [row(2, 5, "B")]) == []
    # 10:34 releases both events into one open session; it times out at 10:05 + 30 min
    assert tester.setWatermark(t0 + 34 * MIN) == []
    (closed,) = tester.setWatermark(t0 + 35 * MIN)

    assert closed.asDict() == {
        "user_id": "u1",
        "session_id": f"u1-{t0}",
        "session_start": datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
        "session_end": datetime(2026, 11, 22, 10, 5, tzinfo=UTC),
        "duration_seconds": 300.0,
        "event_count": 2,
        "last_pages": ["A", "B"],
        "reached_checkout": False,
        "purchased": False,
        "revenue": 0.0,
        "close_reason": "timeout",
    }
    assert tester.peekValueState("session", "u1") is None


def hostile_batches(seed: int, users: int = 12, batches: int = 4, per_batch: int = 150) -> list:
    """Disordered clickstream batches that stress every rule: events out of order within and
    across batches, equal times (ordered by id), gaps of exactly and just over 30 minutes,
    logouts, purchases with a null, zero, negative-zero or positive amount, pages missing, more
    than 10 pages per session, and events far behind the watermark (dropped as late)."""
    import random

    rng = random.Random(seed)
    base = datetime(2026, 11, 22, 10, tzinfo=UTC)
    clock = [0] * users  # per user, minutes after ``base`` its events have reached
    out, n = [], 0
    for b in range(batches):
        rows = []
        for _ in range(per_batch):
            u = rng.randrange(users)
            clock[u] += rng.choices([0, 1, 2, 5, 29, 30, 31, 45], [20, 30, 20, 10, 6, 6, 3, 3])[0]
            minute = clock[u] - rng.choice([0, 0, 0, 3, 12]) + (b * 20 if u % 3 == 0 else 0)
            if rng.random() < 0.03:
                minute -= 300  # ancient: behind the watermark by the time it arrives
            kind = rng.choices(["page_view", "checkout", "purchase", "logout"], [83, 6, 8, 3])[0]
            amount = rng.choice([None, 0.0, -0.0, 12.5, 3.1]) if kind == "purchase" else None
            at = base + timedelta(minutes=minute, seconds=rng.choice([0, 0, 30]))
            n += 1
            rows.append(
                {
                    "event_id": f"e{n:05d}",
                    "user_id": f"u{u}",
                    "event_type": kind,
                    "page": rng.choice([None, "/a", "/b", "/c"]),
                    "amount": amount,
                    "event_time": at.isoformat().replace("+00:00", "Z"),
                }
            )
        rng.shuffle(rows)
        out.append(rows)
    return out


def test_the_jvm_port_emits_exactly_the_python_state_machines_sessions_on_hostile_input(
    spark: SparkSession, tmp_path: Path
) -> None:
    tables = {}
    for api in ("jvm", "transform_with_state"):
        root = tmp_path / api
        source = root / "events"
        source.mkdir(parents=True)
        for b, rows in enumerate(hostile_batches(seed=5)):
            (source / f"{b}.json").write_text("\n".join(json.dumps(r) for r in rows))
            events = spark.readStream.schema(CLICKSTREAM).json(str(source))
            sessions = sessionize(
                with_watermark(events, "event_time", timedelta(minutes=10)), api=api
            )  # type: ignore[arg-type]
            query = (
                sessions.writeStream.format("delta")
                .outputMode("append")
                .option("checkpointLocation", str(root / "checkpoint"))
                .trigger(availableNow=True)
                .start(str(root / "sessions"))
            )
            try:
                query.awaitTermination(300)
            finally:
                query.stop()
        table = spark.read.format("delta").load(str(root / "sessions"))
        tables[api] = sorted(tuple(r) for r in table.collect())

    assert len(tables["jvm"]) > 40  # sessions closed by timeout and by logout, across batches
    assert {r[-1] for r in tables["jvm"]} == {"timeout", "logout"}
    assert any(len(r[6]) == 10 for r in tables["jvm"])  # a session kept only its last 10 pages
    assert tables["jvm"] == tables["transform_with_state"]
