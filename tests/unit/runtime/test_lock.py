"""Only one query at a time may run on a stream's checkpoint; a refusal names the holder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from platform_pipelines.runtime.lock import (
    CheckpointBusyError,
    CheckpointLocks,
    LockDatabaseError,
    LockNotConfiguredError,
    describe_holder,
    holder,
    lock_backend,
    locked_streams,
)
from platform_pipelines.runtime.lock_postgres import lock_key
from platform_pipelines.settings import PlatformSettings


@pytest.fixture(autouse=True)
def file_locks(monkeypatch):
    """These tests are of the file lock (and of choosing it), whatever the shell has set."""
    monkeypatch.delenv("PLATFORM_LOCK_DATABASE_URL", raising=False)


def test_a_second_run_on_a_held_checkpoint_is_refused_naming_the_holder_until_released(tmp_path):
    checkpoints = {"events": tmp_path / "events", "user_sessions": tmp_path / "user_sessions"}

    with CheckpointLocks(checkpoints, owner="run 1a2b3c4d of all_streams"):
        with pytest.raises(CheckpointBusyError) as refused:
            CheckpointLocks({"events": tmp_path / "events"}).__enter__()
        assert locked_streams(checkpoints.items()) == ["events", "user_sessions"]
    assert (
        f"Stream 'events' is already running: run 1a2b3c4d of all_streams (pid {os.getpid()})"
        in str(refused.value)
    )
    assert locked_streams(checkpoints.items()) == []
    with CheckpointLocks({"events": tmp_path / "events"}):  # free again
        pass


def test_locks_are_all_or_nothing(tmp_path):
    with CheckpointLocks({"user_sessions": tmp_path / "user_sessions"}, owner="other"):
        with pytest.raises(CheckpointBusyError):
            CheckpointLocks(
                {"events": tmp_path / "events", "user_sessions": tmp_path / "user_sessions"}
            ).__enter__()
        assert locked_streams([("events", tmp_path / "events")]) == []


def test_another_process_cannot_take_a_held_lock(tmp_path):
    code = (
        "import sys; from pathlib import Path; "
        "from platform_pipelines.runtime.lock import CheckpointLocks, CheckpointBusyError\n"
        "try:\n"
        f"    CheckpointLocks({{'events': Path({str(tmp_path / 'events')!r})}}).__enter__()\n"
        "except CheckpointBusyError as e:\n    print(e); sys.exit(3)\n"
    )
    with CheckpointLocks({"events": tmp_path / "events"}, owner="run abc"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 3, result.stderr
    assert "run abc (pid" in result.stdout


def test_the_lock_key_of_a_location_is_the_same_in_every_process_and_release():
    # The key names the lock in PostgreSQL: a change would let an old and a new version of the
    # platform run one checkpoint at once.
    assert lock_key("s3a://lake/checkpoints/events") == -5432717117420941619
    assert lock_key(str(Path("/data/lakehouse/checkpoints/events"))) == 631231626600865438
    code = "from platform_pipelines.runtime.lock_postgres import lock_key; print(lock_key('x'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(other.stdout) == lock_key("x")
    assert -(2**63) <= lock_key("x") < 2**63


def test_the_lock_database_holds_every_checkpoint_when_configured_else_a_file_lock():
    url = "postgresql://dagster:pw@db:5432/dagster"
    assert lock_backend(["/data/checkpoints/events"], url) == "postgres"
    assert lock_backend(["s3a://lake/checkpoints/events", "/data/x"], url) == "postgres"
    assert lock_backend(["/data/checkpoints/events", "relative/events"], None) == "file"
    assert lock_backend([], None) == "file"


def test_an_object_store_checkpoint_without_a_lock_database_is_refused_naming_the_setting(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    no_database = PlatformSettings(lock_database_url=None)
    events = "s3a://lake/checkpoints/events"
    refusal = (
        "Cannot lock the checkpoint s3a://lake/checkpoints/events: a file lock holds only on a "
        "local folder, not on an object store. Set PLATFORM_LOCK_DATABASE_URL to a PostgreSQL "
        "database that every machine running streams reaches (postgresql://user:password@host:"
        "port/db, e.g. the Dagster instance's), then start again."
    )
    with pytest.raises(LockNotConfiguredError) as refused:
        CheckpointLocks(
            {"local": tmp_path / "local", "events": events}, settings=no_database
        ).__enter__()
    assert str(refused.value) == refusal
    with pytest.raises(LockDatabaseError, match="PLATFORM_LOCK_DATABASE_URL"):
        locked_streams([("events", events)], no_database)
    with pytest.raises(LockDatabaseError, match="PLATFORM_LOCK_DATABASE_URL"):
        holder(events, no_database)
    assert list(tmp_path.iterdir()) == []  # nothing locked, nothing created, not even "s3a:"


def test_no_lock_is_taken_and_no_database_reached_for_no_checkpoints():
    unreachable = PlatformSettings(lock_database_url=SecretStr("postgresql://u:pw@127.0.0.1:1/db"))
    with CheckpointLocks({}, settings=unreachable) as locks:  # a runner told lock=False
        locks.check()
    assert locked_streams([], unreachable) == []


def test_a_lock_database_error_names_the_database_but_never_the_password():
    secret = "s3cr3t-Pa55"
    unreachable = PlatformSettings(
        lock_database_url=SecretStr(f"postgresql://dagster:{secret}@127.0.0.1:1/db")
    )
    with pytest.raises(LockDatabaseError) as refused:
        CheckpointLocks(
            {"events": "s3a://lake/checkpoints/events"}, settings=unreachable
        ).__enter__()
    assert str(refused.value).startswith(
        "Could not use the lock database dagster@127.0.0.1:1/db (PLATFORM_LOCK_DATABASE_URL); "
        "check that the server runs and that the URL, user and password are right. PostgreSQL "
        'said: connection to server at "127.0.0.1", port 1 failed: Connection refused'
    )
    # libpq's own message for this URL quotes it whole, password included
    invalid = PlatformSettings(
        lock_database_url=SecretStr(f"postgresql://dagster:{secret}@[::1/db")
    )
    with pytest.raises(LockDatabaseError) as malformed:
        locked_streams([("events", "s3a://lake/checkpoints/events")], invalid)
    assert str(malformed.value) == (
        "PLATFORM_LOCK_DATABASE_URL is not a valid PostgreSQL URL: write it as "
        "postgresql://user:password@host:port/database (percent-encode special characters)."
    )
    assert secret not in str(refused.value) + str(malformed.value)


def test_a_refusal_names_the_holder_and_its_host_when_known():
    held = {"owner": "run 1a2b of all_streams", "host": "worker-2", "pid": 123}
    assert describe_holder(held) == "run 1a2b of all_streams on host worker-2 (pid 123)"
    assert describe_holder({"owner": "run 1a2b", "pid": 7}) == "run 1a2b (pid 7)"
    assert describe_holder({}) == "another process (pid ?)"
