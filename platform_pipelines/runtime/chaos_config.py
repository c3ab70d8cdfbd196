"""What a chaos run is asked to do (``ChaosConfig``), the input of its trials, and what it saw
(``FaultRecord`` per fault, ``TrialResult`` per trial)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from platform_pipelines.kafka.producer import ClickstreamConfig

# The faults a trial can get: a SIGKILL at a checkpoint write of the pipeline's first start, a
# SIGKILL at a random moment, a network cut between the pipeline and the broker, and (on a
# cluster only) a SIGKILL of one executor while a task runs.
KINDS = ("first-start", "kill", "network", "executor")
DEFAULT_FAULTS = ("first-start", "kill", "network")


@dataclass(frozen=True)
class ChaosConfig:
    """A chaos run. The defaults pass on a healthy pipeline in a few minutes on 2 cores.

    Attributes:
        trials: independent trials, each on its own topic and lakehouse.
        events: records produced per trial (malformed, late and duplicate ones included).
        rate_per_sec: how fast they are produced, while the pipeline runs and is hurt.
        faults: the kinds of fault to inject (``KINDS``; ``executor`` needs ``cluster``).
        per_trial: the fewest and most faults per trial besides the first-start kill, which
            is every trial's first fault when ``first-start`` is among ``faults``. The first of
            them goes round the other kinds, so each runs once there are as many trials.
        fault_window: a fault comes this many seconds (uniformly drawn) after the pipeline's
            last launch or recovery.
        network_seconds: how long a network cut lasts.
        seed: seeds the faults, their moments and the input.
        parallel: trials whose pipelines run at once (each its own process, JVM, topic and
            proxy); the comparisons with clean runs follow one by one.
        cluster: run the pipelines on a local Spark standalone cluster (for ``executor``).
    """

    trials: int = 3
    events: int = 1200
    rate_per_sec: float = 20.0
    faults: tuple[str, ...] = DEFAULT_FAULTS
    per_trial: tuple[int, int] = (1, 1)
    fault_window: tuple[float, float] = (0.5, 15.0)
    network_seconds: float = 8.0
    seed: int = 1
    parallel: int = 3
    cluster: bool = False

    def __post_init__(self) -> None:
        unknown = [k for k in self.faults if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown faults {unknown}: choose among {', '.join(KINDS)}")
        if "executor" in self.faults and not self.cluster:
            raise ValueError("the executor fault needs a cluster (--cluster)")
        if not 0 <= self.per_trial[0] <= self.per_trial[1]:
            raise ValueError(f"faults per trial must be a range like 1-2, not {self.per_trial}")

    @property
    def slots(self) -> int:
        """Trials that run at once."""
        return max(1, min(self.parallel, self.trials))


@dataclass
class FaultRecord:
    """One fault of a trial: what it was, when it came, and how the pipeline got over it.

    Attributes:
        kind: one of ``KINDS``.
        at_seconds: when it came, in seconds after the pipeline's last ``after``.
        after: ``launch`` or ``recovery``.
        detail: what exactly happened (the crash point, the connections cut, the executor).
        recovered_seconds: from the fault (the end of a cut) to the pipeline's recovery.
        recovered_by: ``batch`` (it recorded a new batch) or ``caught up`` (its streams ran
            and every input record was consumed).
    """

    kind: str
    at_seconds: float
    after: str
    detail: str
    recovered_seconds: float = 0.0
    recovered_by: str = ""

    def line(self) -> str:
        """One line for the table.

        >>> FaultRecord("kill", 7.14, "launch", "SIGKILL", 40.0, "batch").line()
        'kill 7.1 s after a launch: SIGKILL; back in 40.0 s (batch)'
        """
        return (
            f"{self.kind} {self.at_seconds:.1f} s after a {self.after}: {self.detail}; "
            f"back in {self.recovered_seconds:.1f} s ({self.recovered_by})"
        )


@dataclass
class TrialResult:
    """What one trial saw: its faults, the time each relaunch took to recover, and per table the
    rows lost and duplicated against the clean run, and the clean run's rows."""

    trial: int
    faults: list[FaultRecord] = field(default_factory=list)
    restart_seconds: list[float] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=dict)
    duplicated: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(self.lost.values()) and not any(self.duplicated.values())


def input_config(trial: int, cfg: ChaosConfig) -> ClickstreamConfig:
    """The trial's input: many users (so event time advances slowly per record), duplicates
    re-sent within a few records, late records within the watermark, no stale ones."""
    return ClickstreamConfig(
        events=cfg.events,
        users=300,
        duplicate_rate=0.02,
        duplicate_window=20,
        late_rate=0.05,
        malformed_rate=0.01,
        stale_share=0.0,
        seed=cfg.seed * 1000 + trial,
        start_time=datetime(2026, 11, 1, 8, 0, tzinfo=UTC),
    )
