"""Which folder holds a table's (or a checkpoint's) current generation.

A table named ``events`` lives in ``tables/events`` until it is rebuilt (``platform reprocess``).
A rebuild writes a new generation beside it (``tables/events@<rebuild id>``) while the old one
keeps serving, then switches the table to it by replacing one small pointer file,
``tables/_current/events``, which holds the folder's name: one atomic rename, as a metastore's
``ALTER TABLE ... SET LOCATION``. Checkpoints switch the same way (``checkpoints/_current/``):
a transformWithState checkpoint records absolute paths of its state schema files, so it cannot
be moved and must be built where it will stay. Old generations stay on disk until deleted (the
``platform reprocess`` summary says where). Everything finds tables and checkpoints through
``Lakehouse.table(name)`` / ``Lakehouse.checkpoint(name)``, which follow the pointers; a reader
that opens ``tables/<name>`` by path bypasses them and keeps seeing the first generation.
"""

from __future__ import annotations

import re
from pathlib import Path

from platform_pipelines.core.storage import replace_text

POINTERS = "_current"
# A generation folder: the table's name, then @ and the rebuild's id.
_FOLDER = re.compile(r"^[a-z][a-z0-9_]*(@[A-Za-z0-9_-]+)?$")


def generation_folder(table: str, rebuild_id: str) -> str:
    """The folder of ``table``'s generation written by rebuild ``rebuild_id``.

    >>> generation_folder("events", "r20261123T144000")
    'events@r20261123T144000'
    """
    return f"{table}@{rebuild_id}"


def current_folder(tables: Path, name: str) -> str:
    """The folder (under ``tables``, or ``checkpoints``) of ``name``'s current generation: the
    pointer's content, else ``name`` itself."""
    try:
        folder = (tables / POINTERS / name).read_text().strip()
    except FileNotFoundError:
        return name
    if not _FOLDER.match(folder) or not folder.split("@")[0] == name:
        raise ValueError(
            f"The pointer {tables / POINTERS / name} holds {folder!r}, which is not a "
            f"generation of {name!r}; write the folder name of one (e.g. {name!r}) into it, or "
            "delete it to use tables/<name>."
        )
    return folder


def point_to(tables: Path, name: str, folder: str) -> None:
    """Make ``folder`` the current generation of ``name`` (an atomic replace of the pointer;
    on S3 a PUT, which readers see whole or not at all)."""
    replace_text(tables / POINTERS / name, folder + "\n")
