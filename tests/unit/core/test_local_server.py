"""What every local server shares, against real sockets and processes on this machine."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from platform_pipelines.core.local_server import (
    command_line,
    free_port,
    java_errors,
    launch,
    live_state,
    log_lines,
    pid_runs,
    port_open,
    terminate,
    write_state,
)
from tests.waiting import wait_for

# Ignores SIGTERM, as a server stuck in its shutdown would: only SIGKILL ends it.
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def alive(pid: int) -> bool:
    return pid_runs(pid, b"sleep")


def sleeper() -> subprocess.Popen[bytes]:
    """``sleep 30``, once its command line shows (it is empty for a moment during the exec)."""
    process = subprocess.Popen(["sleep", "30"])
    wait_for(lambda: b"sleep" in (command_line(process.pid) or b""), 10, "sleep", every=0.01)
    return process


def test_a_port_is_open_while_something_listens_and_a_free_port_avoids_the_taken_ones():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert port_open(port)
        assert free_port(taken={port}) != port
    assert not port_open(port)


def test_a_pid_runs_only_while_its_process_lives_with_the_marker_in_its_command_line():
    sleeping = sleeper()
    try:
        assert pid_runs(sleeping.pid, b"sleep")
        assert not pid_runs(sleeping.pid, b"kafka.Kafka")  # a reused pid is not ours
    finally:
        sleeping.kill()
        sleeping.wait()
    assert not pid_runs(sleeping.pid, b"sleep")


def test_a_state_file_is_returned_while_its_server_runs_and_removed_after(tmp_path: Path):
    state = tmp_path / "server.json"
    sleeping = sleeper()
    write_state(state, {"pid": sleeping.pid, "port": 1})
    try:
        assert live_state(state, lambda s: alive(s["pid"])) == {"pid": sleeping.pid, "port": 1}
    finally:
        sleeping.kill()
        sleeping.wait()
    assert live_state(state, lambda s: alive(s["pid"])) is None
    assert not state.exists()
    assert live_state(state, lambda s: True) is None  # no file, no server


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path: Path):
    stubborn = launch([sys.executable, "-c", STUBBORN], tmp_path / "out.log", tmp_path)
    wait_for(lambda: "ready" in (tmp_path / "out.log").read_text(), 10, "its SIGTERM handler")

    assert terminate([stubborn.pid], lambda pid: stubborn.poll() is None, timeout_s=0.5)
    assert stubborn.returncode == -9


def test_stopping_a_process_group_ends_the_children_it_started(tmp_path: Path):
    pid_file = tmp_path / "child.pid"
    parent = launch(
        ["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], tmp_path / "out.log", tmp_path
    )
    child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), 10, "the child"))

    assert terminate([parent.pid], lambda pid: parent.poll() is None, timeout_s=10, group=True)
    wait_for(lambda: not alive(child), 10, f"the end of the child {child}", every=0.05)


def test_the_errors_of_a_java_log_come_first_and_a_missing_log_has_no_lines(tmp_path: Path):
    log = tmp_path / "broker.log"
    log.write_text(
        "[t] INFO starting (kafka.Kafka)\n"
        "[t] ERROR Exiting Kafka due to fatal exception (kafka.Kafka)\n"
        "Caused by: java.net.BindException: Address already in use\n"
        "[t] INFO shut down completed (kafka.Kafka)\n"
    )

    assert java_errors(log_lines(log)) == [
        "[t] ERROR Exiting Kafka due to fatal exception (kafka.Kafka)",
        "Caused by: java.net.BindException: Address already in use",
    ]
    assert log_lines(tmp_path / "never-written.log") == []
