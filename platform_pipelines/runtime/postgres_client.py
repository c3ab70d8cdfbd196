"""Reaching one database of the local PostgreSQL: its address and credentials (as Dagster's
variables, a URL or shell exports) and one SQL statement run through ``psql``."""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from platform_pipelines.runtime.postgres_programs import PostgresError, find_bin_dir


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

    def shell_exports(self, password_file: Path) -> list[str]:
        """Shell lines for ``dagster-postgres.yaml``; the password is read from
        ``password_file`` when the shell runs them, never printed."""
        return [
            f"export DAGSTER_PG_HOST={self.host}",
            f"export DAGSTER_PG_PORT={self.port}",
            f"export DAGSTER_PG_USERNAME={self.user}",
            f'export DAGSTER_PG_PASSWORD="$(cat {shlex.quote(str(password_file))})"',
            f"export DAGSTER_PG_DB={shlex.quote(self.database)}",
        ]

    @property
    def url(self) -> str:
        """``postgresql://user:password@host:port/database`` (``PLATFORM_LOCK_DATABASE_URL``)."""
        return (
            f"postgresql://{quote(self.user)}:{quote(self.password, safe='')}@{self.host}:"
            f"{self.port}/{quote(self.database)}"
        )


def psql(conn: PgConnection, statement: str) -> list[list[str]]:
    """Run one SQL statement with ``psql`` on ``conn``'s database; its rows as lists of strings."""
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
        conn.database,
        "-c",
        statement,
    ]
    env = {**os.environ, "PGPASSWORD": conn.password, "PGCONNECT_TIMEOUT": "10"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise PostgresError(f"psql on {conn.database} failed: {done.stderr.strip()} ({statement})")
    return [line.split("\t") for line in done.stdout.splitlines() if line]
