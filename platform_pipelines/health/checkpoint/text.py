"""How the checkpoint judgements write ids, lists and counts."""

from __future__ import annotations

from collections.abc import Iterable

from platform_pipelines.health.checkpoint.model import Missing, missing_between


def gaps_between(ids: list[int]) -> Missing:
    """Batch ids missing between the smallest and the largest of ``ids`` (ascending)."""
    return missing_between(ids, ids[0], ids[-1]) if ids else Missing(0, ())


def id_list(ids: Iterable[int], limit: int = 5) -> str:
    """``7, 8`` (the first ``limit`` ids, then how many in all)."""
    ids = list(ids)
    shown = ", ".join(str(i) for i in ids[:limit])
    return f"{shown} ... ({len(ids)} in all)" if len(ids) > limit else shown


def listed(items: Iterable[object], limit: int = 3) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:limit])
    return f"{shown} and {len(items) - limit} more" if len(items) > limit else shown


def plural(n: int, noun: str) -> str:
    """``1 batch``, ``2 batches``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith(('ch', 's')) else 's'}"


def short_name(provider: str) -> str:
    """``...state.RocksDBStateStoreProvider`` -> ``RocksDBStateStoreProvider``."""
    return provider.rsplit(".", 1)[-1]
