"""Whether a broker answers at all, told by one TCP connect to real sockets on this machine."""

from __future__ import annotations

import socket

from platform_pipelines.kafka.reachability import reachable


def test_a_listening_server_is_reachable_even_after_one_that_is_not():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert reachable(f"127.0.0.1:{port}")
        assert reachable(f"127.0.0.1:1, 127.0.0.1:{port}")


def test_a_closed_port_and_an_address_without_a_port_are_not_reachable():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    assert not reachable(f"127.0.0.1:{port}")
    assert not reachable("localhost")
    assert not reachable("")
