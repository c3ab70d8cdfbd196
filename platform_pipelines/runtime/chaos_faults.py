"""The faults a chaos trial injects, which ones each trial gets, and how each is judged recovered.

- ``first-start``: the pipeline's first start pauses at a checkpoint write (``FIRST_START_POINTS``)
  and is SIGKILLed there, then relaunched.
- ``kill``: SIGKILL of the pipeline (driver and JVM) at a random moment, then a relaunch.
- ``network``: every connection between the pipeline and the broker dropped, new ones refused
  for a while (the trial's proxy); the pipeline must reconnect by itself.
- ``executor``: on a cluster, SIGKILL of one executor JVM of the pipeline while it runs a task;
  Spark must run the task again elsewhere.

Each returns a ``FaultRecord`` once the pipeline recovered: a new batch, or all input consumed.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

from platform_pipelines.runtime.chaos_config import ChaosConfig, FaultRecord
from platform_pipelines.runtime.chaos_launch import until_paused
from platform_pipelines.runtime.chaos_pipeline import TrialPipeline
from platform_pipelines.runtime.chaos_worker import LAKE_MARKER, STREAMS

# Writes of a first start to crash at (``runtime.crash_points``): a checkpoint's first offsets and
# commit as temporary files and renamed, and a stateful stream's first state files.
FIRST_START_POINTS = [
    *(
        f"{phase}:/{s}/{log}/0$"
        for s in STREAMS
        for phase in ("temp", "done")
        for log in ("offsets", "commits")
    ),
    *(f"done:/{s}/state/0/_metadata/metadata$" for s in STREAMS[1:]),
    *(f"done:/{s}/state/0/0/1.changelog$" for s in STREAMS[1:]),
]
EXECUTOR_CLASS = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
RECONNECT_TIMEOUT_S = 120
TASK_WAIT_S = 60  # an executor kill waits this long for a running task, then kills anyway
_TASK = re.compile(r"(Running|Finished) task (\S+ in stage \S+) \(TID (\d+)\)")


def plan_faults(cfg: ChaosConfig, trial: int) -> list[str]:
    """The faults of ``trial``, in order: the first-start kill (when asked for), then
    ``cfg.per_trial`` others; the first of those takes the kinds in turn (their order drawn by
    the seed), so that every kind runs once there are as many trials."""
    others = [kind for kind in cfg.faults if kind != "first-start"]
    random.Random(cfg.seed).shuffle(others)
    rng = random.Random(cfg.seed * 104_729 + trial)
    plan = ["first-start"] if "first-start" in cfg.faults else []
    if others:
        count = rng.randint(*cfg.per_trial)
        turn = [others[(trial - 1) % len(others)]] if count else []
        plan += turn + [rng.choice(others) for _ in range(count - 1)]
    return plan


def first_start(p: TrialPipeline) -> FaultRecord:
    """SIGKILL at a checkpoint write of the first start, then a relaunch."""
    point = p.rng.choice(FIRST_START_POINTS)
    crash = p.crash_points(point)
    worker = p.launch(crash)
    at = until_paused(crash, worker, p.log, p.fleet)
    p.kill()
    back, how = p.relaunch()
    return FaultRecord("first-start", round(at, 1), "launch", f"SIGKILL at {point}", back, how)


def kill(p: TrialPipeline) -> FaultRecord:
    """SIGKILL at a random moment, then a relaunch."""
    p.running()
    after, at = p.since_what, p.wait_random()
    p.kill()
    back, how = p.relaunch()
    return FaultRecord("kill", at, after, "SIGKILL of the driver and its JVM", back, how)


def network(p: TrialPipeline) -> FaultRecord:
    """A network cut at a random moment; the pipeline must reconnect and go on by itself."""
    p.running()
    after, at = p.since_what, p.wait_random()
    seconds = p.cfg.network_seconds
    dropped = p.proxy.cut(seconds)
    p.fleet.sleep(seconds)
    healed, accepted = time.monotonic(), p.proxy.accepted
    while p.proxy.accepted == accepted:
        if time.monotonic() - healed > RECONNECT_TIMEOUT_S:
            raise RuntimeError(
                f"trial {p.trial}: the pipeline did not reconnect within {RECONNECT_TIMEOUT_S} s "
                f"of a network cut; see {p.log}"
            )
        p.fleet.sleep(0.1)
    reconnected = time.monotonic() - healed
    back, how = p.recovered(healed)
    detail = (
        f"{dropped} connections dropped, new ones refused for {seconds:g} s, "
        f"reconnected {reconnected:.1f} s later"
    )
    return FaultRecord("network", at, after, detail, back, how)


def executor(p: TrialPipeline) -> FaultRecord:
    """SIGKILL of one executor of the pipeline while it runs a task (on a cluster)."""
    p.running()
    after, at = p.since_what, p.wait_random()
    pid, task = _executor_in_a_task(p)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    back, how = p.recovered(killed)
    during = f"during task {task}" if task else "between tasks"
    return FaultRecord("executor", at, after, f"SIGKILL of executor pid {pid} {during}", back, how)


FAULTS: dict[str, Callable[[TrialPipeline], FaultRecord]] = {
    "first-start": first_start,
    "kill": kill,
    "network": network,
    "executor": executor,
}


def executors_of(lake_dir: Path) -> list[int]:
    """The executor JVMs of the chaos worker on ``lake_dir`` (their command line carries it)."""
    marker = f"{LAKE_MARKER}{lake_dir}".encode()
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if EXECUTOR_CLASS in args and marker in args:
            found.append(int(cmdline.parent.name))
    return sorted(found)


def _executor_in_a_task(p: TrialPipeline) -> tuple[int, str | None]:
    """An executor of the pipeline and the task it runs now; after ``TASK_WAIT_S`` without one,
    any executor of it and None.

    Raises:
        RuntimeError: the pipeline has no executor.
    """
    deadline, logs = time.monotonic() + TASK_WAIT_S, _TaskLogs()
    while True:
        pids = executors_of(p.lake_dir)
        for pid in pids:
            tasks = logs.running(pid)
            if tasks:
                return pid, next(iter(tasks.values()))
        if time.monotonic() > deadline:
            if pids:
                return pids[0], None
            raise RuntimeError(f"trial {p.trial}: no executor of the pipeline runs; see {p.log}")
        p.fleet.sleep(0.02)


class _TaskLogs:
    """The tasks each executor runs now, read from the new lines of its log (``stderr`` in its
    work dir, its current directory)."""

    def __init__(self) -> None:
        self._read: dict[int, int] = {}
        self._rest: dict[int, bytes] = {}
        self._running: dict[int, dict[str, str]] = {}

    def running(self, pid: int) -> dict[str, str]:
        """``{task id: task}`` of the tasks ``pid`` started and has not finished."""
        try:
            with Path(f"/proc/{pid}/cwd/stderr").open("rb") as out:
                out.seek(self._read.get(pid, 0))
                data = out.read()
        except OSError:
            return {}
        self._read[pid] = self._read.get(pid, 0) + len(data)
        lines = (self._rest.pop(pid, b"") + data).split(b"\n")
        self._rest[pid] = lines.pop()  # a line still being written
        tasks = self._running.setdefault(pid, {})
        for state, name, tid in _TASK.findall(b"\n".join(lines).decode(errors="replace")):
            if state == "Running":
                tasks[tid] = name
            else:
                tasks.pop(tid, None)
        return tasks
