"""When the health sensor reports again: the re-report policy, as a pure decision.

A check result is reported when its status changed, when the stream's run changed (a new run,
or the run stopped: the UI shows only results newer than the table's last materialization, which
a run records when it starts and stops), or when the last report is older than ``every_seconds``.
Numbers are observed when a new batch was recorded, or at the same cadence while nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REPORT_EVERY_SECONDS = 300.0


@dataclass
class Reported:
    """What was last reported, by key (``<stream>/<check>`` for checks, the stream for numbers):
    ``(status or batch id, when)``. Serialised into the sensor's cursor."""

    checks: dict[str, tuple[str, float]] = field(default_factory=dict)
    observed: dict[str, tuple[int, float]] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, Any]]) -> Reported:
        return cls(
            {k: (str(v[0]), float(v[1])) for k, v in (data.get("checks") or {}).items()},
            {k: (int(v[0]), float(v[1])) for k, v in (data.get("observed") or {}).items()},
            {k: str(v) for k, v in (data.get("runs") or {}).items()},
        )

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {
            "checks": {k: list(v) for k, v in self.checks.items()},
            "observed": {k: list(v) for k, v in self.observed.items()},
            "runs": dict(self.runs),
        }

    def run_changed(self, stream: str, run: str) -> bool:
        """Whether ``stream``'s run (id and status, as one string) changed since the last tick."""
        changed = self.runs.get(stream) != run
        self.runs[stream] = run
        return changed

    def check_due(
        self,
        key: str,
        status: str,
        now: float,
        every: float = REPORT_EVERY_SECONDS,
        force: bool = False,
    ) -> bool:
        """Whether the check ``key`` with ``status`` should be reported now (and note it if so)."""
        last_status, last_at = self.checks.get(key, ("", 0.0))
        if force or last_status != status or now - last_at >= every:
            self.checks[key] = (status, now)
            return True
        return False

    def observation_due(
        self, stream: str, batch_id: int, now: float, every: float = REPORT_EVERY_SECONDS
    ) -> bool:
        """Whether the numbers of ``stream`` at ``batch_id`` should be observed now."""
        last_batch, last_at = self.observed.get(stream, (-2, 0.0))
        if last_batch != batch_id or now - last_at >= every:
            self.observed[stream] = (batch_id, now)
            return True
        return False
