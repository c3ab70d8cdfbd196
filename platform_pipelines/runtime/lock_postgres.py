"""Stream locks in PostgreSQL, for processes on several machines that share the checkpoints.

A lock is a session-level advisory lock (``pg_try_advisory_lock``) on a connection kept open for
the lock's life. Its key is a stable 64-bit hash of the checkpoint's location string, so no file
system is touched: an ``s3a://`` checkpoint locks like a local one, provided every machine names
it the same way. PostgreSQL releases a session's locks when the session ends: at once when the
holding process exits or is killed (the kernel closes its socket), and within
``RELEASE_BOUND_SECONDS`` when its machine vanishes or is cut off (the server's TCP keepalives,
set on the session, end it). Who holds a lock is written to a small table (``TABLE``) so that a
refusal names the holder. Connect directly, or through a pooler in session mode only: a pooler in
transaction mode hands the session, and its locks, to other clients.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg2
from psycopg2.extensions import parse_dsn

TABLE = "platform_stream_locks"
# The server probes an idle lock session after IDLE seconds of silence, then every INTERVAL
# seconds; after COUNT unanswered probes it ends the session, releasing its locks. Data it sent
# and that stays unacknowledged for USER_TIMEOUT ends the session too.
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 10, 3
USER_TIMEOUT_MS = 60_000
RELEASE_BOUND_SECONDS = KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_COUNT
# The holder's side: a probe (``check``) at most every CHECK_SECONDS, failing within
# CLIENT_TIMEOUT_S when the server is gone, so a holder cut off learns it well before the server
# can hand its lock to another machine.
CHECK_SECONDS, CLIENT_TIMEOUT_S = 5.0, 10
_SCHEMA_KEY = -0x706C6174666F726D  # serialises the creation of TABLE by concurrent first users
_ADVISORY = (
    "locktype = 'advisory' AND objsubid = 1 AND granted AND database = "
    "(SELECT oid FROM pg_database WHERE datname = current_database())"
)


class LockDatabaseError(RuntimeError):
    """The lock database cannot be used: not configured, not reachable, or refused the login."""


class LockLostError(RuntimeError):
    """A held lock's session ended (the database or the network went away): others may take it."""


def lock_key(location: str) -> int:
    """The advisory lock key of ``location``: a signed 64-bit hash, the same in every process.

    >>> lock_key("s3a://lake/checkpoints/events") == lock_key("s3a://lake/checkpoints/events")
    True
    """
    digest = hashlib.blake2b(location.encode(), digest_size=8, person=b"platform-lock").digest()
    return int.from_bytes(digest, "big", signed=True)


def describe(url: str) -> str:
    """``user@host:port/database`` of ``url``: what to name in messages (never the password)."""
    try:
        params = _parse(url)
    except LockDatabaseError:
        return "(an invalid URL)"
    return (
        f"{params.get('user', '?')}@{params.get('host', 'localhost')}:"
        f"{params.get('port', 5432)}/{params.get('dbname', '?')}"
    )


class AdvisoryLocks:
    """Advisory locks held by one dedicated session; ``release`` (or the process's end) frees
    them all. ``owner`` is recorded as the holder of each lock taken."""

    def __init__(self, url: str, owner: str) -> None:
        self._url, self._owner = url, owner
        self._conn: Any = None
        self._held: list[str] = []
        self._next_check = 0.0

    def take(self, location: str) -> bool:
        """Take the lock of ``location`` unless another session holds it (never waits)."""
        cursor = self._connection().cursor()
        key = lock_key(location)
        with _reporting(self._url):
            cursor.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            if not cursor.fetchone()[0]:
                return False
            self._held.append(location)
            cursor.execute(
                f"INSERT INTO {TABLE} (lock_key, location, owner, host, pid, backend_pid, "
                "taken_at) VALUES (%s, %s, %s, %s, %s, pg_backend_pid(), now()) ON CONFLICT "
                "(lock_key) DO UPDATE SET location = EXCLUDED.location, owner = EXCLUDED.owner, "
                "host = EXCLUDED.host, pid = EXCLUDED.pid, backend_pid = EXCLUDED.backend_pid, "
                "taken_at = EXCLUDED.taken_at",
                (key, location, self._owner, socket.gethostname(), os.getpid()),
            )
        return True

    def holder(self, location: str, wait_s: float = 2.0) -> dict[str, object]:
        """Who holds ``location`` now (``owner``, ``host``, ``pid``, ``taken_at``); waits up to
        ``wait_s`` for a holder that has just taken the lock to record itself. Empty when the
        holder is unknown."""
        cursor = self._connection().cursor()
        deadline = time.monotonic() + wait_s
        while True:
            with _reporting(self._url):
                found, current = _holder(cursor, location)
            if current or time.monotonic() >= deadline:
                return found if current else {}
            time.sleep(0.1)

    def check(self) -> None:
        """Raise LockLostError if the session holding the locks is gone (a probe at most every
        ``CHECK_SECONDS``; cheap to call on every poll)."""
        if not self._held or time.monotonic() < self._next_check:
            return
        self._next_check = time.monotonic() + CHECK_SECONDS
        try:
            cursor = self._conn.cursor()
            cursor.execute(
                f"SELECT count(*) FROM pg_locks WHERE {_ADVISORY} AND pid = pg_backend_pid()"
            )
            held = cursor.fetchone()[0]
            error = "" if held >= len(self._held) else "the session no longer holds them"
        except Exception as failed:  # psycopg2.Error, or a closed connection
            error = _scrub(str(failed), self._url)
        if error:
            raise LockLostError(
                f"Lost the locks of {', '.join(self._held)} in {describe(self._url)}: another "
                f"run may take them now, so stop this run. Cause: {error}"
            )

    def release(self) -> None:
        """Free every lock (closing the session releases them all)."""
        self._held.clear()
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = connect(self._url)
        return self._conn


def held(url: str, locations: list[str]) -> set[str]:
    """Which of ``locations`` any session holds right now (one query)."""
    if not locations:
        return set()
    by_key = {lock_key(loc) & 0xFFFF_FFFF_FFFF_FFFF: loc for loc in locations}
    conn = connect(url)
    try:
        with _reporting(url):
            cursor = conn.cursor()
            cursor.execute(f"SELECT classid::bigint, objid::bigint FROM pg_locks WHERE {_ADVISORY}")
            keys = {(high << 32) | low for high, low in cursor.fetchall()}
    finally:
        conn.close()
    return {location for key, location in by_key.items() if key in keys}


def holder(url: str, location: str) -> dict[str, object]:
    """Who last took the lock of ``location`` (``owner``, ``host``, ``pid``, ``taken_at``);
    empty when no one has."""
    conn = connect(url)
    try:
        with _reporting(url):
            return _holder(conn.cursor(), location)[0]
    finally:
        conn.close()


def connect(url: str) -> Any:
    """A new autocommit session on ``url`` with server-side TCP keepalives, and ``TABLE``."""
    params = _parse(url)
    try:
        conn = psycopg2.connect(
            url,
            connect_timeout=CLIENT_TIMEOUT_S,
            keepalives=1,
            keepalives_idle=KEEPALIVE_IDLE,
            keepalives_interval=KEEPALIVE_INTERVAL,
            keepalives_count=KEEPALIVE_COUNT,
            tcp_user_timeout=CLIENT_TIMEOUT_S * 1000,
            application_name=f"platform stream lock {socket.gethostname()}:{os.getpid()}"[:63],
        )
        conn.autocommit = True
    except psycopg2.Error as error:
        raise _unusable(url, error, params.get("password")) from None
    try:
        _prepare(conn.cursor(), conn.server_version)
    except psycopg2.Error as error:
        conn.close()
        raise _unusable(url, error, params.get("password")) from None
    return conn


def _prepare(cursor: Any, version: int) -> None:
    """Ask the server to end the session when its client vanishes (and never for idleness);
    create ``TABLE`` if missing."""
    settings = {
        "tcp_keepalives_idle": KEEPALIVE_IDLE,
        "tcp_keepalives_interval": KEEPALIVE_INTERVAL,
        "tcp_keepalives_count": KEEPALIVE_COUNT,
    }
    if version >= 120000:
        settings["tcp_user_timeout"] = USER_TIMEOUT_MS
    if version >= 140000:
        settings["idle_session_timeout"] = 0  # a lock session is idle for as long as it holds
    cursor.execute("; ".join(f"SET {name} = {value}" for name, value in settings.items()))
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,))
    if not cursor.fetchone()[0]:  # creating needs the CREATE privilege: only when missing
        # One statement string runs as one transaction: the xact lock covers the CREATE.
        cursor.execute(
            f"SELECT pg_advisory_xact_lock({_SCHEMA_KEY}); CREATE TABLE IF NOT EXISTS {TABLE} ("
            "lock_key bigint PRIMARY KEY, location text NOT NULL, owner text NOT NULL, "
            "host text NOT NULL, pid integer NOT NULL, backend_pid integer NOT NULL, "
            "taken_at timestamptz NOT NULL)"
        )


@contextmanager
def _reporting(url: str) -> Iterator[None]:
    """Raise a failure of the database during the block as LockDatabaseError."""
    try:
        yield
    except psycopg2.Error as error:
        raise _unusable(url, error) from None


def _unusable(url: str, error: Exception, password: str | None = None) -> LockDatabaseError:
    return LockDatabaseError(
        f"Could not use the lock database {describe(url)} (PLATFORM_LOCK_DATABASE_URL); check "
        "that the server runs and that the URL, user and password are right. PostgreSQL said: "
        + _scrub(str(error), url, password)
    )


def _holder(cursor: Any, location: str) -> tuple[dict[str, object], bool]:
    """The recorded holder of ``location``, and whether its session holds the lock now."""
    key = lock_key(location)
    cursor.execute(
        f"SELECT owner, host, pid, taken_at, backend_pid IN (SELECT pid FROM pg_locks WHERE "
        f"{_ADVISORY} AND classid::bigint = %s AND objid::bigint = %s) FROM {TABLE} "
        "WHERE lock_key = %s",
        ((key >> 32) & 0xFFFF_FFFF, key & 0xFFFF_FFFF, key),
    )
    row = cursor.fetchone()
    if row is None:
        return {}, False
    owner, host, pid, taken_at, current = row
    return {"owner": owner, "host": host, "pid": pid, "taken_at": taken_at.isoformat()}, current


def _parse(url: str) -> dict[str, str]:
    try:
        return dict(parse_dsn(url))
    except Exception:  # its message may quote the URL, password included
        raise LockDatabaseError(
            "PLATFORM_LOCK_DATABASE_URL is not a valid PostgreSQL URL: write it as "
            "postgresql://user:password@host:port/database (percent-encode special characters)."
        ) from None


def _scrub(message: str, url: str, password: str | None = None) -> str:
    """``message`` on one line, without the password of ``url`` (libpq may quote connection
    strings)."""
    if password is None:
        try:
            password = _parse(url).get("password")
        except LockDatabaseError:
            password = None
    line = " ".join(message.split())
    return line.replace(password, "***") if password else line
