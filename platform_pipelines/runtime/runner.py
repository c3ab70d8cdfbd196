"""Running declared streams: lock their checkpoints, catch up, then keep going until told to stop.

A run owns its streams' checkpoints for its whole life (``CheckpointLocks``). It always starts
with a catch-up phase: each stream, upstream first, processes what is available now
(``availableNow``) and ends, so the next one reads its upstream's complete output in one batch
(streams that do not read each other, such as bronze and a stream reading the same topic, catch
up at the same time: ``catch_up_waves``). A
backlog is therefore processed the same way whether the run is a catch-up run or a continuous one,
and continuous triggers start only on a caught-up pipeline: the same input gives the same tables.
A stream whose Kafka topic does not exist yet waits for it, with the streams downstream of it,
while the others run (``topic_wait``).

Nothing here knows Dagster: the Dagster op passes callbacks for progress and a ``StopRequest``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    checkpoint_verdict,
    inspect_checkpoint,
)
from platform_pipelines.lakehouse.first_start import clear_unplanned_first_start
from platform_pipelines.lakehouse.tables import LEDGER, LEDGER_TABLE
from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.runtime.lock import CheckpointLocks
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.savepoints import restore_pending
from platform_pipelines.runtime.supervisor import ProgressCallback, Restart, Supervisor
from platform_pipelines.runtime.topic_wait import (
    Phase,
    TopicWait,
    missing_topics,
    waiting_note,
    waiting_streams,
)
from platform_pipelines.spark.starting import start_query
from platform_pipelines.spark.together import run_together
from platform_pipelines.streams.declare import Stream
from platform_pipelines.streams.evolution import check_declaration
from platform_pipelines.streams.query import StreamContext, build_query


class CheckpointDamagedError(RuntimeError):
    """The stream's checkpoint is inconsistent: starting a query on it would fail or lose data."""


def start_stream(
    ctx: StreamContext,
    stream: Stream,
    options: RunOptions,
    phase: Phase,
    also_create: Mapping[str, StructType] | None = None,
) -> StreamingQuery:
    """Create the stream's tables (and ``also_create``: the tables of the streams that start
    after it in the same run) if needed and start one phase of its query."""
    check_checkpoint(ctx, stream)
    catch_up = phase == "catch_up"
    ctx = replace(
        ctx, max_offsets_per_trigger=options.max_offsets_per_trigger if catch_up else None
    )
    built: list[DataStreamWriter] = []
    # A first start creates the stream's tables while it builds the query (bronze: ~0.4 s of
    # parse expressions); neither needs the other, and a table's error is raised first.
    tables = {**(also_create or {}), **stream.outputs, LEDGER_TABLE: LEDGER}
    run_together(
        lambda: ctx.lakehouse.ensure_tables(ctx.spark, tables),
        lambda: built.append(build_query(ctx, stream)),
    )
    checkpoint = str(ctx.lakehouse.checkpoint(stream.name))
    writer = built[0].queryName(stream.name).option("checkpointLocation", checkpoint)
    if catch_up:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=options.processing_time)
    return start_query(ctx.spark, writer.start, options.pool, stream.state_partitions)


def check_checkpoint(ctx: StreamContext, stream: Stream) -> None:
    """Refuse to start on a damaged checkpoint, saying what is wrong, before Spark touches it.

    Only failures refuse (two batches without commits, gaps, damaged state files, a partition or
    provider mismatch); warnings are left to the health checks."""
    conf = ctx.spark.conf
    expected = CheckpointExpectations(
        state_partitions=int(conf.get("spark.sql.shuffle.partitions") or 200),
        min_batches_to_retain=int(conf.get("spark.sql.streaming.minBatchesToRetain") or 100),
        state_provider=str(conf.get("spark.sql.streaming.stateStore.providerClass") or ""),
    ).for_stream(stream.state_partitions)
    path = ctx.lakehouse.checkpoint(stream.name)
    verdict = checkpoint_verdict(inspect_checkpoint(path), expected)
    if verdict.status is Status.FAIL:
        raise CheckpointDamagedError(
            f"Stream {stream.name!r} was not started: its checkpoint {path} is damaged: "
            f"{verdict.summary}. {verdict.remedy}".strip()
        )


def run_streams(
    ctx: StreamContext,
    streams: Sequence[Stream],
    options: RunOptions | Mapping[str, RunOptions],
    on_progress: ProgressCallback,
    on_start: Callable[[str, Phase], None] = lambda name, phase: None,
    recorder: ProgressRecorder | None = None,
    stop: StopRequest | None = None,
    owner: str = "",
    lock: bool = True,
    watch: Callable[[], None] | None = None,
    on_note: Callable[[str, str], None] = lambda name, text: None,
) -> Supervisor:
    """Run ``streams`` (upstream first) to the end of a catch-up run, or until ``stop`` is set.

    ``options`` applies to every stream, or maps each stream's name to its own. A ``recorder``
    persists every query event to the progress store while the streams run. ``owner`` (a run id)
    is recorded in the checkpoint locks so that a refused run can name the one that holds them;
    a caller that took the locks itself (before starting a JVM) passes ``lock=False``. ``watch``
    is called on every poll of the supervisor (say, to log a broker outage). ``on_note`` hears,
    per stream, what the run repaired before starting it (a first start cut short by a crash),
    that it waits for its Kafka topic, or starts now that the topic exists, and that its query
    died of a failure that passes (a busy machine) and starts again (``Supervisor``).

    A stream whose Kafka topic the broker does not have, and every stream of the run downstream
    of it, is recorded as ``waiting`` and started, catch-up first, once the topic exists (the
    broker is asked every few seconds); the other streams run meanwhile. A continuous run waits
    for the topic until it is stopped; a catch-up run ends with the others.

    Raises:
        CheckpointBusyError: another run holds one of the streams.
        LockLostError: the lock database ended the session holding the locks (queries stopped).
        CheckpointDamagedError: a checkpoint is damaged (before its query starts).
        DeclarationChanged: a stream's key or columns changed since its checkpoint started
            (before any query starts).
        StreamFailedError: a query died (of a failure that passes: more than twice).
        GracefulStop: ``stop`` was set and every query stopped cleanly.
    """
    per_stream = options if isinstance(options, Mapping) else {s.name: options for s in streams}
    on_end = recorder.record_end if recorder else lambda name, error, run: None
    checkpoints = {s.name: ctx.lakehouse.checkpoint(s.name) for s in streams} if lock else {}
    locks = CheckpointLocks(checkpoints, owner)

    late: TopicWait | None = None

    def watching() -> None:
        locks.check()  # the lock database lost our session: stop, another run may take over
        if watch is not None:
            watch()
        if late is not None:
            late.poll()  # start the streams whose topic appeared, or their next phase

    stop = stop or StopRequest()

    def starting(name: str, phase: Phase) -> None:
        if recorder:
            recorder.start_phase(name, phase)  # its records then say which phase ran
        on_start(name, phase)

    def again(stream: Stream, phase: Phase) -> Restart:
        def restart() -> StreamingQuery:
            starting(stream.name, phase)
            return start_stream(ctx, stream, per_stream[stream.name], phase)

        return restart

    supervisor = Supervisor(
        on_progress, on_end=on_end, stop=stop, watch=watching, on_restart=on_note
    )
    with locks:
        for stream in streams:
            upstream = ctx.lakehouse.table(stream.upstream).name if stream.topic is None else None
            checkpoint = ctx.lakehouse.checkpoint(stream.name)
            check_declaration(checkpoint, stream, upstream)
            if cleared := clear_unplanned_first_start(checkpoint):
                on_note(stream.name, first_start_note(cleared))
            if savepoint := restore_pending(ctx.lakehouse, stream.name):
                raise CheckpointDamagedError(
                    f"Stream {stream.name!r} was not started: a restore of its savepoint "
                    f"{savepoint!r} was interrupted. Run `platform savepoint restore {stream.name} "
                    f"--name {savepoint}` again first (it is safe to repeat)."
                )
        late = _topic_wait(ctx, streams, per_stream, supervisor, starting, on_note, recorder)
        if recorder:
            ctx.spark.streams.addListener(recorder)
        waiting = {s.name for s in late.never_started}
        ready = [s for s in streams if s.name not in waiting]
        # Every table of the run is created with the first stream's (~0.3 s each, overlapping),
        # not when a downstream stream starts after its upstream's catch-up.
        later = {name: schema for s in streams[1:] for name, schema in s.outputs.items()}
        try:
            for wave in catch_up_waves(ready):
                for stream in wave:
                    starting(stream.name, "catch_up")
                    query = start_stream(ctx, stream, per_stream[stream.name], "catch_up", later)
                    later = {}
                    supervisor.add(
                        stream.name,
                        query,
                        stop_when_caught_up=stream.processing_time_timers,
                        restart=again(stream, "catch_up"),
                        watermark=stream.watermark,
                    )
                supervisor.wait([s.name for s in wave])
            for stream in (s for s in ready if per_stream[s.name].mode == "continuous"):
                starting(stream.name, "continuous")
                supervisor.add(
                    stream.name,
                    start_stream(ctx, stream, per_stream[stream.name], "continuous"),
                    restart=again(stream, "continuous"),
                    watermark=stream.watermark,
                )
            supervisor.wait()
            while late.should_wait():
                late.idle(stop, watching)
                supervisor.wait()
        finally:
            for stream in late.never_started:  # the run ends without them: their wait ends too
                on_note(stream.name, "the run ends before its Kafka topic exists: not started")
                if recorder:
                    recorder.record(stream.name, "terminated")
            if recorder:
                ctx.spark.streams.removeListener(recorder)
    return supervisor


def _topic_wait(
    ctx: StreamContext,
    streams: Sequence[Stream],
    per_stream: Mapping[str, RunOptions],
    supervisor: Supervisor,
    on_start: Callable[[str, Phase], None],
    on_note: Callable[[str, str], None],
    recorder: ProgressRecorder | None,
) -> TopicWait:
    """The streams of the run that wait for a missing Kafka topic, recorded and noted as such
    (none when the broker cannot tell: their queries then start and wait on Kafka as before)."""
    topics = {s.topic for s in streams if s.topic is not None}
    missing = missing_topics(ctx.kafka_bootstrap_servers, topics) if topics else set()
    waits = waiting_streams(streams, missing or set())
    groups = {}
    for topic in dict.fromkeys(waits.values()):
        members = [s for s in streams if waits.get(s.name) == topic]
        continuous = [s for s in members if per_stream[s.name].mode == "continuous"]
        groups[topic] = (catch_up_waves(members), continuous)
    for name, topic in waits.items():
        on_note(name, waiting_note(topic))
        if recorder:
            recorder.record(name, "waiting", waiting_for=topic)

    def start(stream: Stream, phase: Phase) -> StreamingQuery:
        on_start(stream.name, phase)
        return start_stream(ctx, stream, per_stream[stream.name], phase)

    return TopicWait(ctx.kafka_bootstrap_servers, groups, start, supervisor, on_note)


def first_start_note(cleared: Sequence[str]) -> str:
    """The run log's line for a checkpoint whose interrupted first start was cleared.

    >>> first_start_note(["offsets/.0.1f.tmp", "offsets/..0.1f.tmp.crc"])
    'its first start was interrupted before batch 0 was planned (left: offsets/.0.1f.tmp, offsets/..0.1f.tmp.crc); cleared them and started afresh: nothing had been read or written yet'
    """
    return (
        f"its first start was interrupted before batch 0 was planned (left: {', '.join(cleared)}); "
        "cleared them and started afresh: nothing had been read or written yet"
    )


def catch_up_waves(streams: Sequence[Stream]) -> list[list[Stream]]:
    """``streams`` in the order their catch-ups run: a stream waits for the catch-up of every
    stream in the run that writes what it reads; streams in one wave run at the same time (two
    readers of a topic, say, or a stream and the bronze beside it).

    >>> from types import SimpleNamespace as S
    >>> def reads(name, upstream): return S(name=name, table=name, upstream=upstream)
    >>> run = [reads("raw", "topic"), reads("events", "topic"), reads("gold", "events")]
    >>> [[s.name for s in wave] for wave in catch_up_waves(run)]
    [['raw', 'events'], ['gold']]
    """
    writers = {s.table: s.name for s in streams}
    wave_of: dict[str, int] = {}
    for stream in streams:  # upstream first
        parent = writers.get(stream.upstream)
        wave_of[stream.name] = wave_of[parent] + 1 if parent in wave_of else 0
    waves: list[list[Stream]] = [[] for _ in range(max(wave_of.values(), default=-1) + 1)]
    for stream in streams:
        waves[wave_of[stream.name]].append(stream)
    return waves
