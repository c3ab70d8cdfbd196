"""The service status's Java port (``jvm/status``, ``ServiceRules``) against its specification
(``state/status.py``) on generated cases, compared step by step.

Times are small integers and the timeout a few milliseconds, so that the cases are dense in what
distinguishes two implementations: an odd timeout (half of it rounded), heartbeats dated ahead of
the batch's clock and far behind it, a timer due exactly at a batch, a timer step on a service
without one, seeded services (ok or stale, with no timer), and heartbeats in any order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from platform_pipelines.spark.java_code import platform_class
from platform_pipelines.state.keyed import Clock, State, from_ms, to_ms
from platform_pipelines.state.status import ServiceStatus, StatusConfig
from tests.replay import PARITY, Decoder, Encoder

pytestmark = pytest.mark.spark

# (processing-time advance, the batch's heartbeats relative to its time, or None for the timer)
STEPS = st.lists(
    st.tuples(
        st.integers(0, 8),
        st.lists(st.integers(-12, 4) | st.just(-1000), max_size=4) | st.none(),
    ),
    min_size=1,
    max_size=6,
)
SEED = st.none() | st.tuples(
    st.sampled_from(["ok", "stale"]), st.integers(-5, 5), st.integers(-5, 5)
)

Seed = tuple[str, int, int] | None
Case = tuple[str, int, Seed, tuple[tuple[int, tuple[int, ...] | None], ...]]
Output = list[tuple[tuple[Any, ...] | None, int | None]]


@st.composite
def status_cases(draw: st.DrawFn) -> Case:
    """One service: its timeout, its seed, and its steps (processing time, heartbeat times)."""
    service = draw(st.sampled_from(["api", "\U0001f600"]))
    now, steps = draw(st.integers(0, 5)), []
    for advance, beats in draw(STEPS):
        now += advance
        steps.append((now, None if beats is None else tuple(now + b for b in beats)))
    return service, draw(st.integers(1, 9)), draw(SEED), tuple(steps)


def python_replay(case: Case) -> Output:
    """Each step's emitted row and the timer afterwards, by ``state/status.py``, called as Spark
    calls it: a service without heartbeats in a batch is not called; its timer fires in the
    first batch after it."""
    service, stale_after, seed, steps = case
    logic = ServiceStatus(StatusConfig(stale_after_ms=stale_after))
    state: State | None = None
    if seed is not None:
        row = {
            "status": seed[0],
            "changed_at": from_ms(seed[1]),
            "last_heartbeat_time": from_ms(seed[2]),
        }
        state = logic.initial_state(service, row)
    timer: int | None = None
    out: Output = []
    for now, beats in steps:
        if beats:
            events = [{"event_time": from_ms(at)} for at in beats]
            result = logic.on_events(service, state, events, Clock(now))
        elif beats is None and state is not None and timer is not None and timer < now:
            result = logic.on_timeout(service, state, Clock(now))
        else:
            out.append((None, timer))
            continue
        state, timer = result.state, result.timeout_at_ms
        rows = [_row(r) for r in result.outputs]
        assert len(rows) <= 1
        out.append((rows[0] if rows else None, timer))
    return out


def _row(row: dict[str, Any]) -> tuple[Any, ...]:
    changed, last = to_ms(row["changed_at"]), to_ms(row["last_heartbeat_time"])
    return row["service"], row["status"], changed, last


def java_replay(spark: SparkSession, cases: list[Case]) -> list[Output]:
    """The same, by ``ServiceRules`` in the session's JVM: all cases in one call. The JVM gets
    each batch's heartbeats in reverse order."""
    enc = Encoder()
    enc.i32(len(cases))
    for service, stale_after, seed, steps in cases:
        enc.text(service)
        enc.i64(stale_after)
        enc.flag(seed is not None)
        if seed is not None:
            enc.text(seed[0])
            enc.i64(seed[1])
            enc.i64(seed[2])
        enc.i32(len(steps))
        for now, beats in steps:
            enc.i64(now)
            enc.i32(-1 if beats is None else len(beats))
            for at in reversed(beats or ()):
                enc.i64(at)
    replay = platform_class(
        spark, "platform.status.StatusReplay", "use the tests' shared spark fixture"
    )
    dec = Decoder(replay.replay(enc.payload()))
    results = [[(_emitted(dec), dec.timer()) for _ in case[3]] for case in cases]
    assert dec.done()
    return results


def _emitted(dec: Decoder) -> tuple[Any, ...] | None:
    if not dec.flag():
        return None
    return dec.text(), dec.text(), dec.i64(), dec.i64()


# A seeded "ok" service falls silent: it has no timer, so it is never reported stale until it
# sends a heartbeat; an odd timeout halves down (7 // 2 == 3 in both languages).
SEEDED = ("api", 7, ("ok", 0, 0), ((20, None), (21, (2,)), (40, None)))


@PARITY
@given(cases=st.lists(status_cases(), min_size=1, max_size=12))
@example(cases=[SEEDED])
def test_the_java_status_reports_what_the_specification_reports(
    spark: SparkSession, cases: list[Case]
) -> None:
    for case, java in zip(cases, java_replay(spark, cases), strict=True):
        assert java == python_replay(case), case


def test_the_seeded_example_goes_ok_then_stale(spark: SparkSession) -> None:
    """The example above, spelled out: no timer from the seed; the heartbeat at 21 (dated 2,
    credited at most half the timeout: 21 - 3 = 18) sets one at 18 + 7 = 25, which fires at 40."""
    assert java_replay(spark, [SEEDED])[0] == [
        (None, None),
        (None, 25),  # already ok: nothing emitted
        (("api", "stale", 40, 2), None),
    ]
