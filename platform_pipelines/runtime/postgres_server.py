"""A local PostgreSQL server for Dagster's storage (development and tests), from the PostgreSQL
binaries the system has (Debian: ``apt-get install postgresql``).

Everything lives in ``folder`` (``.local/postgres`` for the CLI): the cluster in ``data/`` (created
by ``initdb`` on the first start and kept), its log ``postgres.log``, the superuser's password
``password`` (0600, generated once) and, while it runs, ``postgres.json`` (port, pid, user) so other
processes find it. The server listens on 127.0.0.1 only (TCP, no Unix socket), with password
authentication (SCRAM). PostgreSQL refuses to run as root: under root, ``folder`` belongs to the
``postgres`` user the package creates and every server command runs as that user.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

HOST = "127.0.0.1"
USER = "dagster"
DATABASE = "dagster"
SERVER_USER = "postgres"  # who runs the server when we are root (created by Debian's package)
STATE_FILE = "postgres.json"
INSTALL = "apt-get update && apt-get install -y postgresql"
TOOLS = ("initdb", "pg_ctl", "postgres", "psql")
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


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


@dataclass(frozen=True)
class PgConnection:
    """What a client needs to reach one database of the server."""

    host: str
    port: int
    user: str
    password: str
    database: str

    def dagster_env(self) -> dict[str, str]:
        """The variables ``dagster_home/dagster-postgres.yaml`` reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.database,
        }

    @property
    def url(self) -> str:
        """``postgresql://user:password@host:port/database`` (``PLATFORM_LOCK_DATABASE_URL``)."""
        return (
            f"postgresql://{quote(self.user)}:{quote(self.password, safe='')}@{self.host}:"
            f"{self.port}/{quote(self.database)}"
        )


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
        state = self.folder / STATE_FILE
        try:
            info: dict[str, Any] = json.loads(state.read_text())
        except (OSError, ValueError):
            return None
        if _postmaster_alive(int(info["pid"])) and _port_open(int(info["port"])):
            return info
        state.unlink(missing_ok=True)
        return None

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
        conn = self.connection(database)
        return [
            f"export DAGSTER_PG_HOST={conn.host}",
            f"export DAGSTER_PG_PORT={conn.port}",
            f"export DAGSTER_PG_USERNAME={conn.user}",
            f'export DAGSTER_PG_PASSWORD="$(cat {shlex.quote(str(self.password_file))})"',
            f"export DAGSTER_PG_DB={shlex.quote(conn.database)}",
        ]

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
                self._server_options(port),
            )
            self._write_state(port)
        self.create_database(DATABASE)
        return self.connection()

    def stop(self, timeout_s: float = 60) -> bool:
        """Stop the server (fast shutdown: open sessions are ended); False when none ran. The data
        stays in ``folder`` for the next start."""
        was_running = self.running() is not None
        pid = self._postmaster_pid()
        if pid is not None and _postmaster_alive(pid):
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
        conn = self.connection(database)
        cmd = [
            str(find_bin_dir() / "psql"),
            "-X",
            "-q",
            "-tA",
            "-F",
            "\t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            conn.host,
            "-p",
            str(conn.port),
            "-U",
            conn.user,
            "-d",
            database,
            "-c",
            statement,
        ]
        env = {**os.environ, "PGPASSWORD": conn.password, "PGCONNECT_TIMEOUT": "10"}
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise PostgresError(f"psql on {database} failed: {done.stderr.strip()} ({statement})")
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    def _prepare_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        owner = _server_account()
        if owner is not None:
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            probe = subprocess.run(
                ["test", "-w", str(self.folder)], check=False, **_as_server_user(owner)
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
        cmd = [
            str(bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            USER,
            f"--pwfile={self.password_file}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            *([] if self.durable else ["--no-sync"]),
        ]
        done = self._run(cmd, timeout_s)
        if done.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)  # a half-made cluster never starts
            raise PostgresError(
                f"initdb failed for {self.data_dir}:\n{done.stdout}{done.stderr}\n"
                "Fix the cause above and start again."
            )

    def _server_options(self, port: int) -> str:
        options = [
            "-c",
            f"listen_addresses={HOST}",
            "-p",
            str(port),
            "-c",
            "unix_socket_directories=",
        ]
        if not self.durable:
            options += [
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ]
        return " ".join(shlex.quote(option) for option in options)

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
        kwargs = _as_server_user(_server_account())
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
        if previous is not None and not _port_open(previous):
            return previous  # a stable address across restarts
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            return int(sock.getsockname()[1])

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
        (self.folder / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        (self.folder / "last_port").write_text(f"{port}\n")

    def _postmaster_pid(self) -> int | None:
        try:  # its first line, written by the server while it runs
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log yet)"


def _server_account() -> pwd.struct_passwd | None:
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


def _as_server_user(account: pwd.struct_passwd | None) -> dict[str, Any]:
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def _postmaster_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # the pid may belong to another process by now
        return b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
