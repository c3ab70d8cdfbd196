"""What the local servers (PostgreSQL, the Kafka nodes, the Spark daemons) share as processes:
ports on loopback, a pid told apart from a reused one, start and stop, a state file, a log.

Each server writes a JSON state file (pid, ports) while it runs so that another process (the CLI, a
second test run) finds it; a file whose process is gone is removed when read. Servers listen on
127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def port_open(port: int, host: str = HOST) -> bool:
    """Something accepts TCP connections on ``host:port`` (given 0.5 s to answer)."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def can_bind(port: int) -> bool:
    """``port`` of 127.0.0.1 can be bound now (as a JVM binds: with ``SO_REUSEADDR``)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def free_port(taken: Collection[int] = ()) -> int:
    """A port of 127.0.0.1 that nothing holds now, and none of ``taken``."""
    while True:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            return port


def command_line(pid: int) -> bytes | None:
    """The NUL-separated command line of process ``pid``; None when it cannot be read (the
    process is gone, or the system has no ``/proc``)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def pid_runs(pid: int, marker: bytes) -> bool:
    """Process ``pid`` is alive and its command line holds ``marker``: a pid that another program
    reused since it was written down is not ours. True when the system cannot tell."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = command_line(pid)
    return cmdline is None or marker in cmdline


def launch(
    cmd: list[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in the background, its output appended to ``log``. It gets a session of its
    own: it outlives a Ctrl-C in the shell that started it, and it leads a process group that
    its children (e.g. Spark's executors) join."""
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )


def wait_gone(pids: Collection[int], alive: Callable[[int], bool], timeout_s: float) -> bool:
    """Wait until no pid of ``pids`` is ``alive``; False when some still are after
    ``timeout_s``. ``alive`` should reap a child (``Popen.poll``), or it stays a zombie."""
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def terminate(
    pids: Collection[int], alive: Callable[[int], bool], timeout_s: float, group: bool = False
) -> bool:
    """SIGTERM every pid that is ``alive`` (with ``group``, the process group it leads), SIGKILL
    those left after ``timeout_s``; True once all are gone (10 s after the SIGKILL at most)."""
    kill = os.killpg if group else os.kill
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
        running = [pid for pid in pids if alive(pid)]
        for pid in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, sig)
        if wait_gone(running, alive, wait_s):
            return True
    return False


def read_state(path: Path) -> dict[str, Any] | None:
    """The JSON object in the state file ``path``; None when there is none (or it is unreadable)."""
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state


def live_state(path: Path, runs: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The state file ``path`` while ``runs`` says its server still runs; a file left behind by
    a dead server is removed, and None returned."""
    state = read_state(path)
    if state is None:
        return None
    if runs(state):
        return state
    path.unlink(missing_ok=True)
    return None


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` as the indented JSON that :func:`read_state` reads."""
    path.write_text(json.dumps(state, indent=2) + "\n")


def log_lines(log: Path) -> list[str]:
    """The lines of ``log``, or none when it cannot be read (e.g. not written yet)."""
    try:
        return log.read_text(errors="replace").splitlines()
    except OSError:
        return []


def java_errors(lines: list[str], limit: int = 8) -> list[str]:
    """The first ``limit`` lines of a Java server's log that say why it failed (``ERROR`` and
    ``Caused by``): a failed JVM logs its cause early, then many lines of orderly shutdown."""
    causes = [line for line in lines if " ERROR " in line or line.startswith("Caused by")]
    return causes[:limit]
