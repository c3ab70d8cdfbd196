"""A local PostgreSQL server for Dagster's storage (development and tests): its folder, and
starting, finding and stopping it.

Everything lives in ``folder`` (``.local/postgres`` for the CLI): the cluster in ``data/`` (created
by ``initdb`` on the first start and kept), its log ``postgres.log``, the superuser's password
``password`` (0600, generated once) and, while it runs, ``postgres.json`` (port, pid, user) so other
processes find it. The server listens on 127.0.0.1 only (TCP, no Unix socket), with password
authentication (SCRAM); under root, ``folder`` belongs to the ``postgres`` user that runs it
(``postgres_programs``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

from platform_pipelines.core.local_server import (
    HOST,
    free_port,
    live_state,
    log_lines,
    pid_runs,
    port_open,
    write_state,
)
from platform_pipelines.runtime.postgres_client import PgConnection, psql
from platform_pipelines.runtime.postgres_programs import (
    SERVER_USER,
    USER,
    PostgresError,
    as_server_user,
    find_bin_dir,
    initdb_command,
    server_account,
    server_options,
)

DATABASE = "dagster"
STATE_FILE = "postgres.json"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class LocalPostgres:
    """One PostgreSQL cluster in ``folder``, served on ``port`` (default: the last one, else a
    free one). ``durable=False`` (tests) skips fsync: faster, lost on a machine crash.
    ``start()`` returns the connection to the ``dagster`` database; ``stop()`` keeps the data."""

    def __init__(self, folder: Path, port: int | None = None, durable: bool = True) -> None:
        self.folder = Path(folder).resolve()
        self.data_dir = self.folder / "data"
        self.log_path = self.folder / "postgres.log"
        self.password_file = self.folder / "password"
        self._port = port
        self.durable = durable

    def running(self) -> dict[str, Any] | None:
        """``postgres.json`` of the live server of this folder, else None (a stale file is removed)."""
        return live_state(self.folder / STATE_FILE, _serves)

    def connection(self, database: str = DATABASE) -> PgConnection:
        """How to reach ``database`` on the running server."""
        info = self.running()
        if info is None:
            raise PostgresError(
                f"No PostgreSQL server runs for {self.folder}: start it with "
                "`platform postgres start` (or LocalPostgres.start())."
            )
        password = self.password_file.read_text().strip()
        return PgConnection(HOST, int(info["port"]), USER, password, database)

    def export_lines(self, database: str = DATABASE) -> list[str]:
        """Shell lines for ``dagster-postgres.yaml``; the password is read from its file when the
        shell runs them, never printed."""
        return self.connection(database).shell_exports(self.password_file)

    def start(self, timeout_s: float = 60) -> PgConnection:
        """Create the cluster if new, start it, wait until it answers, create the ``dagster``
        database; returns its connection. Nothing to do when it runs already."""
        if self.running() is None:
            bin_dir = find_bin_dir()
            self._prepare_folder()
            if not (self.data_dir / "PG_VERSION").exists():
                self._initdb(bin_dir, timeout_s)
            port = self._choose_port()
            self._pg_ctl(
                bin_dir,
                timeout_s,
                "start",
                "-w",
                "-t",
                str(int(timeout_s)),
                "-l",
                str(self.log_path),
                "-o",
                server_options(port, self.durable),
            )
            self._write_state(port)
        self.create_database(DATABASE)
        return self.connection()

    def stop(self, timeout_s: float = 60) -> bool:
        """Stop the server (fast shutdown: open sessions are ended); False when none ran. The data
        stays in ``folder`` for the next start."""
        was_running = self.running() is not None
        pid = self._postmaster_pid()
        if pid is not None and pid_runs(pid, b"postgres"):
            self._pg_ctl(
                find_bin_dir(), timeout_s, "stop", "-m", "fast", "-w", "-t", str(int(timeout_s))
            )
            was_running = True
        (self.folder / STATE_FILE).unlink(missing_ok=True)
        return was_running

    def create_database(self, name: str) -> PgConnection:
        """Create database ``name`` unless it exists (lowercase letters, digits, ``_``)."""
        if not _NAME.match(name):
            raise PostgresError(f"{name!r} is not a plain database name: use [a-z_][a-z0-9_]*.")
        exists = self.sql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{name}'")
        if not exists:
            self.sql("postgres", f'CREATE DATABASE "{name}"')
        return self.connection(name)

    def sql(self, database: str, statement: str) -> list[list[str]]:
        """Run one SQL statement with ``psql`` on ``database``; its rows as lists of strings."""
        return psql(self.connection(database), statement)

    def _prepare_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        owner = server_account()
        if owner is not None:
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            probe = subprocess.run(
                ["test", "-w", str(self.folder)], check=False, **as_server_user(owner)
            )
            if probe.returncode != 0:
                raise PostgresError(
                    f"PostgreSQL refuses to run as root, so it runs as the `{SERVER_USER}` user, "
                    f"which cannot reach {self.folder} (a parent folder is not searchable by "
                    "others). Choose a folder it can reach (e.g. under /var/tmp), or run as a "
                    "regular user."
                )
        if not self.password_file.exists():
            if (self.data_dir / "PG_VERSION").exists():
                raise PostgresError(
                    f"{self.data_dir} exists but its password file {self.password_file} is gone: "
                    f"delete {self.data_dir} (drops its databases) and start again."
                )
            fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(24) + "\n")
        if owner is not None:
            os.chown(self.password_file, owner.pw_uid, owner.pw_gid)

    def _initdb(self, bin_dir: Path, timeout_s: float) -> None:
        cmd = initdb_command(bin_dir, self.data_dir, self.password_file, self.durable)
        done = self._run(cmd, timeout_s)
        if done.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)  # a half-made cluster never starts
            raise PostgresError(
                f"initdb failed for {self.data_dir}:\n{done.stdout}{done.stderr}\n"
                "Fix the cause above and start again."
            )

    def _pg_ctl(self, bin_dir: Path, timeout_s: float, *args: str) -> None:
        done = self._run([str(bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args], timeout_s + 10)
        if done.returncode != 0:
            raise PostgresError(
                f"pg_ctl {args[0]} failed for {self.data_dir}: {done.stdout}{done.stderr}".strip()
                + f"\nLast lines of {self.log_path}:\n{self._log_tail()}\nIf the port is "
                "taken, pass another (--port); if the cluster is damaged, delete "
                f"{self.data_dir} (drops its databases) and start again."
            )

    def _run(self, cmd: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LC_ALL": "C"}
        kwargs = as_server_user(server_account())
        try:
            return subprocess.run(
                cmd,
                env=env,
                cwd=self.folder,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                **kwargs,
            )
        except subprocess.TimeoutExpired as error:
            raise PostgresError(
                f"{Path(cmd[0]).name} did not finish within {timeout_s:.0f}s. Last lines of "
                f"{self.log_path}:\n{self._log_tail()}"
            ) from error

    def _choose_port(self) -> int:
        previous = self._previous_port()
        if self._port is not None:
            return self._port
        if previous is not None and not port_open(previous):
            return previous  # a stable address across restarts
        return free_port()

    def _previous_port(self) -> int | None:
        try:
            return int((self.folder / "last_port").read_text())
        except (OSError, ValueError):
            return None

    def _write_state(self, port: int) -> None:
        state = {
            "pid": self._postmaster_pid(),
            "port": port,
            "host": HOST,
            "user": USER,
            "data_dir": str(self.data_dir),
            "log": str(self.log_path),
        }
        write_state(self.folder / STATE_FILE, state)
        (self.folder / "last_port").write_text(f"{port}\n")

    def _postmaster_pid(self) -> int | None:
        try:  # its first line, written by the server while it runs
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _log_tail(self, lines: int = 20) -> str:
        return "\n".join(log_lines(self.log_path)[-lines:]) or "(no log yet)"


def _serves(state: dict[str, Any]) -> bool:
    """The server of ``postgres.json`` still runs: its postmaster lives and its port answers."""
    return pid_runs(int(state["pid"]), b"postgres") and port_open(int(state["port"]))
