"""A stream lock that holds across machines: two processes that share only the lock database
(PLATFORM_LOCK_DATABASE_URL, a real PostgreSQL server) and a checkpoint's location string can
never run one checkpoint at once.

Each "machine" is a process with a working directory of its own, and the checkpoint location is
the same relative path (``lake/checkpoints/<stream>``) or the same ``memory://`` URI (an object
store that each process has to itself): the two processes name the same location but share no
folder, so no local file lock could keep them apart; only the database does.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from pydantic import SecretStr

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime import lock_postgres
from platform_pipelines.runtime.lock import (
    Checkpoint,
    CheckpointBusyError,
    CheckpointLocks,
    LockLostError,
    holder,
    locked_streams,
    retire,
)
from platform_pipelines.runtime.postgres_server import LocalPostgres
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.catalog import load_registry
from platform_pipelines.streams.query import StreamContext
from tests.fixtures.postgres import fresh_database
from tests.waiting import wait_for

# The PostgreSQL server is the Dagster instance's kind of database (tests/fixtures/postgres.py);
# these tests share the marker of the other tests that need it.
pytestmark = pytest.mark.postgres

# Another machine: takes the locks of its arguments' checkpoints, says so, holds them until killed.
HOLDER = """
import sys
from pathlib import Path
from platform_pipelines.runtime.lock import CheckpointLocks

kind, owner, *names = sys.argv[1:]
if kind == "memory":
    from upath import UPath
    where = {n: UPath(f"memory://lake/checkpoints/{n}") for n in names}
else:
    where = {n: Path("lake/checkpoints", n) for n in names}
with CheckpointLocks(where, owner=owner):
    print("holding", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def lock_database(postgres_server: LocalPostgres) -> str:
    """The URL of a new, empty database on the test run's PostgreSQL server."""
    db = fresh_database(postgres_server, "locks")
    return f"postgresql://{db.user}:{db.password}@{db.host}:{db.port}/{db.database}"


@pytest.fixture
def settings(lock_database: str) -> PlatformSettings:
    return PlatformSettings(lock_database_url=SecretStr(lock_database))


@pytest.fixture
def machines(
    tmp_path: Path, lock_database: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start a holder on "machine 1" (its own working directory); this test process is
    "machine 2" (another working directory). Holders still running at the end are killed."""
    one, two = tmp_path / "machine1", tmp_path / "machine2"
    one.mkdir()
    two.mkdir()
    monkeypatch.chdir(two)
    started: list[subprocess.Popen[str]] = []

    def start(kind: str, owner: str, *names: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PLATFORM_LOCK_DATABASE_URL": lock_database}
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, kind, owner, *names],
            cwd=one,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        started.append(proc)
        line = proc.stdout.readline() if proc.stdout else ""
        assert line == "holding\n", proc.stderr.read() if proc.stderr else line
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.communicate(timeout=30)


def checkpoint(kind: str, name: str) -> Checkpoint:
    """The location both machines name: a relative folder, or an object-store URI."""
    if kind == "memory":
        upath = pytest.importorskip("upath")
        return upath.UPath(f"memory://lake/checkpoints/{name}")  # type: ignore[no-any-return]
    return Path("lake/checkpoints", name)


@pytest.mark.parametrize("kind", ["folder", "memory"])
def test_a_run_on_another_machine_is_refused_naming_the_holder_until_the_holder_is_killed(
    kind: str, machines: Callable[..., subprocess.Popen[str]], settings: PlatformSettings
) -> None:
    events, sessions = checkpoint(kind, "events"), checkpoint(kind, "user_sessions")
    first = machines(kind, "run 1a2b3c4d of all_streams", "events")

    with pytest.raises(CheckpointBusyError) as refused:
        CheckpointLocks(
            {"events": events}, owner="run 5e6f7a8b of stream_events", settings=settings
        ).__enter__()
    assert str(refused.value) == (
        f"Stream 'events' is already running: run 1a2b3c4d of all_streams on host "
        f"{socket.gethostname()} (pid {first.pid}) holds its checkpoint {events}. Stop that run "
        "first; two queries on one checkpoint would corrupt it."
    )
    assert locked_streams([("events", events), ("user_sessions", sessions)], settings) == ["events"]
    assert {k: v for k, v in holder(events, settings).items() if k != "taken_at"} == {
        "owner": "run 1a2b3c4d of all_streams",
        "host": socket.gethostname(),
        "pid": first.pid,
    }
    assert not Path("lake").exists()  # the lock itself touched no file system

    first.kill()  # SIGKILL: no clean-up runs; the server sees the session's socket close
    first.wait(timeout=30)
    wait_for(
        lambda: locked_streams([("events", events)], settings) == [],
        30,
        "PostgreSQL to release the killed holder's lock",
    )
    with CheckpointLocks(
        {"events": events}, owner="run 5e6f7a8b of stream_events", settings=settings
    ) as locks:
        locks.check()  # held, so no LockLostError
        assert holder(events, settings)["pid"] == os.getpid()
        assert locked_streams([("events", events)], settings) == ["events"]
    assert locked_streams([("events", events)], settings) == []


def test_locks_are_all_or_none_across_machines(
    machines: Callable[..., subprocess.Popen[str]], settings: PlatformSettings
) -> None:
    events, sessions = checkpoint("folder", "events"), checkpoint("folder", "user_sessions")
    machines("folder", "run 1a2b3c4d of stream_user_sessions", "user_sessions")
    both = {"events": events, "user_sessions": sessions}

    with pytest.raises(CheckpointBusyError, match="Stream 'user_sessions' is already running"):
        CheckpointLocks(both, owner="run 5e6f7a8b of all_streams", settings=settings).__enter__()
    # events was taken first, then given back when user_sessions was refused
    assert locked_streams(both.items(), settings) == ["user_sessions"]
    with CheckpointLocks(
        {"events": events}, owner="run 9c0d1e2f of stream_events", settings=settings
    ):
        assert locked_streams(both.items(), settings) == ["events", "user_sessions"]


def test_a_retired_checkpoint_is_refused_with_the_lock_database(
    tmp_path: Path, settings: PlatformSettings
) -> None:
    old = tmp_path / "checkpoints" / "events"
    old.mkdir(parents=True)
    with CheckpointLocks(
        {"events": old}, owner="platform reprocess r1 (switch)", settings=settings
    ):
        retire(old, "rebuilt by platform reprocess as events@r1")

    with pytest.raises(
        CheckpointBusyError,
        match=r"was replaced \(rebuilt by platform reprocess "
        r"as events@r1\)\. Start the run again",
    ):
        CheckpointLocks({"events": old}, settings=settings).__enter__()
    assert locked_streams([("events", old)], settings) == []  # the refusal gave the lock back


def test_a_holder_whose_database_session_ends_learns_it_lost_the_lock(
    postgres_server: LocalPostgres, lock_database: str, settings: PlatformSettings
) -> None:
    events = Path("/lake/checkpoints/events")
    database = lock_database.rsplit("/", 1)[1]
    with CheckpointLocks({"events": events}, owner="run 1a2b3c4d", settings=settings) as locks:
        ended = postgres_server.sql(
            database, "SELECT pg_terminate_backend(backend_pid) FROM platform_stream_locks"
        )
        assert ended == [["t"]]
        with pytest.raises(LockLostError) as lost:
            locks.check()
        assert locked_streams([("events", events)], settings) == []
    assert re.fullmatch(
        r"Lost the locks of /lake/checkpoints/events in dagster@127\.0\.0\.1:\d+/locks_\w+: "
        r"another run may take them now, so stop this run\. Cause: server closed the connection "
        r"unexpectedly .*",
        str(lost.value),
    ), str(lost.value)


def test_the_lock_session_asks_the_server_to_end_it_when_its_machine_is_gone(
    lock_database: str,
) -> None:
    conn = lock_postgres.connect(lock_database)
    try:
        cursor = conn.cursor()
        shown = []
        for setting in (
            "tcp_keepalives_idle",
            "tcp_keepalives_interval",
            "tcp_keepalives_count",
            "tcp_user_timeout",
            "idle_session_timeout",
        ):
            cursor.execute(f"SHOW {setting}")
            shown.append(cursor.fetchone()[0])
    finally:
        conn.close()
    assert shown == ["30", "10", "3", "60000", "0"]  # s, s, probes, ms; never ended for idling
    assert lock_postgres.RELEASE_BOUND_SECONDS == 60


def test_run_streams_refuses_a_stream_another_machine_runs_before_starting_a_jvm(
    machines: Callable[..., subprocess.Popen[str]],
    lock_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = machines("folder", "run 1a2b3c4d of all_streams", "events")
    monkeypatch.setenv("PLATFORM_LOCK_DATABASE_URL", lock_database)
    events = load_registry(PlatformSettings(stream_modules="")).get("events")
    # No SparkSession: anything that reached Spark would fail on None, not with the refusal.
    ctx = StreamContext(None, Lakehouse(Path("lake")), "localhost:9")  # type: ignore[arg-type]

    busy = (
        rf"all_streams on host \S+ \(pid {first.pid}\) holds its checkpoint lake/checkpoints/events"
    )
    with pytest.raises(CheckpointBusyError, match=busy):
        run_streams(ctx, [events], RunOptions(mode="catch_up"), lambda name, progress: None)


@pytest.mark.dagster
def test_the_stream_job_fails_as_checkpoint_busy_when_another_machine_runs_the_stream(
    machines: Callable[..., subprocess.Popen[str]],
    lock_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = machines("folder", "run 1a2b3c4d of all_streams", "events")
    monkeypatch.setenv("PLATFORM_LOCK_DATABASE_URL", lock_database)
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", "lake")  # the same location as machine 1's
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path / "local"))
    from platform_pipelines.definitions import defs

    result = defs.resolve_job_def("stream_events").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )

    failure = result.failure_data_for_node("run_stream_events")
    assert failure is not None and failure.user_failure_data is not None
    assert failure.user_failure_data.description == (
        f"Stream 'events' is already running: run 1a2b3c4d of all_streams on host "
        f"{socket.gethostname()} (pid {first.pid}) holds its checkpoint lake/checkpoints/events. "
        "Stop that run first; two queries on one checkpoint would corrupt it."
    )
    assert failure.user_failure_data.metadata["platform/failure"].value == "checkpoint_busy"
    # refused before its SparkSession: it never marked the stream started
    assert result.asset_materializations_for_node("run_stream_events") == []
