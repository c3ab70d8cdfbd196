"""A TCP proxy on loopback that can cut the network: every connection dropped, new ones refused.

``platform chaos`` puts it between the pipeline and the broker (the broker advertises the proxy's
port, so every connection of the pipeline goes through it). ``cut(seconds)`` closes every live
connection at once and, for that long, closes each new one as soon as it is accepted (with a reset,
as a refused connection); then connections go through again. Each connection is two threads
copying bytes, one per direction: a pipeline holds a handful of them.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

from platform_pipelines.core.local_server import HOST

_CHUNK = 64 * 1024
# SO_LINGER on, timeout 0: the connection ends with a reset, not a graceful close.
_RESET = struct.pack("ii", 1, 0)


class FaultProxy:
    """Forwards ``HOST:port`` to ``HOST:target_port`` until ``close``.

    Usage::

        with FaultProxy(port, broker_port) as proxy:
            proxy.cut(8.0)  # drops every connection, refuses new ones for 8 s
    """

    def __init__(self, port: int, target_port: int) -> None:
        self.port = port
        self.target_port = target_port
        self.accepted = 0  # connections accepted and forwarded, ever
        self.refused = 0  # connections closed at once during a cut
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._blocked_until = 0.0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._server = socket.create_server((HOST, port))
        self._server.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)
        self._thread.start()

    @property
    def live(self) -> int:
        """Connections open through the proxy now."""
        with self._lock:
            return len(self._pairs)

    @property
    def blocked(self) -> bool:
        """A cut is under way."""
        return time.monotonic() < self._blocked_until

    def cut(self, seconds: float) -> int:
        """Drop every live connection and refuse new ones for ``seconds`` (returns at once);
        returns how many connections were dropped."""
        with self._lock:
            self._blocked_until = time.monotonic() + seconds
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            _drop(*pair)
        return len(pairs)

    def close(self) -> None:
        """Stop accepting and drop every connection."""
        self._closed.set()
        self._thread.join(5)
        self._server.close()
        self.cut(0)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.blocked:
                self.refused += 1
                _drop(client)
                continue
            self._forward(client)

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection((HOST, self.target_port), timeout=5)
        except OSError:
            _drop(client)
            return
        upstream.settimeout(None)
        client.settimeout(None)
        pair = (client, upstream)
        with self._lock:
            cut = self.blocked  # a cut that began while this one connected upstream
            if not cut:
                self._pairs.add(pair)
                self.accepted += 1
        if cut:
            _drop(*pair)
            return
        for source, sink in (pair, pair[::-1]):
            threading.Thread(target=self._pump, args=(source, sink, pair), daemon=True).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        pair: tuple[socket.socket, socket.socket],
    ) -> None:
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        except OSError:
            pass  # dropped by a cut, or reset by either end
        with self._lock:
            ours = pair in self._pairs
            self._pairs.discard(pair)
        if ours:  # one side ended: end the other (a cut has closed both already)
            _drop(*pair)


def _drop(*sockets: socket.socket) -> None:
    """Close ``sockets`` at once, with a reset: the other end sees the connection fail."""
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
