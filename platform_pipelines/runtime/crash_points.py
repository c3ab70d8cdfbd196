"""Crash points: stop a pipeline at a chosen checkpoint write, to kill it or copy it right there.

The JVM side is ``jvm/faults`` (``PausingCheckpointFileManager``): Spark writes each checkpoint
file (and each Delta ``.crc``) as a temporary file, then renames it; the class sees every write at
both phases, ``temp`` (complete, not renamed) and ``done`` (renamed), traces it to
``writes.log`` and pauses the writing thread where asked. A pause leaves ``paused-<n>.txt`` and
waits for ``resume-<n>``. Only a process started with ``CrashPoints.environment()`` and
``CrashPoints.spark_conf()`` does any of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CHECKPOINT_FILE_MANAGER = "platform.faults.PausingCheckpointFileManager"
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class CrashPoints:
    """Where a pipeline pauses.

    Attributes:
        folder: where the trace and the pause markers go.
        pause_at: points ``<phase>:<regex>`` (``temp`` or ``done``, and a regex searched in the
            written file's path); the first write that reaches each point pauses.
        pause_every: a regex: every write whose path matches it pauses, at both phases.
    """

    folder: Path
    pause_at: tuple[str, ...] = ()
    pause_every: str = ""

    def environment(self) -> dict[str, str]:
        """The environment variables the JVM reads (it inherits them from the driver)."""
        return {
            "PLATFORM_FAULT_DIR": str(self.folder),
            "PLATFORM_FAULT_PAUSE_AT": ";".join(self.pause_at),
            "PLATFORM_FAULT_PAUSE_EVERY": self.pause_every,
        }

    @staticmethod
    def spark_conf() -> dict[str, str]:
        """The Spark setting that routes checkpoint writes through the crash points."""
        return {"spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER}


@dataclass(frozen=True)
class Pause:
    """A write that is paused: ``phase`` (``temp``/``done``) of the file at ``path``."""

    number: int
    point: str
    phase: str
    path: str

    @property
    def kind(self) -> str:
        """The path with its numbers blanked: the same kind of write in another batch,
        partition or version looks the same.

        >>> Pause(1, "", "temp", "file:/l/checkpoints/events/state/0/1/2.changelog").kind
        'file:/l/checkpoints/events/state/N/N/N.changelog'
        """
        return _DIGITS.sub("N", self.path)


def pauses(folder: Path) -> list[Pause]:
    """The pauses so far, oldest first (each stays listed after it is resumed)."""
    found = []
    for marker in folder.glob("paused-*.txt"):
        point, line = marker.read_text().splitlines()[:2]
        phase, _, path = line.partition(" ")
        found.append(Pause(int(marker.stem.split("-")[1]), point, phase, path))
    return sorted(found, key=lambda pause: pause.number)


def resume(folder: Path, pause: Pause) -> None:
    """Let a paused write go on."""
    (folder / f"resume-{pause.number}").touch()


def writes(folder: Path) -> list[tuple[str, str]]:
    """Every traced write so far, in order: ``(phase, path)``."""
    trace = folder / "writes.log"
    lines = trace.read_text().splitlines() if trace.exists() else []
    return [(line.partition(" ")[0], line.partition(" ")[2]) for line in lines]
