"""The synthetic clickstream: deterministic, realistic, and troubled exactly as configured."""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from itertools import pairwise

import pytest

from platform_pipelines.events import CLICKSTREAM_FIELDS, CLICKSTREAM_REQUIRED, EVENT_TYPES
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream

ISO_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def decoded(cfg: ClickstreamConfig, *kinds: str) -> list[dict]:
    return [json.loads(r.value) for r in generate_clickstream(cfg) if r.kind in kinds]


def test_same_config_gives_the_same_bytes_and_another_seed_does_not() -> None:
    cfg = ClickstreamConfig(events=500, seed=7)

    first, again = list(generate_clickstream(cfg)), list(generate_clickstream(cfg))
    other = list(generate_clickstream(ClickstreamConfig(events=500, seed=8)))

    assert first == again
    assert [r.value for r in first] != [r.value for r in other]


def test_each_kind_appears_exactly_as_often_as_its_rate_says() -> None:
    cfg = ClickstreamConfig(events=1000, duplicate_rate=0.05, late_rate=0.1, malformed_rate=0.02)

    kinds = Counter(r.kind for r in generate_clickstream(cfg))

    assert kinds == {"ok": 830, "duplicate": 50, "late": 100, "malformed": 20}
    assert cfg.kind_counts() == {"ok": 830, "duplicate": 50, "late": 100, "malformed": 20}


def test_counts_round_down_without_float_surprises() -> None:
    cfg = ClickstreamConfig(events=100, duplicate_rate=0.29, late_rate=0.07, malformed_rate=0.015)

    assert cfg.kind_counts() == {"ok": 63, "duplicate": 29, "late": 7, "malformed": 1}


def test_no_events_gives_no_records() -> None:
    assert list(generate_clickstream(ClickstreamConfig(events=0))) == []


def test_good_records_carry_every_field_typed_and_keyed_by_user() -> None:
    records = [r for r in generate_clickstream(ClickstreamConfig(events=2000)) if r.kind == "ok"]

    for record in records:
        event = json.loads(record.value)
        assert set(event) == set(CLICKSTREAM_FIELDS)
        assert record.key == event["user_id"].encode()
        assert event["event_type"] in EVENT_TYPES
        assert ISO_MS_Z.match(event["event_time"]), event["event_time"]
        assert uuid.UUID(event["event_id"]).version == 4
        assert (event["amount"] is not None) == (event["event_type"] == "purchase")
        if event["amount"] is not None:
            assert event["amount"] > 0


def test_users_browse_in_sessions_with_every_event_type_and_long_pauses() -> None:
    cfg = ClickstreamConfig(events=3000, users=20, late_rate=0, malformed_rate=0)
    events = decoded(cfg, "ok")
    times = [parse_time(e["event_time"]) for e in events]
    by_user: dict[str, list[datetime]] = {}
    for event, at in zip(events, times, strict=True):
        by_user.setdefault(event["user_id"], []).append(at)
    long_pauses = sum(
        b - a > timedelta(minutes=30) for ts in by_user.values() for a, b in pairwise(ts)
    )

    assert times == sorted(times)
    assert len(by_user) == 20
    assert {e["event_type"] for e in events} == set(EVENT_TYPES)
    assert {e["page"] for e in events} >= {"/home", "/cart", "/checkout", "/login", "/logout"}
    assert any(re.fullmatch(r"/product/\d+", e["page"]) for e in events)
    assert long_pauses > 20


def test_duplicates_resend_the_exact_bytes_of_an_earlier_record() -> None:
    cfg = ClickstreamConfig(events=1000, duplicate_rate=0.1)
    seen: set[tuple[bytes | None, bytes]] = set()
    duplicates = 0

    for record in generate_clickstream(cfg):
        if record.kind == "duplicate":
            assert (record.key, record.value) in seen
            duplicates += 1
        seen.add((record.key, record.value))

    assert duplicates == 100


def test_event_ids_repeat_only_in_duplicates() -> None:
    cfg = ClickstreamConfig(events=2000, duplicate_rate=0.05, malformed_rate=0)

    ids = [json.loads(r.value)["event_id"] for r in generate_clickstream(cfg)]

    assert len(ids) - len(set(ids)) == 100


def test_the_first_record_is_never_a_duplicate() -> None:
    cfg = ClickstreamConfig(events=10, duplicate_rate=0.9, late_rate=0, malformed_rate=0)

    records = list(generate_clickstream(cfg))

    assert [r.kind for r in records] == ["ok"] + ["duplicate"] * 9
    assert {r.value for r in records} == {records[0].value}


def test_late_events_trail_the_clock_by_30_seconds_to_10_minutes() -> None:
    cfg = ClickstreamConfig(events=2000, late_rate=0.1, malformed_rate=0, duplicate_rate=0)
    clock, behind = None, []

    for record in generate_clickstream(cfg):
        at = parse_time(json.loads(record.value)["event_time"])
        if record.kind == "ok":
            clock = at
        else:
            behind.append(clock - at)

    assert len(behind) == 200
    assert all(timedelta(seconds=30) <= lag < timedelta(minutes=10) for lag in behind)


def test_stale_share_of_late_events_is_hours_old() -> None:
    cfg = ClickstreamConfig(events=1000, late_rate=0.1, stale_share=0.3, malformed_rate=0)
    clock, lags = None, []

    for record in generate_clickstream(cfg):
        at = parse_time(json.loads(record.value)["event_time"])
        if record.kind == "ok":
            clock = at
        elif record.kind == "late":
            lags.append(clock - at)

    hours_old = [lag for lag in lags if lag >= timedelta(hours=2)]
    assert len(lags) == 100
    assert len(hours_old) == 30
    assert all(lag <= timedelta(hours=6) for lag in hours_old)


def _malformation(value: bytes) -> str:
    try:
        event = json.loads(value)
    except json.JSONDecodeError:
        return "invalid json"
    if any(field not in event for field in CLICKSTREAM_REQUIRED):
        return "missing required field"
    try:
        parse_time(event["event_time"])
    except ValueError:
        return "event_time not a timestamp"
    return "valid"


def test_malformed_records_break_parsing_required_fields_or_types() -> None:
    cfg = ClickstreamConfig(events=3000, malformed_rate=0.1)
    records = list(generate_clickstream(cfg))

    bad = Counter(_malformation(r.value) for r in records if r.kind == "malformed")
    good = Counter(_malformation(r.value) for r in records if r.kind != "malformed")

    assert set(bad) == {"invalid json", "missing required field", "event_time not a timestamp"}
    assert sum(bad.values()) == 300
    assert good == {"valid": 2700}


def test_a_malformed_record_keeps_its_user_key_unless_it_lost_user_id() -> None:
    records = generate_clickstream(ClickstreamConfig(events=3000, malformed_rate=0.1))

    for record in (r for r in records if r.kind == "malformed"):
        try:
            user_id = json.loads(record.value).get("user_id")
        except json.JSONDecodeError:
            assert record.key is not None and record.key.startswith(b"user-")
        else:
            assert record.key == (None if user_id is None else user_id.encode())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"events": -1}, "events must be >= 0, got -1"),
        ({"users": 0}, "users must be >= 1, got 0"),
        ({"rate_per_sec": -5}, "rate_per_sec must be >= 0, got -5"),
        ({"late_rate": 1.5}, "late_rate must be between 0 and 1, got 1.5"),
        ({"stale_share": -0.1}, "stale_share must be between 0 and 1, got -0.1"),
        (
            {"duplicate_rate": 0.5, "late_rate": 0.3, "malformed_rate": 0.2},
            "duplicate_rate \\+ late_rate \\+ malformed_rate must be below 1, got 1",
        ),
        ({"start_time": datetime(2026, 1, 1)}, "start_time must be timezone-aware UTC"),
        (
            {"start_time": datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=1)))},
            "start_time must be timezone-aware UTC",
        ),
    ],
)
def test_config_validation_names_the_field_and_the_fix(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClickstreamConfig(**overrides)
