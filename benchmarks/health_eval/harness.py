"""Recording a scenario on the real thing: a Kafka broker, a SparkSession and the platform's runner.

``recording_env`` starts one broker and one local SparkSession for a recorder process. A
``Recording`` runs a scenario's streams with ``run_streams`` and a ``ProgressRecorder``, as the
stream op does (the same recorder, the same batch counts), calls the scenario's script about once
a second while the streams run (to produce input, inject the fault, or end the run), and
``capture`` keeps what the health sensor would read at that moment as the scenario's fixture.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.health_eval.fixture import LAKE, Facts, Fixture, Offsets, declared
from benchmarks.health_eval.model import Scenario
from platform_pipelines.health.evaluate import ask_broker
from platform_pipelines.kafka.admin import create_topics, end_offsets_many
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.kafka.reachability import reachable
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.pointers import POINTERS
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions, trigger_seconds
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.runtime.supervisor import StreamFailedError
from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.declare import StatefulStream, Stream

REPO = Path(__file__).resolve().parents[2]
STATE_PARTITIONS = 2  # small checkpoints: two state stores per operator
# Every scenario's continuous trigger: long enough that a healthy stream's batch ends before the
# next trigger on a busy two-core machine.
TRIGGER = "5 seconds"
SKIPPED = (".platform.lock",)


@dataclass
class Env:
    """A running broker and SparkSession, shared by the scenarios of one recorder process."""

    work: Path
    spark: SparkSession
    broker: LocalKafkaBroker
    bootstrap: str


def spark_options(work: Path) -> SparkOptions:
    return SparkOptions(
        master="local[2]",
        app_name="health_eval",
        state_partitions=STATE_PARTITIONS,
        driver_memory="2g",
        ui_enabled=False,
        extra_conf={
            "spark.local.dir": str(work / "spark-local"),
            "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
        },
    )


@contextlib.contextmanager
def recording_env(work: Path, say: Callable[[str], None]) -> Iterator[Env]:
    """Start a broker and Spark under ``work``; stop both however the block ends."""
    work.mkdir(parents=True, exist_ok=True)
    # Spark's Python workers import the scenarios' logic from this repository.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    broker = LocalKafkaBroker(work / "kafka")
    spark: SparkSession | None = None
    try:
        bootstrap = broker.start()
        say(f"Kafka broker at {bootstrap}")
        spark = build_spark_session(spark_options(work))
        say(f"Spark {spark.version}, {STATE_PARTITIONS} state partitions")
        yield Env(work, spark, broker, bootstrap)
    finally:
        if spark is not None:
            with contextlib.suppress(Exception):
                for query in spark.streams.active:
                    query.stop()
                spark.stop()
        broker.stop()


@dataclass(frozen=True)
class Tick:
    """What a scenario's script sees about once a second while its streams run.

    Attributes:
        elapsed: seconds since the run started.
        batches: batches of the judged stream this run has finished.
    """

    elapsed: float
    batches: int


Script = Callable[[Tick], bool]  # called on every poll; True ends the run (a graceful stop)


def until_batches(n: int, then: Callable[[Tick], None] = lambda tick: None) -> Script:
    """A script that ends the run after ``n`` batches of the judged stream."""

    def script(tick: Tick) -> bool:
        then(tick)
        return tick.batches >= n

    return script


@dataclass
class Recording:
    """One scenario being recorded in its own folder, on the shared broker and session."""

    env: Env
    scenario: Scenario
    work: Path
    fixtures: Path
    bootstrap: str = ""  # the broker the scenario uses: the shared one unless it has its own
    fault_at: float | None = None
    failure: str = ""
    captured: bool = False
    runs: int = 0
    batches: dict[str, int] = field(default_factory=dict)
    end_offsets: list[tuple[float, Offsets | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bootstrap = self.bootstrap or self.env.bootstrap

    @property
    def lake(self) -> Lakehouse:
        return Lakehouse(self.work / "lake")

    @property
    def store_dir(self) -> Path:
        return self.work / "progress"

    @property
    def spark(self) -> SparkSession:
        return self.env.spark

    @property
    def streams(self) -> Sequence[Stream]:
        return self.scenario.streams(self.scenario.topic)

    def create_topic(self, partitions: int = 2) -> str:
        create_topics(self.bootstrap, {self.scenario.topic: partitions})
        return self.scenario.topic

    def send(self, events: Iterable[dict[str, Any] | bytes], key_field: str = "user_id") -> int:
        """Produce ``events`` to the scenario's topic; how many were sent."""
        return produce_events(self.bootstrap, self.scenario.topic, events, key_field).total

    def mark_fault(self) -> None:
        """The fault starts now (its detection is counted from here)."""
        if self.fault_at is None:
            self.fault_at = time.time()

    def run(
        self,
        script: Script,
        options: RunOptions = RunOptions(processing_time=TRIGGER),
        streams: Sequence[Stream] | None = None,
    ) -> None:
        """Run the streams (default: all the scenario's) with the platform's runner until the
        script ends the run, a catch-up run finishes, or a query fails (its error is kept as
        the run's failure)."""
        from platform_pipelines.core.progress_store import ProgressStore
        from platform_pipelines.streams.query import StreamContext

        self.runs += 1
        chosen = list(streams or self.streams)
        run_id = f"{self.scenario.name}-run{self.runs}"
        triggers = {s.name: trigger_seconds(options) for s in chosen}
        recorder = ProgressRecorder(ProgressStore(self.store_dir), run_id, triggers)
        ctx = StreamContext(self.spark, self.lake, self.bootstrap, on_batch=recorder.record_batch)
        stop = StopRequest()
        started = time.monotonic()
        done: dict[str, int] = {}

        def on_progress(name: str, progress: Mapping[str, Any]) -> None:
            done[name] = done.get(name, 0) + 1

        def watch() -> None:
            self.ask_end_offsets()
            if not stop.requested and script(
                Tick(time.monotonic() - started, done.get(self.scenario.stream, 0))
            ):
                stop.why = "the end of the scenario"

        try:
            run_streams(
                ctx, chosen, options, on_progress, recorder=recorder, stop=stop, watch=watch
            )
        except GracefulStop:
            pass
        except StreamFailedError as error:
            self.failure = str(error).splitlines()[0]
        for name, n in done.items():
            self.batches[name] = self.batches.get(name, 0) + n

    def ask_end_offsets(self) -> None:
        """Note the broker's end offsets of the judged stream's topic now (None: no answer)."""
        topic = self.scenario.judged().topic
        if topic is None:
            return
        ends: Offsets | None = None
        if reachable(self.bootstrap):
            with contextlib.suppress(Exception):  # no answer is what is noted
                ends = end_offsets_many(self.bootstrap, [topic], timeout_s=2, skip_missing=True)
        self.end_offsets.append((time.time(), ends))

    def finish(self) -> bool:
        """Capture the fixture now, while the streams run, and end the run (for scripts)."""
        self.capture()
        return True

    def capture(self) -> Fixture:
        """Keep what the health sensor would read now as the scenario's fixture."""
        from platform_pipelines.core.progress_store import ProgressStore

        stream = self.scenario.judged()
        self.ask_end_offsets()
        now = time.time()
        broker = ask_broker(self.bootstrap, [stream.topic]) if stream.topic else None
        records = ProgressStore(self.store_dir).recent(stream.name, 100_000)
        conf = self.spark.conf
        facts = Facts(
            stream=stream.name,
            spark_version=self.spark.version,
            state_partitions=int(conf.get("spark.sql.shuffle.partitions") or 0),
            min_batches_to_retain=int(conf.get("spark.sql.streaming.minBatchesToRetain") or 0),
            ended_at=now,
            fault_at=self.fault_at,
            broker=broker,
            run=replace(self.scenario.run, failure=self.failure or self.scenario.run.failure),
            declared=declared(stream),
            end_offsets=self.end_offsets,
        )
        fixture = Fixture(self.fixtures / self.scenario.name)
        shutil.rmtree(fixture.folder, ignore_errors=True)
        fixture.write(facts, [r for r in records if r.ts <= now])
        self._copy_lake(stream, fixture.folder / LAKE)
        self.captured = True
        return fixture

    def _copy_lake(self, stream: Stream, target: Path) -> None:
        """The stream's checkpoint and, for a stream that reads a table, that table's log."""
        source = self.lake.root
        checkpoint = self.lake.checkpoint(stream.name)
        copy_tree(checkpoint, target / "checkpoints" / checkpoint.name)
        copy_tree(source / "checkpoints" / POINTERS, target / "checkpoints" / POINTERS)
        if isinstance(stream, StatefulStream) and stream.topic is None:
            table = self.lake.table(stream.upstream)
            copy_tree(table / "_delta_log", target / "tables" / table.name / "_delta_log", "*.json")
            copy_tree(source / "tables" / POINTERS, target / "tables" / POINTERS)


def copy_tree(source: Path, target: Path, pattern: str = "*") -> None:
    """Copy the files of ``source`` matching ``pattern`` (Spark may be writing: files that vanish
    while copied, lock files and temporary files are left out)."""
    if not source.is_dir():
        return
    for path in sorted(source.rglob(pattern)):
        if not path.is_file() or path.name in SKIPPED or ".tmp" in path.name:
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            shutil.copy2(path, destination)
