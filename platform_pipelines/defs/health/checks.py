"""Every health check a stream's asset carries, built from one list of specs.

Cheap checks are judged from files by the health sensor every ~30 s (and by the health-check job);
deep ones need Spark or read whole tables and run in the scheduled health-check job; the restart
check is reported by the auto-restart sensor. Data checks apply to the built-in tables they name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import dagster as dg

from platform_pipelines.streams.declare import StatefulStream, Stream, asset_key

Kind = Literal["cheap", "deep", "restart"]


@dataclass(frozen=True)
class CheckDef:
    """One check: its name (also the judgement's), when it runs, what it says, whom it applies to."""

    name: str
    kind: Kind
    description: str
    applies: Callable[[Stream], bool] = lambda stream: True


def _table(name: str) -> Callable[[Stream], bool]:
    return lambda stream: stream.table == name


def _stateful(stream: Stream) -> bool:
    return isinstance(stream, StatefulStream)


CHECKS: tuple[CheckDef, ...] = (
    CheckDef(
        "liveness",
        "cheap",
        "The stream's query reports progress while its run is "
        "supposed to be running, and its last run did not die; names the cause when the "
        "Kafka broker does not answer.",
    ),
    CheckDef(
        "falling_behind",
        "cheap",
        "The stream keeps up: input rate not above the processed "
        "rate, and few records behind its input (Kafka end offsets, or upstream table rows, "
        "against what its checkpoint committed).",
    ),
    CheckDef(
        "state_growth",
        "cheap",
        "State does not leak (grow while nothing is removed) and "
        "stays within its budget; forecasts when the budget is reached; bytes per key.",
    ),
    CheckDef(
        "late_data",
        "cheap",
        "Every row gets in: none dropped by the watermark without being "
        "kept in late_events, few kept there, and the watermark not ahead of the clock.",
    ),
    CheckDef(
        "checkpoint",
        "cheap",
        "The checkpoint folder is consistent: at most one batch "
        "without its commit, no gaps, retention working, snapshots keeping up, no damaged "
        "state files, state partitions and provider as configured.",
    ),
    CheckDef(
        "kafka_replication",
        "cheap",
        "Every partition of the stream's Kafka topic has a "
        "leader and enough in-sync copies: fails when a partition has no leader or fewer "
        "in-sync replicas than min.insync.replicas (acks=all producers refused), warns when "
        "a broker is down or copies fell behind.",
        lambda stream: stream.topic is not None,
    ),
    CheckDef(
        "auto_restart",
        "restart",
        "A failed run of this stream is relaunched with backoff; "
        "fails when the platform gave up or refused (a failure that can only fail again).",
    ),
    CheckDef(
        "no_silent_loss",
        "deep",
        "Rows in = rows out + late + quarantined + absorbed by the "
        "logic, each term counted in the stream's ledger and again in its tables and input.",
    ),
    CheckDef(
        "freshness", "deep", "The table was written recently (PLATFORM_FRESHNESS_MAX_AGE_SECONDS)."
    ),
    CheckDef(
        "state_metadata",
        "deep",
        "Spark's state-metadata reader lists the checkpoint's "
        "stateful operators; their partition count matches the configuration.",
        _stateful,
    ),
    CheckDef(
        "no_duplicate_event_id", "deep", "Silver holds every event_id once.", _table("events")
    ),
    CheckDef(
        "sessions_valid",
        "deep",
        "Every session ends at or after its start; a user's sessions never overlap.",
        _table("user_sessions"),
    ),
    CheckDef(
        "alerts_well_formed",
        "deep",
        "Alerts have a unique id, a user, at least one failure and ordered failure times.",
        _table("security_alerts"),
    ),
)
CHEAP = tuple(c.name for c in CHECKS if c.kind == "cheap")


def specs(streams: Sequence[Stream], kind: Kind) -> list[dg.AssetCheckSpec]:
    """The check specs of ``kind`` for every stream they apply to."""
    return [
        dg.AssetCheckSpec(check.name, asset=asset_key(stream), description=check.description)
        for stream in streams
        for check in CHECKS
        if check.kind == kind and check.applies(stream)
    ]
