"""A Dagster run driven from a terminal: its own lines printed, a stop that ends as promised.

The run is `dagster job execute` in a child process of its own session, on the project's Dagster
instance (its runs and logs are the UI's). Its output (Dagster's engine events, its warnings and
the run's console log) goes to the log file; the lines the run's ops log are read from the
run's event log as they are written and printed, with a failure's message.

The terminal's Ctrl-C, or a SIGTERM or SIGHUP, reaches only this process (the child has a session
of its own); the first is passed on as Dagster's own cancel: the run is marked CANCELING and its
process gets a SIGINT, which it forwards to each step (a stream op lets its running batches
commit, stops its queries and logs one line saying where each stopped). A second one is sent to
the steps directly: their queries stop at once. Run in a terminal's process group instead, `dagster job execute` lets a
Ctrl-C kill the `tail` processes that mirror a step's output (their KeyboardInterrupt
tracebacks, and no more step lines), logs the run's RUN_CANCELED at ERROR with the stack trace
of the executor's interrupt, says the run "resulted in failure" and exits 1: none of it can be
changed from the job's code.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import dagster as dg

from platform_pipelines.cli.main import shown_path
from platform_pipelines.runtime.interrupts import SAME_REQUEST_SECONDS
from platform_pipelines.settings import get_settings

RUN_TAG = "platform/terminal"  # a token naming the run this process started
POLL_SECONDS = 0.3
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
FORWARD_SECONDS = 0.5  # more than the run process takes to forward a SIGINT to its steps


@dataclass
class RunEnd:
    """How a run ended: its id ("" when it never started), status and the first signal that
    asked it to stop."""

    run_id: str
    status: str
    signal: int | None = None
    output: list[str] = field(default_factory=list)  # the child's last lines

    @property
    def exit_code(self) -> int:
        """0 when the run succeeded; 128 + the signal's number when a signal stopped it, as a
        shell reports a program a signal ended (130 for Ctrl-C, 143 for SIGTERM), 130 when it
        was canceled otherwise (the UI's Terminate) and when a signal stopped this before the run
        started; 1 when it failed, or never started for another reason.

        >>> RunEnd("r", "SUCCESS").exit_code, RunEnd("r", "CANCELED", 15).exit_code
        (0, 143)
        >>> RunEnd("r", "CANCELED").exit_code, RunEnd("r", "FAILURE", 2).exit_code
        (130, 1)
        >>> RunEnd("", "NOT_STARTED", 2).exit_code, RunEnd("", "NOT_STARTED").exit_code
        (130, 1)
        """
        if self.status == "SUCCESS":
            return 0
        if self.status == "CANCELED" or (self.status == "NOT_STARTED" and self.signal):
            return 128 + (self.signal or signal.SIGINT)
        return 1


@dataclass
class _Stops:
    """The stop requests this process received; ``pass_on`` passes them on to the run."""

    signal: int | None = None  # the first one
    count: int = 0
    passed: int = 0
    first_passed_at: float = 0.0  # time.monotonic()

    def request(self, signum: int, frame: object) -> None:
        """Record a request (a signal handler: the main loop acts on it)."""
        self.signal = self.signal or signum
        self.count += 1

    def pass_on(
        self,
        child: subprocess.Popen[bytes],
        instance: dg.DagsterInstance,
        run_id: str,
        steps: set[int],
    ) -> None:
        """The first request becomes Dagster's cancel once the run has started: the run is
        marked CANCELING (so that it ends CANCELED, not "interrupted unexpectedly": a FAILURE)
        and its process gets a SIGINT, which it forwards to each step; a stream op lets its
        running batches commit. A later one goes to the steps directly: their queries stop at
        once. (The run process defers a SIGINT that comes before its run starts, and its run's
        start would overwrite a CANCELING status.)"""
        if self.count == self.passed or self.signal is None:
            return
        if self.passed == 0:
            run = instance.get_run_by_id(run_id) if run_id else None
            if run is None or run.status is not dg.DagsterRunStatus.STARTED:
                return  # passed on at a later poll (the child ends without a run otherwise)
            name = signal.Signals(self.signal).name
            instance.report_run_canceling(run, message=f"Stop requested by {name}.")
            _send(child.pid, signal.SIGINT)
            self.first_passed_at = time.monotonic()
        elif time.monotonic() - self.first_passed_at < SAME_REQUEST_SECONDS + FORWARD_SECONDS:
            return  # a step would take it for the first one, which its run process forwards
        else:
            for pid in steps:
                _send(pid, signal.SIGINT)
        self.passed = self.count


def run_job(
    job: str,
    configs: Sequence[Path],
    print_line: Callable[[str], None],
    tags: dict[str, str] | None = None,
) -> RunEnd:
    """Run ``job`` with the run config files ``configs`` until it ends, printing where Dagster's
    own output goes, then the lines its ops log (and a failure's message), with ``print_line``."""
    settings = get_settings()
    token = uuid.uuid4().hex
    settings.log_file.parent.mkdir(parents=True, exist_ok=True)
    if not settings.verbose:
        print_line(f"Dagster's own output goes to {shown_path(settings.log_file)}")
    stops = _Stops()
    # The instance's storage is made before the run process opens it: two processes creating
    # a new instance's SQLite databases at once leave one with two schema versions.
    with _handled(stops.request), dg.DagsterInstance.get() as instance:
        if stops.signal is not None:  # stopped before anything started
            return RunEnd("", "NOT_STARTED", stops.signal)
        child = subprocess.Popen(
            _command(job, configs, {**(tags or {}), RUN_TAG: token}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert child.stdout is not None
        output = _Output(child.stdout, settings.log_file, echo=settings.verbose)
        follower = _Follower(instance, token, print_line)
        while child.poll() is None:
            follower.poll()
            stops.pass_on(child, instance, follower.run_id, follower.steps)
            time.sleep(POLL_SECONDS)
        output.join(timeout=10)
        follower.poll()
        run = instance.get_run_by_id(follower.run_id) if follower.run_id else None
    status = run.status.value if run else "NOT_STARTED"
    return RunEnd(follower.run_id, status, stops.signal, output.last)


def _command(job: str, configs: Sequence[Path], tags: dict[str, str]) -> list[str]:
    return [
        *(sys.executable, "-m", "dagster", "job", "execute"),
        *("-m", "platform_pipelines.definitions", "-j", job),
        *("--tags", json.dumps(tags)),
        *(arg for path in configs for arg in ("-c", str(path))),
    ]


class _Follower:
    """Prints the new lines of the run tagged ``token`` on each ``poll``."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        token: str,
        print_line: Callable[[str], None],
    ) -> None:
        self._instance = instance
        self._token = token
        self._print = print_line
        self._cursor: str | None = None
        self.run_id = ""
        self.steps: set[int] = set()  # the run's step processes

    def poll(self) -> None:
        if not self.run_id:
            found = self._instance.get_run_ids(dg.RunsFilter(tags={RUN_TAG: self._token}))
            if not found:
                return
            self.run_id = found[0]
        while True:
            page = self._instance.get_records_for_run(self.run_id, cursor=self._cursor)
            self._cursor = page.cursor
            for record in page.records:
                self._show(record.event_log_entry)
            if not page.has_more:
                return

    def _show(self, entry: Any) -> None:
        event = entry.dagster_event
        if event is None:
            if entry.level >= logging.INFO:
                self._print(entry.user_message)
        elif event.event_type is dg.DagsterEventType.STEP_START and event.pid:
            self.steps.add(event.pid)
        elif event.event_type is dg.DagsterEventType.STEP_FAILURE:
            self._print(failure_line(event.step_key, event.step_failure_data))


def failure_line(step: str, failure: Any) -> str:
    """A step's failure in one line. An interrupt is not an error: a stream op records a stop
    request while its streams run, so one that was interrupted had none running (its JVM was
    starting, or its streams had ended)."""
    if getattr(failure.error_source, "value", None) == "INTERRUPT":
        return f"{step} was interrupted while none of its streams ran"
    return f"{step} failed: {failure_message(failure)}"


def failure_message(failure: Any) -> str:
    """What a step failure says: a ``dg.Failure``'s description, else the error's first line."""
    if failure.user_failure_data is not None and failure.user_failure_data.description:
        return str(failure.user_failure_data.description)
    lines = [line for line in (failure.error.message if failure.error else "").splitlines()]
    return next((line for line in lines if line.strip()), "(no message)")


class _Output:
    """Copies the child's output to the log file (and the terminal's stderr with ``echo``),
    keeping its last lines for a run that never started."""

    def __init__(self, stream: IO[bytes], log: Path, echo: bool) -> None:
        self.last: list[str] = []
        self._tail: deque[str] = deque(maxlen=20)
        self._thread = threading.Thread(target=self._copy, args=(stream, log, echo), daemon=True)
        self._thread.start()

    def _copy(self, stream: IO[bytes], log: Path, echo: bool) -> None:
        with log.open("ab") as out:
            for line in stream:
                out.write(line)
                out.flush()
                self._tail.append(line.decode(errors="replace").rstrip())
                if echo:
                    sys.stderr.buffer.write(line)
                    sys.stderr.flush()

    def join(self, timeout: float) -> None:
        """Wait for the child's output to end (``timeout`` at most: a process it started may
        hold the pipe longer)."""
        self._thread.join(timeout)
        self.last = list(self._tail)


@contextmanager
def _handled(handler: Callable[[int, object], None]) -> Iterator[None]:
    """Within the block, ``STOP_SIGNALS`` call ``handler`` instead of ending this process."""
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _send(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, sig)
