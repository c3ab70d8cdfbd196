"""A checkpoint's stateful operators, read from its operator metadata files in Python.

Spark writes each stateful operator's metadata beside its state: ``state/<id>/_metadata/metadata``
(format v1: the operator's name and its stores) or, for ``transformWithState``,
``state/<id>/_metadata/v2/<batch>`` (v2: also the time mode and the state variables, as the JSON
text ``operatorPropertiesJson``). For a batch, Spark's ``state-metadata`` source reads the newest
v2 file at or before it, else the v1 file; ``operators_from_files`` does the same without a Spark
job, which on a cold JVM costs seconds. It returns None where the files do not say (an operator
folder without metadata, a file it cannot parse), and the caller asks Spark instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Operator:
    """One stateful operator of a checkpoint, as ``state-metadata`` lists it.

    Attributes:
        id: the ``operatorId`` option.
        name: Spark's name: ``transformWithStateInPySparkExec``, ``dedupeWithinWatermark``...
        stores: its state store names (``default``; a stream-stream join has four).
        time_mode: ``EventTime``, ``ProcessingTime`` or ``NoTime`` for transformWithState; None
            for Spark's own operators.
        variables: the user's state variables of a transformWithState operator (timers, whose
            names start with ``$``, are read with ``readRegisteredTimers``).
    """

    id: int
    name: str
    stores: tuple[str, ...]
    time_mode: str | None = None
    variables: tuple[str, ...] = ()


def operator(
    operator_id: int, name: str, stores: list[str], properties: dict[str, Any]
) -> Operator:
    """An ``Operator`` from the fields of a ``state-metadata`` row (its properties parsed)."""
    variables = tuple(
        v["stateName"]
        for v in properties.get("stateVariables", ())
        if not v["stateName"].startswith("$")
    )
    mode = properties.get("timeMode", "NoTime") if "stateVariables" in properties else None
    return Operator(operator_id, name, tuple(sorted(stores)), mode, variables)


def operators_from_files(checkpoint: Path, batch_id: int) -> list[Operator] | None:
    """The operators ``state-metadata`` lists at ``batch_id``, from the metadata files; None when
    any operator's files are missing or unreadable."""
    state = checkpoint / "state"
    if not state.is_dir():
        return []
    ids = sorted(int(p.name) for p in state.iterdir() if p.is_dir() and p.name.isdigit())
    found = []
    for op_id in ids:
        op = _operator_at(state / str(op_id), batch_id)
        if op is None or op.id != op_id:
            return None
        found.append(op)
    return found


def _operator_at(folder: Path, batch_id: int) -> Operator | None:
    v2 = folder / "_metadata" / "v2"
    if v2.is_dir():
        batches = sorted(int(p.name) for p in v2.iterdir() if p.name.isdigit())
        at = [b for b in batches if b <= batch_id]
        path = v2 / str(at[-1]) if at else None
    else:
        path = folder / "_metadata" / "metadata"
    if path is None or not path.is_file():
        return None
    try:
        version, _, body = path.read_text().partition("\n")
        meta = json.loads(body.splitlines()[0])
        info = meta["operatorInfo"]
        stores = [str(s["storeName"]) for s in meta["stateStoreInfo"]]
        props = json.loads(meta.get("operatorPropertiesJson") or "{}")
        if version.strip() not in ("v1", "v2") or not stores or not isinstance(props, dict):
            return None
        return operator(int(info["operatorId"]), str(info["operatorName"]), stores, props)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError):
        return None
