"""Commands run in a pseudo-terminal, as a person runs them: Ctrl-C typed, stdout and stderr apart.

The command leads a session whose controlling terminal is the pty of its stdin and stdout, so a
typed Ctrl-C reaches its process group as a terminal's does; stderr is a second pty, so both
streams are terminals and can be read apart. What is read is kept as the terminal shows it, minus
colours and carriage returns.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import termios
import threading
from collections.abc import Sequence
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class Terminal:
    """A running command and what it wrote to each stream."""

    def __init__(self, command: Sequence[str], env: dict[str, str], cwd: Path) -> None:
        out_master, out_slave = os.openpty()
        err_master, err_slave = os.openpty()
        self._keys = out_master
        self.process = subprocess.Popen(
            list(command),
            env=env,
            cwd=cwd,
            stdin=out_slave,
            stdout=out_slave,
            stderr=err_slave,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(out_slave)
        os.close(err_slave)
        self._read: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
        self._readers = [
            threading.Thread(target=self._drain, args=(fd, name), daemon=True)
            for fd, name in ((out_master, "stdout"), (err_master, "stderr"))
        ]
        for reader in self._readers:
            reader.start()

    def type(self, keys: str) -> None:
        """Type ``keys`` (``"\\x03"`` is Ctrl-C)."""
        os.write(self._keys, keys.encode())

    def wait(self, timeout_s: float) -> int:
        """The command's exit code, once it and its output ended."""
        code = self.process.wait(timeout=timeout_s)
        for reader in self._readers:
            reader.join(10)
        return code

    @property
    def stdout(self) -> str:
        return _shown(self._read["stdout"])

    @property
    def stderr(self) -> str:
        return _shown(self._read["stderr"])

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)

    def _drain(self, fd: int, name: str) -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the last writer closed the pty
                return
            if not data:
                return
            self._read[name].append(data)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _shown(chunks: list[bytes]) -> str:
    return _ANSI.sub("", b"".join(chunks).decode(errors="replace")).replace("\r", "")
