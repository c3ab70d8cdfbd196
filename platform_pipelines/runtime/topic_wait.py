"""Streams whose Kafka topic does not exist yet: they wait, and start by themselves once it does.

A run launched before one of its topics exists (its producer is not deployed yet) neither fails
nor holds back the streams whose inputs exist. The streams that read a missing topic, and the
streams of the run downstream of them, wait: the run records them as ``waiting`` (the liveness
check reports it, with the command that creates the topic), asks the broker every few seconds
whether the topic exists, and then runs them as it runs every stream: catch-up wave by wave,
upstream first, then their continuous triggers. A catch-up run does not wait for a topic once
nothing else runs: it had nothing to catch up on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kafka.errors import KafkaError
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.health.liveness import create_topic_command
from platform_pipelines.kafka.reachability import reachable
from platform_pipelines.kafka.security import KafkaSecurityError
from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.runtime.query_state import thread_alive
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.streams.declare import Stream

TOPIC_CHECK_SECONDS = 5.0  # how often the broker is asked whether a missing topic exists now
Phase = Literal["catch_up", "continuous"]  # a run's two phases (see ``runner``)
Start = Callable[[Stream, Phase], StreamingQuery]
Note = Callable[[str, str], None]


def missing_topics(
    bootstrap: str, topics: Collection[str], timeout_s: float = 5.0
) -> set[str] | None:
    """The topics among ``topics`` that the broker does not have; None when it cannot tell (it
    does not answer, or refuses the platform's clients: the broker watch reports that)."""
    from platform_pipelines.kafka.admin import end_offsets_many

    if not topics:
        return set()
    if not reachable(bootstrap):
        return None
    try:
        found = end_offsets_many(bootstrap, sorted(set(topics)), timeout_s, skip_missing=True)
    except (KafkaError, KafkaSecurityError, OSError):
        return None
    return set(topics) - set(found)


def waiting_streams(streams: Sequence[Stream], missing: Collection[str]) -> dict[str, str]:
    """``{stream: topic}`` for each of ``streams`` (upstream first) that reads a ``missing``
    topic, or reads the table of a stream of the run that waits (its input may not exist).

    >>> from types import SimpleNamespace as S
    >>> raw = S(name="raw", table="raw", upstream="beats", topic="beats")
    >>> status = S(name="status", table="status", upstream="raw", topic=None)
    >>> clicks = S(name="clicks", table="clicks", upstream="clicks_topic", topic="clicks_topic")
    >>> waiting_streams([raw, status, clicks], {"beats"})
    {'raw': 'beats', 'status': 'beats'}
    """
    writers = {s.table: s.name for s in streams}
    waits: dict[str, str] = {}
    for stream in streams:
        parent = writers.get(stream.upstream)
        if stream.topic is not None and stream.topic in missing:
            waits[stream.name] = stream.topic
        elif parent in waits:
            waits[stream.name] = waits[parent]
    return waits


def waiting_note(topic: str) -> str:
    """The run log's line for a stream that waits for ``topic``."""
    return (
        f"waits for the Kafka topic {topic}, which does not exist yet: it starts by itself once "
        f"the topic exists (create it with `{create_topic_command(topic)}`)"
    )


@dataclass
class _Group:
    """The streams waiting for one topic: their catch-up waves still to run, the wave running."""

    topic: str
    waves: list[list[Stream]]
    continuous: list[Stream]
    started: bool = False
    done: bool = False
    running: list[str] = field(default_factory=list)  # the streams of the running wave


class TopicWait:
    """The run's waiting streams, grouped by the topic they wait for; ``poll`` (on every poll of
    the supervisor) starts each group once its topic exists, and its next phase once the last
    one ended."""

    def __init__(
        self,
        bootstrap: str,
        groups: Mapping[str, tuple[list[list[Stream]], list[Stream]]],
        start: Start,
        supervisor: Supervisor,
        on_note: Note,
        every_seconds: float = TOPIC_CHECK_SECONDS,
    ) -> None:
        """``groups``: ``{topic: (catch-up waves, streams that then run continuously)}``."""
        self._bootstrap = bootstrap
        self._groups = [
            _Group(t, [list(w) for w in waves], list(c)) for t, (waves, c) in groups.items()
        ]
        self._start = start
        self._supervisor = supervisor
        self._note = on_note
        self._every = every_seconds
        self._next_check = time.monotonic() + every_seconds
        self._started: list[str] = []  # every stream started here, for ``idle``

    @property
    def never_started(self) -> list[Stream]:
        """The waiting streams whose topic has not appeared (yet)."""
        return [s for g in self._groups if not g.started for wave in g.waves for s in wave]

    def should_wait(self) -> bool:
        """Whether the run has more to do here: a group is between phases, or a group that has
        a continuous stream still waits for its topic."""
        return any(
            (g.started and not g.done) or (not g.started and g.continuous) for g in self._groups
        )

    def poll(self) -> None:
        """Advance the started groups, and every few seconds ask the broker for the others."""
        for group in self._groups:
            if group.started and not group.done:
                self._advance(group)
        pending = [g for g in self._groups if not g.started]
        if not pending or time.monotonic() < self._next_check:
            return
        self._next_check = time.monotonic() + self._every
        missing = missing_topics(self._bootstrap, [g.topic for g in pending])
        if missing is None:  # the broker cannot tell now: ask again later
            return
        for group in pending:
            if group.topic not in missing:
                group.started = True
                for stream in (s for wave in group.waves for s in wave):
                    self._note(stream.name, f"the Kafka topic {group.topic} exists now: starting")
                self._advance(group)

    def idle(self, stop: StopRequest, watch: Callable[[], None], poll_seconds: float = 1.0) -> None:
        """While no query of the run is active but the run should wait: call ``watch`` (which
        polls this) every ``poll_seconds`` until a query runs or died (for the supervisor to
        watch or report), there is nothing to wait for, or ``stop`` is set (``GracefulStop``)."""
        while self.should_wait() and not self._for_supervisor():
            if stop.requested:
                raise self._supervisor.graceful_stop(stop.name)
            watch()
            if not self._for_supervisor():
                time.sleep(poll_seconds)

    def _for_supervisor(self) -> bool:
        return any(self._live(name) for name in self._started)

    def _advance(self, group: _Group) -> None:
        """Start the group's next phase once its running one ended; a query that died is left
        to the supervisor, which starts it again or raises for it."""
        if any(self._live(name) for name in group.running):
            return
        group.running = []
        if not group.waves:
            group.done = True
            for stream in group.continuous:
                self._run(stream, "continuous")
            return
        for stream in group.waves.pop(0):
            group.running.append(self._run(stream, "catch_up"))

    def _live(self, name: str) -> bool:
        """Whether stream ``name``'s query runs, still finishes its last batch (a caught-up
        catch-up says it is inactive before that: ``catch_up_end``), or died (for the
        supervisor to restart or report): asked of the supervisor's query, which a restart
        replaces."""
        query = self._supervisor.query(name)
        return bool(query.isActive) or thread_alive(query) is True or query.exception() is not None

    def _run(self, stream: Stream, phase: Phase) -> str:
        caught_up = phase == "catch_up" and stream.processing_time_timers
        self._supervisor.add(
            stream.name,
            self._start(stream, phase),
            stop_when_caught_up=caught_up,
            restart=lambda: self._start(stream, phase),
            watermark=stream.watermark,
        )
        self._started.append(stream.name)
        return stream.name
