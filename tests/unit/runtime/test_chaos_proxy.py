"""The chaos proxy on real sockets: bytes go through, a cut drops every connection and refuses new
ones for its duration, then connections go through again."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from platform_pipelines.core.local_server import HOST, free_port, port_open
from platform_pipelines.runtime.chaos_proxy import FaultProxy
from tests.waiting import wait_for


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A server on loopback that sends back whatever it receives, per connection."""
    server = socket.create_server((HOST, 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


@pytest.fixture
def proxy(echo_port: int) -> Iterator[FaultProxy]:
    with FaultProxy(free_port(), echo_port) as started:
        yield started


def connect(proxy: FaultProxy) -> socket.socket:
    return socket.create_connection((HOST, proxy.port), timeout=5)


def round_trip(conn: socket.socket, data: bytes) -> bytes:
    conn.sendall(data)
    return conn.recv(1024)


def ended(conn: socket.socket) -> bool:
    """The connection was closed from the other end (EOF or reset)."""
    try:
        return conn.recv(1024) == b""
    except ConnectionError:
        return True


def refused(proxy: FaultProxy) -> bool:
    """A new connection fails, or is closed before it carries anything."""
    try:
        conn = connect(proxy)
    except ConnectionError:
        return True
    with conn:
        return ended(conn)


def test_bytes_go_through_both_ways_on_several_connections(proxy: FaultProxy) -> None:
    with connect(proxy) as first, connect(proxy) as second:
        assert round_trip(first, b"ping") == b"ping"
        assert round_trip(second, b"pong") == b"pong"
        assert proxy.live == 2
    wait_for(lambda: proxy.live == 0, 5, "the closed connections to be forgotten")
    assert proxy.accepted == 2


def test_a_cut_drops_live_connections_refuses_new_ones_then_lets_them_through(
    proxy: FaultProxy,
) -> None:
    with connect(proxy) as before:
        assert round_trip(before, b"a") == b"a"

        assert proxy.cut(1.0) == 1
        assert ended(before)
        assert proxy.blocked and proxy.live == 0

    assert refused(proxy)
    assert proxy.refused == 1

    wait_for(lambda: not proxy.blocked, 5, "the cut to end", every=0.05)
    with connect(proxy) as after:
        assert round_trip(after, b"b") == b"b"


def test_cut_returns_at_once_and_a_zero_cut_only_drops(proxy: FaultProxy) -> None:
    with connect(proxy) as conn:
        round_trip(conn, b"x")
        began = time.monotonic()
        assert proxy.cut(0) == 1
        assert time.monotonic() - began < 1
        assert ended(conn)
    with connect(proxy) as again:
        assert round_trip(again, b"y") == b"y"


def test_closed_proxy_frees_its_port(echo_port: int) -> None:
    port = free_port()
    proxy = FaultProxy(port, echo_port)
    with connect(proxy) as conn:
        round_trip(conn, b"z")
        proxy.close()
        assert ended(conn)
    assert not port_open(port)


def test_a_connection_whose_target_is_gone_is_closed() -> None:
    with FaultProxy(free_port(), free_port()) as proxy:
        assert refused(proxy)
        assert proxy.accepted == 0
