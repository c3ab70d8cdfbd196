"""The PostgreSQL programs the local server runs with: where ``initdb``, ``pg_ctl``, ``postgres``
and ``psql`` are installed, the account they run as under root, and what the server is told.

They come from the system (Debian: ``apt-get install postgresql``). PostgreSQL refuses to run as
root: under root, every server command runs as the ``postgres`` user the package creates.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
from pathlib import Path
from typing import Any

from platform_pipelines.core.local_server import HOST

USER = "dagster"  # the superuser initdb creates, and whom clients log in as
SERVER_USER = "postgres"  # who runs the server when we are root (created by Debian's package)
INSTALL = "apt-get update && apt-get install -y postgresql"
TOOLS = ("initdb", "pg_ctl", "postgres", "psql")


class PostgresError(RuntimeError):
    """The local PostgreSQL could not be found, started or stopped; the message says what to do."""


def find_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl``, ``postgres`` and ``psql``: the one of ``pg_ctl``
    on PATH, else Debian's newest ``/usr/lib/postgresql/<version>/bin``."""
    candidates = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    debian = Path("/usr/lib/postgresql")
    versions = (
        [p for p in debian.glob("*/bin") if p.parent.name.isdigit()] if debian.is_dir() else []
    )
    candidates += sorted(versions, key=lambda p: int(p.parent.name), reverse=True)
    for folder in candidates:
        if all(os.access(folder / tool, os.X_OK) for tool in TOOLS):
            return folder
    raise PostgresError(
        "The PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed: neither "
        "pg_ctl on PATH nor /usr/lib/postgresql/<version>/bin has them. Install them once (Debian "
        f"or Ubuntu, as root): {INSTALL}   (or run `make system-deps`), then try again."
    )


def server_account() -> pwd.struct_passwd | None:
    """The account the server runs as when we are root; None when we are not."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise PostgresError(
            f"PostgreSQL refuses to run as root, and there is no `{SERVER_USER}` user to run it "
            f"as. Install the server package (it creates that user): {INSTALL}; or run as a "
            "regular user."
        ) from None


def as_server_user(account: pwd.struct_passwd | None) -> dict[str, Any]:
    """The ``subprocess.run`` arguments that run a program as ``account`` (none for None)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def initdb_command(bin_dir: Path, data_dir: Path, password_file: Path, durable: bool) -> list[str]:
    """``initdb`` of a cluster in ``data_dir`` whose superuser ``dagster`` logs in with SCRAM and
    the password in ``password_file``; ``durable=False`` skips its fsync calls."""
    return [
        str(bin_dir / "initdb"),
        "-D",
        str(data_dir),
        "-U",
        USER,
        f"--pwfile={password_file}",
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--no-locale",
        *([] if durable else ["--no-sync"]),
    ]


def server_options(port: int, durable: bool) -> str:
    """The ``postgres`` options (``pg_ctl -o``): TCP on 127.0.0.1:``port`` only, no Unix socket;
    ``durable=False`` (tests) trades crash safety for speed."""
    options = [
        "-c",
        f"listen_addresses={HOST}",
        "-p",
        str(port),
        "-c",
        "unix_socket_directories=",
    ]
    if not durable:
        options += [
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
    return " ".join(shlex.quote(option) for option in options)
