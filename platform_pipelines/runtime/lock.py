"""One query per checkpoint: an exclusive lock held on every checkpoint a run owns.

Two queries on one checkpoint (say `stream_events` and `all_streams` launched together) would
corrupt it. A run takes the locks of all its streams before it starts a JVM and holds them to its
end, so a second run is refused within a second, naming what holds the stream.

Two backends, chosen in one place (``lock_backend``): with ``PLATFORM_LOCK_DATABASE_URL`` set, a
PostgreSQL advisory lock per checkpoint (``runtime.lock_postgres``), which holds across machines
and for checkpoints on an object store; unset, an ``flock`` on ``<checkpoint>/.platform.lock``,
which holds between the processes of one machine only.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from platform_pipelines.runtime import lock_postgres
from platform_pipelines.runtime.lock_postgres import LockDatabaseError, LockLostError
from platform_pipelines.settings import PlatformSettings, get_settings

__all__ = [
    "CheckpointBusyError",
    "CheckpointLocks",
    "LockDatabaseError",
    "LockLostError",
    "LockNotConfiguredError",
    "describe_holder",
    "holder",
    "lock_backend",
    "locked_streams",
    "retire",
]

LOCK_FILE = ".platform.lock"
# Written into a checkpoint that a rebuild replaced (``runtime.reprocess_switch``): a run that found the
# old folder before the switch is refused when it takes the lock, instead of running on it.
RETIRED_FILE = "_retired"
DATABASE_VARIABLE = "PLATFORM_LOCK_DATABASE_URL"


class CheckpointPath(Protocol):
    """What the lock needs of a checkpoint location: ``pathlib.Path``, or a pathlib-like object
    for an object store (e.g. ``upath.UPath``); ``str()`` of it is its location."""

    def __truediv__(self, name: str) -> CheckpointPath: ...
    def exists(self) -> bool: ...
    def read_text(self) -> str: ...
    def write_text(self, data: str) -> int: ...


Checkpoint = CheckpointPath | str


class CheckpointBusyError(RuntimeError):
    """Another query (in this or another process) already runs on the stream's checkpoint."""


class LockNotConfiguredError(LockDatabaseError):
    """A checkpoint on an object store, and no lock database to hold it: a setting is missing."""


def lock_backend(locations: Iterable[str], database_url: str | None) -> Literal["postgres", "file"]:
    """Which lock holds checkpoints at ``locations``: PostgreSQL when a database is configured,
    else a file lock, which cannot hold a checkpoint that is not a local path (``scheme://``).

    >>> lock_backend(["/data/checkpoints/events"], None)
    'file'
    >>> lock_backend(["s3a://lake/checkpoints/events"], "postgresql://u:pw@db:5432/dagster")
    'postgres'
    """
    if database_url:
        return "postgres"
    remote = sorted(loc for loc in locations if "://" in loc)
    if remote:
        raise LockNotConfiguredError(
            f"Cannot lock the checkpoint {remote[0]}: a file lock holds only on a local folder, "
            f"not on an object store. Set {DATABASE_VARIABLE} to a PostgreSQL database that "
            "every machine running streams reaches (postgresql://user:password@host:port/db, "
            "e.g. the Dagster instance's), then start again."
        )
    return "file"


class CheckpointLocks:
    """Exclusive locks on the checkpoints of ``streams``; all or none are taken.

    The holder (``owner``, host, pid) is recorded so that a refusal can say who holds it.
    ``settings`` (default: the environment's) says which backend (``lock_backend``).
    """

    def __init__(
        self,
        checkpoints: Mapping[str, Checkpoint],
        owner: str = "",
        settings: PlatformSettings | None = None,
    ) -> None:
        self._checkpoints = dict(checkpoints)
        self._owner = owner
        self._settings = settings
        self._held: list[int] = []
        self._database: lock_postgres.AdvisoryLocks | None = None

    def __enter__(self) -> CheckpointLocks:
        if not self._checkpoints:
            return self
        url = _lock_database([str(c) for c in self._checkpoints.values()], self._settings)
        try:
            if url is not None:
                self._database = lock_postgres.AdvisoryLocks(url, self._owner)
                for name, checkpoint in self._checkpoints.items():
                    _lock_in_database(self._database, name, checkpoint)
            else:
                for name, checkpoint in self._checkpoints.items():
                    self._held.append(_lock(name, _local(checkpoint), self._owner))
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()

    def check(self) -> None:
        """Raise LockLostError when the locks are no longer held (the lock database's session
        ended). Cheap: call it on every poll of a long run. A file lock cannot be lost."""
        if self._database is not None:
            self._database.check()

    def release(self) -> None:
        while self._held:
            os.close(self._held.pop())  # closing the descriptor releases the flock
        if self._database is not None:
            self._database.release()  # ending the session releases its advisory locks
            self._database = None


def holder(checkpoint: Checkpoint, settings: PlatformSettings | None = None) -> dict[str, object]:
    """Who last took the lock of ``checkpoint`` (``{"owner", "pid"}``, with the lock database
    also ``"host"`` and ``"taken_at"``; empty when unknown)."""
    if (url := _lock_database([str(checkpoint)], settings)) is not None:
        return lock_postgres.holder(url, str(checkpoint))
    try:
        return dict(json.loads((_local(checkpoint) / LOCK_FILE).read_text() or "{}"))
    except (OSError, ValueError):
        return {}


def describe_holder(held: Mapping[str, object]) -> str:
    """``run 1a2b of all_streams on host worker-2 (pid 123)``, from what ``holder`` returns."""
    host = f" on host {held['host']}" if held.get("host") else ""
    return f"{held.get('owner') or 'another process'}{host} (pid {held.get('pid', '?')})"


def retire(checkpoint: Checkpoint, why: str) -> None:
    """Mark ``checkpoint`` as replaced (its lock must be held): no run can start on it again."""
    (_path(checkpoint) / RETIRED_FILE).write_text(why + "\n")


def locked_streams(
    checkpoints: Iterable[tuple[str, Checkpoint]], settings: PlatformSettings | None = None
) -> list[str]:
    """The streams whose checkpoint lock is held right now (by any process)."""
    pairs = [(name, checkpoint) for name, checkpoint in checkpoints]
    if not pairs:
        return []
    if (url := _lock_database([str(c) for _, c in pairs], settings)) is not None:
        busy = lock_postgres.held(url, [str(c) for _, c in pairs])
        return [name for name, checkpoint in pairs if str(checkpoint) in busy]
    return [name for name, checkpoint in pairs if _flocked(_local(checkpoint) / LOCK_FILE)]


def _lock_database(locations: list[str], settings: PlatformSettings | None) -> str | None:
    """The URL of the lock database when it holds ``locations``; None for the file lock."""
    secret = (settings or get_settings()).lock_database_url
    url = secret.get_secret_value() if secret is not None else None
    return url if lock_backend(locations, url) == "postgres" else None


def _lock_in_database(
    locks: lock_postgres.AdvisoryLocks, name: str, checkpoint: Checkpoint
) -> None:
    if not locks.take(str(checkpoint)):
        raise CheckpointBusyError(
            f"Stream {name!r} is already running: {describe_holder(locks.holder(str(checkpoint)))} "
            f"holds its checkpoint {checkpoint}. Stop that run first; two queries on one "
            "checkpoint would corrupt it."
        )
    _refuse_retired(name, _path(checkpoint))


def _lock(name: str, checkpoint: Path, owner: str) -> int:
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = checkpoint / LOCK_FILE
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CheckpointBusyError(
            f"Stream {name!r} is already running: {describe_holder(holder(checkpoint))} holds its "
            f"checkpoint {checkpoint}. Stop that run first; two queries on one checkpoint would "
            "corrupt it."
        ) from None
    try:
        _refuse_retired(name, checkpoint)
    except CheckpointBusyError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"owner": owner, "pid": os.getpid()}).encode())
    return fd


def _refuse_retired(name: str, checkpoint: CheckpointPath) -> None:
    retired = checkpoint / RETIRED_FILE
    if retired.exists():
        raise CheckpointBusyError(
            f"Stream {name!r} was not started: its checkpoint {checkpoint} was replaced "
            f"({retired.read_text().strip()}). Start the run again: it uses the new checkpoint."
        )


def _flocked(path: Path) -> bool:
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _path(checkpoint: Checkpoint) -> CheckpointPath:
    """The object to read and write markers through; a string must be a local path."""
    if not isinstance(checkpoint, str):
        return checkpoint
    if "://" in checkpoint:
        raise TypeError(
            f"Checkpoint {checkpoint} is a URI string: pass a path object for it (e.g. "
            "upath.UPath), so that the lock can read its _retired marker."
        )
    return Path(checkpoint)


def _local(checkpoint: Checkpoint) -> Path:
    return checkpoint if isinstance(checkpoint, Path) else Path(str(checkpoint))
