"""Ctrl-C, SIGTERM and Dagster's cancel turned into a request, never an exception mid-call.

An exception raised by a signal while the main thread waits inside a py4j call lands in the middle
of a socket read and breaks the JVM connection ("reentrant call inside BufferedReader"), so the
queries can no longer be stopped cleanly. While ``stop_requests()`` is active, SIGINT and SIGTERM
only record the request; the supervisor sees it within a poll, lets each query finish the batch
it is running and raises ``GracefulStop``. A second request stops the queries at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from platform_pipelines.core.times import from_ms, iso

# A terminal's Ctrl-C reaches a Dagster step process twice: from the terminal, and forwarded by
# its run process (the multiprocess executor) a few milliseconds later. Signals this close to the
# first are the same request; one after it is a second, impatient one.
SAME_REQUEST_SECONDS = 1.0


@dataclass
class StopRequest:
    """Set when a stop was asked for: which signal first, and how many requests (signals
    ``SAME_REQUEST_SECONDS`` apart): a second Ctrl-C is impatient."""

    signal: int | None = None
    count: int = 0
    why: str | None = None  # a request not made by a signal, in words
    first_at: float | None = None  # time.monotonic() of the first signal

    @property
    def requested(self) -> bool:
        return self.signal is not None or self.why is not None

    @property
    def impatient(self) -> bool:
        """A second request came: stop at once, without waiting for the running batches."""
        return self.count >= 2

    def note(self, signum: int, now: float) -> None:
        """Record ``signum``, received at ``now`` (monotonic seconds).

        >>> stop = StopRequest()
        >>> stop.note(2, 10.0); stop.note(2, 10.05)  # the terminal's, then the forwarded one
        >>> (stop.name, stop.count, stop.impatient)
        ('SIGINT', 1, False)
        >>> stop.note(2, 12.0)
        >>> stop.impatient
        True
        """
        if self.first_at is None:
            self.signal, self.first_at, self.count = signum, now, 1
        elif now - self.first_at >= SAME_REQUEST_SECONDS:
            self.count += 1

    @property
    def name(self) -> str:
        if self.why:
            return self.why
        return signal.Signals(self.signal).name if self.signal else "stop"


@dataclass
class GracefulStop(BaseException):
    """The run was asked to stop and its queries stopped cleanly; ``stopped`` maps each stream to
    its last completed batch (-1 when none completed in this run); ``abandoned`` names the
    streams whose running batch the stop did not wait for (a second request, or a batch that
    outran the wait): it runs again on the next start."""

    reason: str
    stopped: dict[str, int] = field(default_factory=dict)
    abandoned: list[str] = field(default_factory=list)
    # stream -> the watermark (epoch seconds) its batches imply and its last batch did not
    # apply: Spark applies it in a batch the stop came before (``core.spark_progress``)
    owed: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        """One line for the run log.

        >>> GracefulStop("SIGINT", {"events": 9}, ["events"]).line()
        'Stopped on SIGINT without waiting for the running batch of events (it runs again on the next start): events after batch 9. The checkpoints are consistent; the next run resumes where these stopped.'
        """
        where = ", ".join(
            f"{name} after batch {batch}" if batch >= 0 else f"{name} before its first batch"
            for name, batch in self.stopped.items()
        )
        how = f"gracefully on {self.reason}"
        if self.abandoned:
            cut = ", ".join(self.abandoned)
            how = (
                f"on {self.reason} without waiting for the running batch of {cut} (it runs "
                "again on the next start)"
            )
        owed = "".join(
            f" {name} stopped before the batch that moves its watermark to {iso(from_ms(int(at * 1000)))}: "
            "what waits on the watermark (sessions to close, timers to fire, state to expire) "
            "happens when it next reads input."
            for name, at in self.owed.items()
        )
        return (
            f"Stopped {how}: {where or 'no query was running'}. The checkpoints are consistent; "
            f"the next run resumes where these stopped.{owed}"
        )


@contextmanager
def stop_requests(watch_parent: bool = False, poll_seconds: float = 1.0) -> Iterator[StopRequest]:
    """Within the block, SIGINT and SIGTERM set the yielded request instead of raising.

    With ``watch_parent`` the request is also set when the process that started this one exits
    (its parent pid changes): a Dagster step process whose run process was killed stops its
    queries instead of running on as an orphan that holds the checkpoints.

    Outside the main thread signals cannot be handled; the request then never fires and the
    previous behaviour stays.
    """
    request = StopRequest()
    done = threading.Event()
    if watch_parent:
        parent = os.getppid()

        def watch() -> None:
            while not done.wait(poll_seconds):
                if os.getppid() != parent:
                    request.why = f"the exit of its run process (pid {parent})"
                    return

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if threading.current_thread() is not threading.main_thread():
        try:
            yield request
        finally:
            done.set()
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in signals}

    def record(signum: int, frame: object) -> None:
        request.note(signum, time.monotonic())

    for sig in signals:
        signal.signal(sig, record)
    try:
        yield request
    finally:
        done.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
