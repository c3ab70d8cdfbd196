"""Recipes of the scenarios on a trigger of 0, as ``events`` and ``security_alerts`` run.

Each batch starts as soon as the one before ends and reads what arrived meanwhile. A stream of
``overhead`` seconds a batch and ``cost`` seconds a row, fed ``rate`` rows a second, runs batches
of ``overhead / (1 - rate * cost)`` when ``rate * cost`` is below 1, and batches that grow without
end when it is not. The count of ``streams.SlowCount`` spends 4 ms on every event, on two state
partitions: about 460 rows a second on a two-core machine (the ``growing_lag`` recording).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from benchmarks.health_eval.harness import Recording, Tick
from benchmarks.health_eval.recipes import keyed, recipe
from platform_pipelines.runtime.run_options import RunOptions

BACK_TO_BACK = RunOptions(processing_time="0 seconds")
KEYS = [f"k{i}" for i in range(200)]


def paced(rec: Recording) -> Callable[[float], None]:
    """A script step that keeps ``rate`` keyed events a second flowing, by the clock (a tick
    comes about once a second, not exactly)."""
    keys = itertools.cycle(KEYS)
    sent = [0.0, time.monotonic()]  # events owed but not sent yet, and when they were counted

    def send(rate: float) -> None:
        now = time.monotonic()
        sent[0] += rate * (now - sent[1])
        sent[1] = now
        n = int(sent[0])
        if n:
            rec.send(keyed(itertools.islice(keys, n)), key_field="key")
            sent[0] -= n

    return send


@recipe
def back_to_back_surge_kept_up(rec: Recording) -> None:
    """A trickle, then 220 events a second (about half of what the count processes): its
    batches grow from the overhead alone to about twice that, then stay there."""
    rec.create_topic()
    send = paced(rec)
    surge: list[int] = []  # the batch the surge started at

    def script(tick: Tick) -> bool:
        if tick.batches < 3:
            send(20.0)
            return False
        surge[:] = surge or [tick.batches]
        send(220.0)
        return (tick.batches >= surge[0] + 15 or tick.elapsed >= 240) and rec.finish()

    rec.run(script, BACK_TO_BACK)


@recipe
def back_to_back_slightly_too_slow(rec: Recording) -> None:
    """A backlog of 10,000 events, then 500 a second: a few percent more than the count
    processes (about 490 a second in the recording). The first batch after the catch-up reads
    what arrived during it, so the batches are long from the start and grow by a few seconds
    each, as ``events`` did at 10,000 events/s in the reaction bench: the rates of long batches
    differ by less than ``behind_ratio``, and the lag stays within twice their rhythm."""
    rec.create_topic()
    rec.send(keyed(itertools.islice(itertools.cycle(KEYS), 10_000)), key_field="key")
    rec.mark_fault()
    send = paced(rec)

    def script(tick: Tick) -> bool:
        send(500.0)
        return (tick.batches >= 9 or tick.elapsed >= 330) and rec.finish()

    rec.run(script, BACK_TO_BACK)
