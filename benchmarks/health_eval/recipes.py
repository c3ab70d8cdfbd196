"""How each scenario is recorded: what is produced, when the fault is injected, when it ends.

One function per scenario, named after it, driving the platform's runner through a
``Recording`` (``harness.py``). Inputs stay small and runs short (well under a minute of
streaming each, the idle and stopped cases aside); event times follow the wall clock, as a live
producer's would, unless the scenario is about event time.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from benchmarks.health_eval.harness import Recording, Tick, until_batches
from benchmarks.health_eval.streams import HANG, POISON
from platform_pipelines.runtime.run_options import RunOptions

Recipe = Callable[[Recording], None]
RECIPES: dict[str, Recipe] = {}
PAGES = ("/home", "/product/1", "/product/2", "/cart")


def recipe(fn: Recipe) -> Recipe:
    RECIPES[fn.__name__] = fn
    return fn


def stamp(ts: float) -> str:
    """Epoch seconds as the ISO text producers write."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Clicks:
    """Clickstream events with fresh ids, stamped with a given time."""

    def __init__(self, users: int = 50, seed: int = 7) -> None:
        self.ids = itertools.count()
        self.users = users
        self.rng = random.Random(seed)

    def one(
        self, at: float, user: str | None = None, event_type: str = "page_view"
    ) -> dict[str, Any]:
        n = next(self.ids)
        return {
            "event_id": f"e{n}",
            "user_id": user or f"u{self.rng.randrange(self.users)}",
            "event_type": event_type,
            "page": PAGES[n % len(PAGES)],
            "event_time": stamp(at),
        }

    def now(
        self, n: int, late: tuple[float, float] | None = None, share: float = 0.0
    ) -> list[dict[str, Any]]:
        """``n`` events stamped now; a ``share`` of them ``late`` seconds (a range) back."""
        t = time.time()
        return [
            self.one(t - self.rng.uniform(*late) if late and self.rng.random() < share else t)
            for _ in range(n)
        ]


def keyed(keys: Iterator[str] | list[str], at: float | None = None) -> list[dict[str, Any]]:
    t = time.time() if at is None else at
    return [{"key": k, "event_time": stamp(t)} for k in keys]


def steady(rec: Recording, clicks: Clicks, per_tick: int = 30) -> Callable[[Tick], None]:
    """A script step that sends ``per_tick`` fresh events stamped now."""

    def send(tick: Tick) -> None:
        rec.send(clicks.now(per_tick))

    return send


# --- healthy --------------------------------------------------------------------------------------


@recipe
def steady_dedup_within_watermark(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()

    def script(tick: Tick) -> bool:
        events = clicks.now(40)
        rec.send(events + events[:6])  # a few duplicates of this second's events
        return tick.batches >= 10 and rec.finish()

    rec.run(script)


@recipe
def long_lived_sessions(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    users: list[str] = []

    def script(tick: Tick) -> bool:
        if len(users) < 20:
            users.extend(f"u{len(users) + i}" for i in range(2))  # two newcomers a second
        now = time.time()
        rec.send([clicks.one(now, user) for user in users[len(users) % 2 :: 2]])  # every 2 s
        return tick.batches >= 10 and rec.finish()

    rec.run(script)


@recipe
def bursty_source(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    sent: list[float] = []  # when each burst was sent

    def script(tick: Tick) -> bool:
        quiet = tick.elapsed - sent[-1] if sent else 0.0
        if len(sent) < 3 and tick.batches >= len(sent) and (not sent or quiet >= 12):
            rec.send(clicks.now(3000))  # then nothing for a while
            sent.append(tick.elapsed)
            return False
        return len(sent) == 3 and tick.batches >= 3 and quiet >= 8 and rec.finish()

    rec.run(script)


@recipe
def idle_source(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    last_sent = [0.0]

    def script(tick: Tick) -> bool:
        if tick.batches < 4:
            rec.send(clicks.now(30))
            last_sent[0] = tick.elapsed
        return tick.batches >= 4 and tick.elapsed - last_sent[0] >= 75 and rec.finish()

    rec.run(script)


@recipe
def stopped_stream(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    rec.run(until_batches(5, steady(rec, clicks)))
    rec.send(clicks.now(20_000))  # the topic goes on after the stream stopped


@recipe
def catch_up_of_a_large_backlog(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    start = time.time() - 40 * 60
    rec.send(clicks.one(start + i * 0.06) for i in range(40_000))  # 40 minutes, in order
    rec.run(
        lambda tick: tick.batches >= 4 and rec.finish(),
        RunOptions(mode="catch_up", max_offsets_per_trigger=5_000),
    )


@recipe
def quarantine_spike(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()

    def script(tick: Tick) -> bool:
        events: list[dict[str, Any] | bytes] = list(clicks.now(40))
        if 8 <= tick.elapsed < 20:  # a broken client: most records are not even JSON
            events[:25] = [b"{not json" for _ in range(15)] + [{"event_id": "x"}] * 10
        rec.send(events)
        return tick.batches >= 8 and rec.finish()

    rec.run(script)


@recipe
def valid_rows_late_by_design(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()

    def script(tick: Tick) -> bool:
        rec.send(clicks.now(40, late=(30.0, 90.0), share=0.25))
        return tick.batches >= 10 and rec.finish()

    rec.run(script)


@recipe
def restart_after_a_stop(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    rec.run(until_batches(4, steady(rec, clicks)))
    rec.send(clicks.now(600))
    send = steady(rec, clicks)
    rec.run(lambda tick: send(tick) or (tick.batches >= 4 and rec.finish()))


@recipe
def duplicate_storm(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()

    def script(tick: Tick) -> bool:
        events = clicks.now(30)
        rec.send(events * 3 if 10 <= tick.elapsed < 25 else events)  # retries resend each
        return tick.batches >= 10 and rec.finish()

    rec.run(script)


@recipe
def keys_expire_by_timer(rec: Recording) -> None:
    rec.create_topic()
    keys = (f"k{i}" for i in itertools.count())

    def script(tick: Tick) -> bool:
        rec.send(keyed(itertools.islice(keys, 10)), key_field="key")
        return tick.batches >= 10 and rec.finish()

    rec.run(script)


@recipe
def slow_trickle(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    sent = [-10.0]

    def script(tick: Tick) -> bool:
        if tick.elapsed - sent[0] >= 7:
            rec.send(clicks.now(1))
            sent[0] = tick.elapsed
        return tick.elapsed >= 45 and rec.finish()

    rec.run(script)


# The input rises from a trickle to SURGE_PER_TICK records a tick (about a second) after
# TRICKLE_BATCHES batches: a surge its stream keeps up with (input_surge, on a 20 s trigger, so
# that its rhythm before the surge says little about the lag during it), or one past what it
# can process (surge_past_capacity).
TRICKLE_BATCHES = 3
SURGE_PER_TICK = 2000


@recipe
def input_surge(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    surge: list[int] = []  # the batch the surge started at

    def script(tick: Tick) -> bool:
        if tick.batches < TRICKLE_BATCHES:
            rec.send(clicks.now(20))
            return False
        surge[:] = surge or [tick.batches]
        rec.send(clicks.now(SURGE_PER_TICK))
        return tick.batches >= surge[0] + 4 and rec.finish()

    rec.run(script, RunOptions(processing_time="20 seconds"))


# --- faulty ---------------------------------------------------------------------------------------


@recipe
def state_leak(rec: Recording) -> None:
    rec.create_topic()
    keys = (f"k{i}" for i in itertools.count())

    def script(tick: Tick) -> bool:
        rec.mark_fault()
        rec.send(keyed(itertools.islice(keys, 20)), key_field="key")
        return tick.batches >= 8 and rec.finish()

    rec.run(script)


@recipe
def key_cardinality_explosion(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    ids = itertools.count()

    def script(tick: Tick) -> bool:
        if tick.batches < 2:
            rec.send(clicks.now(20))
            return False
        rec.mark_fault()
        now = time.time()
        rec.send(clicks.one(now, f"anon-{next(ids)}") for _ in range(1200))
        return tick.batches >= 7 and rec.finish()

    rec.run(script)


@recipe
def stuck_query(rec: Recording) -> None:
    rec.create_topic()
    keys = itertools.cycle([f"k{i}" for i in range(20)])

    def script(tick: Tick) -> bool:
        batch = list(itertools.islice(keys, 20))
        if tick.batches >= 4 and rec.fault_at is None:
            rec.mark_fault()
            batch.append(HANG)
        rec.send(keyed(batch), key_field="key")
        return rec.fault_at is not None and time.time() - rec.fault_at >= 15 and rec.finish()

    rec.run(script)


@recipe
def broker_down(rec: Recording) -> None:
    from platform_pipelines.kafka.broker import LocalKafkaBroker

    broker = LocalKafkaBroker(rec.work / "kafka")  # its own broker, so that it can go away
    rec.bootstrap = broker.start()
    try:
        rec.create_topic()
        clicks = Clicks()

        def script(tick: Tick) -> bool:
            if tick.batches < 5:
                rec.send(clicks.now(30))
                return False
            if rec.fault_at is None:
                broker.stop()
                rec.mark_fault()
                return False
            if time.time() - rec.fault_at < 15:
                return False
            rec.finish()
            broker.start()  # on its old port: the queries stop at once instead of retrying Kafka
            return True

        rec.run(script)
    finally:
        broker.stop()


@recipe
def missing_topic(rec: Recording) -> None:
    rec.create_topic()  # the producers' topic; the stream reads a misspelled one
    clicks = Clicks()
    rec.mark_fault()

    def script(tick: Tick) -> bool:
        rec.send(clicks.now(30))
        return tick.elapsed >= 15 and rec.finish()

    rec.run(script)


@recipe
def watermark_stops_moving(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    # 49 min 20 s behind plus the 10 min watermark: the watermark trails the clock by 59 min 20 s
    behind = 49 * 60 + 20
    frozen: list[float] = []

    def script(tick: Tick) -> bool:
        if tick.batches < 4:
            at = time.time() - behind
        else:
            if not frozen:
                rec.mark_fault()
                frozen.append(time.time() - behind)
            at = frozen[0]  # the producers' clock stopped
        rec.send([clicks.one(at) for _ in range(30)])
        return bool(frozen) and time.time() - frozen[0] - behind >= 60 and rec.finish()

    rec.run(script)


@recipe
def growing_lag(rec: Recording) -> None:
    rec.create_topic()
    keys = itertools.cycle([f"k{i}" for i in range(200)])
    rec.mark_fault()

    def script(tick: Tick) -> bool:
        rec.send(keyed(itertools.islice(keys, 1000)), key_field="key")
        return (tick.batches >= 6 or tick.elapsed >= 75) and rec.finish()

    rec.run(script)


@recipe
def surge_past_capacity(rec: Recording) -> None:
    rec.create_topic()
    names = [f"k{i}" for i in range(200)]
    rec.send(keyed(names), key_field="key")  # every key once: the state holds 200 from the start
    keys = itertools.cycle(names)

    def script(tick: Tick) -> bool:
        if tick.batches < TRICKLE_BATCHES:
            rec.send(keyed(itertools.islice(keys, 20)), key_field="key")
            return False
        rec.mark_fault()
        rec.send(keyed(itertools.islice(keys, 1000)), key_field="key")
        return (tick.batches >= TRICKLE_BATCHES + 4 or tick.elapsed >= 120) and rec.finish()

    rec.run(script)


@recipe
def tight_watermark_drops_valid_rows(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()

    def script(tick: Tick) -> bool:
        if tick.batches < 3:
            rec.send(clicks.now(40))
            return False
        rec.mark_fault()
        rec.send(clicks.now(40, late=(30.0, 60.0), share=0.2))
        return tick.batches >= 8 and rec.finish()

    rec.run(script)


@recipe
def checkpoint_damage(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    rec.run(until_batches(5, steady(rec, clicks)))
    store = rec.lake.checkpoint(rec.scenario.stream) / "state" / "0" / "0"
    newest = max(store.glob("*.changelog"), key=lambda p: int(p.name.split(".")[0]))
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 2])  # the disk filled up while it was written
    rec.mark_fault()


@recipe
def partition_count_change(rec: Recording) -> None:
    rec.create_topic()
    clicks = Clicks()
    rec.run(until_batches(4, steady(rec, clicks)))
    conf = rec.spark.conf
    before = conf.get("spark.sql.shuffle.partitions")
    conf.set("spark.sql.shuffle.partitions", "4")  # the deployment's new setting
    rec.mark_fault()
    try:
        send = steady(rec, clicks)
        rec.run(lambda tick: send(tick) or (tick.batches >= 3 and rec.finish()))
    finally:
        conf.set("spark.sql.shuffle.partitions", str(before))


@recipe
def crashed_run(rec: Recording) -> None:
    rec.create_topic()
    keys = itertools.cycle([f"k{i}" for i in range(20)])

    def script(tick: Tick) -> bool:
        batch = list(itertools.islice(keys, 20))
        if tick.batches >= 4 and rec.fault_at is None:
            rec.mark_fault()
            batch.append(POISON)
        rec.send(keyed(batch), key_field="key")
        return False  # the query dies

    rec.run(script)


@recipe
def rebuilt_upstream(rec: Recording) -> None:
    from platform_pipelines.runtime.reprocess import plan_reprocess
    from platform_pipelines.runtime.reprocess_rebuild import rebuild
    from platform_pipelines.runtime.reprocess_switch import switch
    from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams

    rec.create_topic()
    clicks = Clicks()
    rec.run(until_batches(5, steady(rec, clicks)))
    rec.send(clicks.now(200))
    registry = builtin_streams(BuiltinSettings(clickstream_topic=rec.scenario.topic))
    plan = plan_reprocess(registry, "clickstream_raw", "earliest", "notify", rebuild_id="r1")
    rebuild(rec.spark, rec.lake, rec.bootstrap, registry, plan)
    switch(rec.spark, rec.lake, registry, plan)
    rec.mark_fault()
