"""One trial's pipeline as the faults see it: the worker that runs now, launched through the
trial's proxy, killed, relaunched until it recovers, and stopped gracefully at the end."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

from platform_pipelines.core.local_server import HOST
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.chaos_config import ChaosConfig
from platform_pipelines.runtime.chaos_launch import (
    WORKER_LOG,
    Fleet,
    caught_up,
    recovered_after,
    wait_caught_up,
    worker_command,
)
from platform_pipelines.runtime.chaos_proxy import FaultProxy
from platform_pipelines.runtime.crash_points import CrashPoints


class TrialPipeline:
    """The pipeline of trial ``trial`` on ``lake_dir``, reading ``topic``: its workers reach the
    broker through ``proxy`` and run on ``master`` when given. ``bootstrap`` is the direct
    address this process reads end offsets from."""

    def __init__(
        self,
        trial: int,
        cfg: ChaosConfig,
        lake_dir: Path,
        topic: str,
        bootstrap: str,
        proxy: FaultProxy,
        fleet: Fleet,
        master: str | None = None,
    ) -> None:
        self.trial, self.cfg, self.lake_dir, self.topic = trial, cfg, lake_dir, topic
        self.bootstrap, self.proxy, self.fleet, self.master = bootstrap, proxy, fleet, master
        self.rng = random.Random(cfg.seed * 7919 + trial)
        self.worker: subprocess.Popen[bytes] | None = None
        self.since = time.monotonic()  # the last launch or recovery: faults come a while after
        self.since_what = "launch"
        self.restart_seconds: list[float] = []
        self.crashes = 0

    @property
    def log(self) -> Path:
        """The output of every launch of the trial's worker, appended."""
        return self.lake_dir / WORKER_LOG

    @property
    def lake(self) -> Lakehouse:
        return Lakehouse(self.lake_dir / "lakehouse")

    def launch(self, crash: CrashPoints | None = None) -> subprocess.Popen[bytes]:
        """Start the worker (paused at ``crash``'s points when given)."""
        self.lake_dir.mkdir(parents=True, exist_ok=True)
        bootstrap = f"{HOST}:{self.proxy.port}"
        command = worker_command(self.lake_dir, bootstrap, self.topic, crash, self.master)
        self.worker = self.fleet.launch(command, self.log)
        self.since, self.since_what = time.monotonic(), "launch"
        return self.worker

    def running(self) -> subprocess.Popen[bytes]:
        """The worker, launched first when none runs."""
        return self.worker if self.worker is not None else self.launch()

    def crash_points(self, point: str) -> CrashPoints:
        """A fresh folder of crash points pausing at ``point``."""
        self.crashes += 1
        return CrashPoints(self.lake_dir / f"crash-{self.crashes}", (point,))

    def kill(self) -> None:
        """SIGKILL the worker (driver and JVM)."""
        if self.worker is not None:
            self.fleet.kill(self.worker)
            self.worker = None

    def wait_random(self) -> float:
        """Wait until a moment drawn from the fault window after the last launch or recovery;
        returns how long after it that is."""
        delay = self.rng.uniform(*self.cfg.fault_window)
        self.fleet.sleep(max(0.0, self.since + delay - time.monotonic()))
        return round(delay, 1)

    def relaunch(self) -> tuple[float, str]:
        """Launch the worker again and wait until it recovered (``recovered_after``)."""
        self.launch()
        back = self.recovered(self.since, restarted=True)
        self.restart_seconds.append(back[0])
        return back

    def recovered(self, since: float, restarted: bool = False) -> tuple[float, str]:
        """Seconds from ``since`` until the running worker recovered, and how."""
        assert self.worker is not None
        back = recovered_after(
            self.lake_dir, since, self.worker, self.caught_up, self.fleet, restarted
        )
        self.since, self.since_what = time.monotonic(), "recovery"
        return back

    def caught_up(self) -> bool:
        """Every stream committed all its input."""
        return caught_up(self.lake, self.bootstrap, self.topic)

    def finish(self) -> None:
        """Let the worker catch up (launching it if none runs), then stop it gracefully.

        Raises:
            RuntimeError: it exited, did not catch up, or did not stop cleanly.
        """
        worker = self.running()
        wait_caught_up(self.lake_dir, self.bootstrap, self.topic, worker, self.fleet)
        code = self.fleet.stop(worker)
        self.worker = None
        if code != 0:
            raise RuntimeError(
                f"trial {self.trial}: the last launch did not stop cleanly (exit {code}); "
                f"see {self.log}"
            )
