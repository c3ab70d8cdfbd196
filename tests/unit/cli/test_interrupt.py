"""A Ctrl-C at any moment of `platform` ends with one line and exit code 130 (cli.entry): while
its modules import, or in a command that does not handle it. No JVM: the commands never get
that far."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from platform_pipelines.settings import REPO_ROOT
from tests.terminal import Terminal

PLATFORM = str(Path(sys.executable).parent / "platform")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PLATFORM_LOCAL_DIR": str(tmp_path / "local")}


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """An address that accepts connections and never answers: a Kafka client waits on it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"127.0.0.1:{server.getsockname()[1]}"


# 0.3 s: `platform` is still importing its modules; 2.5 s: `platform produce` waits for the
# broker's answer, in a command that does not handle Ctrl-C itself.
@pytest.mark.parametrize("after_s", [0.3, 2.5])
def test_a_ctrl_c_while_importing_or_in_a_command_ends_with_one_line_and_130(
    tmp_path: Path, silent_broker: str, after_s: float
) -> None:
    env = {**_env(tmp_path), "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": silent_broker}
    terminal = Terminal([PLATFORM, "produce", "--events", "10"], env, REPO_ROOT)
    time.sleep(after_s)
    terminal.type("\x03")
    code = terminal.wait(60)

    assert (code, terminal.stderr.strip()) == (130, "Interrupted."), terminal.stdout
    assert "Traceback" not in terminal.stdout and "Aborted!" not in terminal.stdout


def test_usage_errors_and_help_keep_click_s_codes(tmp_path: Path) -> None:
    wrong = Terminal([PLATFORM, "nosuch"], _env(tmp_path), REPO_ROOT)
    assert wrong.wait(60) == 2
    assert "No such command 'nosuch'" in wrong.stderr
    helped = Terminal([PLATFORM, "--help"], _env(tmp_path), REPO_ROOT)
    assert helped.wait(60) == 0
    assert "Usage: platform" in helped.stdout
