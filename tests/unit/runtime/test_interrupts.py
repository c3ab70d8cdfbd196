"""Stop requests: signals become a request, and so does the death of the parent process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from platform_pipelines.runtime.interrupts import GracefulStop, stop_requests
from tests.waiting import wait_for

# A parent that starts a child and then waits; the child reports when its stop request fires.
_PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    print(child.pid, flush=True)
    time.sleep(600)
    """
)
_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    from platform_pipelines.runtime.interrupts import stop_requests
    out = pathlib.Path(sys.argv[1])
    with stop_requests(watch_parent=True, poll_seconds=0.1) as stop:
        out.write_text("watching")
        while not stop.requested:
            time.sleep(0.05)
        out.write_text(stop.name)
    """
)


def test_a_signal_becomes_a_request_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_requests() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(lambda: stop.requested, 5, "the SIGTERM to be recorded")
        assert (stop.name, stop.count) == ("SIGTERM", 1)
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_child_whose_parent_is_killed_requests_a_stop(tmp_path: Path) -> None:
    out = tmp_path / "child.txt"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, _CHILD, str(out)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    try:
        wait_for(lambda: out.exists() and out.read_text() == "watching", 30, "the child to watch")
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        wait_for(lambda: out.read_text() != "watching", 10, "the child's stop request")
        assert out.read_text() == f"the exit of its run process (pid {parent.pid})"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child_pid, signal.SIGKILL)


def test_the_stop_line_names_each_stream_and_its_batch() -> None:
    line = GracefulStop("SIGINT", {"events": 7, "user_sessions": -1}).line()
    assert line == (
        "Stopped gracefully on SIGINT: events after batch 7, user_sessions before its first batch. "
        "The checkpoints are consistent; the next run resumes where these stopped."
    )


def test_the_stop_line_names_a_stream_stopped_before_its_watermark_moved() -> None:
    # user_sessions read events up to 10:24 with a 10 minute delay; its last batch ran with an
    # older watermark, and the batch that moves it to 10:14 is the one the stop came before.
    line = GracefulStop("SIGTERM", {"user_sessions": 4}, owed={"user_sessions": 1795342440}).line()
    assert line == (
        "Stopped gracefully on SIGTERM: user_sessions after batch 4. The checkpoints are "
        "consistent; the next run resumes where these stopped. user_sessions stopped before the "
        "batch that moves its watermark to 2026-11-22T10:14:00.000Z: what waits on the watermark "
        "(sessions to close, timers to fire, state to expire) happens when it next reads input."
    )
