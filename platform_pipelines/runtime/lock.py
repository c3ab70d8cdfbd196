"""One query per checkpoint: an exclusive lock held on every checkpoint a run owns.

Two queries on one checkpoint (say `stream_events` and `all_streams` launched together) would
corrupt it. A run takes the locks of all its streams before it starts a JVM and holds them to its
end, so a second run is refused within a second, naming what holds the stream.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

LOCK_FILE = ".platform.lock"
# Written into a checkpoint that a rebuild replaced (``runtime.reprocess``): a run that found the
# old folder before the switch is refused when it takes the lock, instead of running on it.
RETIRED_FILE = "_retired"


class CheckpointBusyError(RuntimeError):
    """Another query (in this or another process) already runs on the stream's checkpoint."""


class CheckpointLocks:
    """Exclusive ``flock``s on the checkpoints of ``streams``; all or none are taken.

    The lock file records the holder (``owner``, pid) so that a refusal can say who holds it.
    """

    def __init__(self, checkpoints: dict[str, Path], owner: str = "") -> None:
        self._checkpoints = checkpoints
        self._owner = owner
        self._held: list[int] = []

    def __enter__(self) -> CheckpointLocks:
        try:
            for name, checkpoint in self._checkpoints.items():
                self._held.append(_lock(name, Path(checkpoint), self._owner))
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.release()

    def release(self) -> None:
        while self._held:
            os.close(self._held.pop())  # closing the descriptor releases the flock


def holder(checkpoint: Path) -> dict[str, object]:
    """Who last took the lock of ``checkpoint`` (``{"owner", "pid"}``; empty when unknown)."""
    try:
        return dict(json.loads((Path(checkpoint) / LOCK_FILE).read_text() or "{}"))
    except (OSError, ValueError):
        return {}


def _lock(name: str, checkpoint: Path, owner: str) -> int:
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = checkpoint / LOCK_FILE
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        held = holder(checkpoint)
        who = f"{held.get('owner') or 'another process'} (pid {held.get('pid', '?')})"
        raise CheckpointBusyError(
            f"Stream {name!r} is already running: {who} holds its checkpoint {checkpoint}. Stop "
            "that run first; two queries on one checkpoint would corrupt it."
        ) from None
    retired = checkpoint / RETIRED_FILE
    if retired.exists():
        os.close(fd)
        raise CheckpointBusyError(
            f"Stream {name!r} was not started: its checkpoint {checkpoint} was replaced "
            f"({retired.read_text().strip()}). Start the run again: it uses the new checkpoint."
        )
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"owner": owner, "pid": os.getpid()}).encode())
    return fd


def retire(checkpoint: Path, why: str) -> None:
    """Mark ``checkpoint`` as replaced (its lock must be held): no run can start on it again."""
    (Path(checkpoint) / RETIRED_FILE).write_text(why + "\n")


def locked_streams(checkpoints: Iterable[tuple[str, Path]]) -> list[str]:
    """The streams whose checkpoint lock is held right now (by any process)."""
    busy = []
    for name, checkpoint in checkpoints:
        path = Path(checkpoint) / LOCK_FILE
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            busy.append(name)
        finally:
            os.close(fd)
    return busy
