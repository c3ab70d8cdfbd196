"""Whether a Kafka broker answers at all: one TCP connect, before any Kafka client is made.

A down broker is noticed in milliseconds this way instead of after a client's seconds of retries;
whether the platform's clients are let in (TLS, credentials) is a question for ``kafka.admin``.
"""

from __future__ import annotations

import socket


def reachable(bootstrap: str, timeout_s: float = 0.5) -> bool:
    """Whether any server of ``bootstrap`` (``host:port,...``) accepts a TCP connection.

    >>> reachable("localhost:not-a-port")
    False
    """
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            socket.create_connection((host or "localhost", int(port)), timeout_s).close()
            return True
        except (OSError, ValueError):
            continue
    return False
