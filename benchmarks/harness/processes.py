"""Processes a probe runs beside its own: a Spark of another version in a venv of its own, the
CPU a process tree uses over time, and threads that stop however a block ends."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[2]


def spark_python(version: str, say: Callable[[str], None]) -> Path:
    """The Python of ``.local/spark-<version>-venv``, made (with pyspark ``version``) when absent
    or when its install did not finish (no ``.installed`` in it)."""
    venv = REPO / ".local" / f"spark-{version}-venv"
    python, done = venv / "bin" / "python", venv / ".installed"
    if done.exists():
        return python
    say(f"installing pyspark {version} into {venv.relative_to(REPO)} (once, a minute or two)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", f"pyspark=={version}"]
    subprocess.run(pip, check=True)
    done.write_text(version)
    return python


@dataclass
class CpuSampler:
    """CPU seconds of a process tree, sampled every second with the wall clock (epoch ms)."""

    proc: subprocess.Popen[bytes]
    samples: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(1.0):
            self.samples.append((time.time() * 1000, cpu_seconds(self.proc)))

    def cores_between(self, start_ms: float, end_ms: float) -> float | None:
        """Cores used on average between the first and the last sample within the span."""
        inside = [s for s in self.samples if start_ms <= s[0] <= end_ms]
        if len(inside) < 2:
            return None
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return round((c1 - c0) / ((t1 - t0) / 1000), 2)

    def stop(self) -> None:
        self._stop.set()


@contextlib.contextmanager
def threads(*always: Any) -> Iterator[Callable[[Any], threading.Thread]]:
    """Runs each of ``always`` (``run``/``stop``) on a thread for the block; the block may start
    more with the callable it gets. Every one is stopped and joined however the block ends."""
    running: list[tuple[Any, threading.Thread]] = []

    def start(target: Any) -> threading.Thread:
        thread = threading.Thread(target=target.run, daemon=True)
        thread.start()
        running.append((target, thread))
        return thread

    for target in always:
        start(target)
    try:
        yield start
    finally:
        for target, thread in running:
            target.stop()
            thread.join(30)


def cpu_seconds(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds (user + system) of ``proc`` and its descendants (the Spark JVM) so far."""
    return tree_cpu_seconds(proc.pid)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and every live descendant so far."""
    root = psutil.Process(pid)
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = p.cpu_times()
            total += times.user + times.system
    return total
