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
from tests.waiting import wait_for

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


def test_a_ctrl_c_while_the_command_imports_its_modules_ends_with_one_line_and_130(
    tmp_path: Path,
) -> None:
    # -X importtime reports each module as it is imported: Ctrl-C once click is in, while the
    # command's own modules (pydantic, rich, the platform's) still import.
    terminal = Terminal(
        [sys.executable, "-X", "importtime", PLATFORM, "status"], _env(tmp_path), REPO_ROOT
    )
    wait_for(lambda: "| click" in terminal.stderr, 60, "click to be imported", every=0.01)
    terminal.type("\x03")
    code = terminal.wait(60)

    said = [line for line in terminal.stderr.splitlines() if "import time:" not in line]
    assert (code, [s for s in said if s.strip()]) == (130, ["Interrupted."]), terminal.stdout
    assert "Aborted!" not in terminal.stdout


def test_a_ctrl_c_in_a_command_that_does_not_handle_it_ends_with_one_line_and_130(
    tmp_path: Path, silent_broker: str
) -> None:
    # `platform produce` waits for a broker that accepts connections and never answers.
    env = {**_env(tmp_path), "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": silent_broker}
    terminal = Terminal([PLATFORM, "produce", "--events", "10"], env, REPO_ROOT)
    time.sleep(2.5)
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
