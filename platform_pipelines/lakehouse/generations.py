"""A lakehouse seen through a rebuild: some tables and checkpoints are new, the rest are live.

``platform reprocess`` runs streams on a ``ShadowLakehouse``: the rebuilt streams write their
tables' next generations (``tables/<name>@<id>``) and the platform tables (``late_events``,
``stream_ledger``, ``quarantine``) into a scratch folder, on new checkpoints, while every other
table is read where it lives. The live tables keep serving until the rebuild is switched in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from platform_pipelines.core.names import check_name
from platform_pipelines.lakehouse.delta import Lakehouse


@dataclass(frozen=True)
class ShadowLakehouse(Lakehouse):
    """``root``'s lakehouse, except for the tables and checkpoints mapped elsewhere."""

    tables: Mapping[str, Path] = field(default_factory=dict)
    checkpoints: Mapping[str, Path] = field(default_factory=dict)

    def table(self, name: str) -> Path:
        shadow = self.tables.get(check_name("table", name))
        return shadow if shadow is not None else super().table(name)

    def checkpoint(self, name: str) -> Path:
        shadow = self.checkpoints.get(check_name("stream", name))
        return shadow if shadow is not None else super().checkpoint(name)
