"""Quiet by default: `platform demo` (what `make demo` runs) and `platform state show` print the
platform's own lines; Spark's and Dagster's own output goes to the log file, which names it, and
`platform --verbose` shows it."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from platform_pipelines.settings import REPO_ROOT, get_settings
from tests.terminal import Terminal

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.kafka]
# What reached the terminal before: Spark's Python workers, Dagster's warnings and engine events,
# the JVM's and log4j's start-up lines, Spark's warnings, stack traces.
CHATTER = (
    "Python worker",
    "Received UDF from JVM",
    "State server port",
    "BetaWarning",
    "SupersessionWarning",
    "log4j",
    "Using incubator modules",
    "setLogLevel",
    " WARN ",
    " - DEBUG - ",
    "RUN_",
    "Traceback",
)


def test_the_demo_and_state_show_print_only_the_platform_s_own_lines(tmp_path: Path) -> None:
    home, local = tmp_path / "home", tmp_path / "local"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PLATFORM_LOCAL_DIR": str(local),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_UI_ENABLED": "false",
    }
    env.pop("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", None)  # the demo starts its own broker
    platform = str(Path(sys.executable).parent / "platform")

    demo = Terminal([platform, "demo"], env, REPO_ROOT)
    assert demo.wait(1200) == 0, demo.stdout + demo.stderr
    _assert_quiet(demo)
    log = local / "logs" / "platform.log"
    assert f"Spark's own output goes to {log}" in demo.stdout
    assert "Starting user_sessions (catch_up)" in demo.stdout
    assert "All streams done:" in demo.stdout
    diverted = log.read_text(errors="replace")
    for line in ("Using incubator modules", "Python worker", " - DEBUG - "):
        assert line in diverted, line  # the chatter is kept, in the log file

    shown = Terminal([platform, "state", "show", "key_counts"], env, REPO_ROOT)
    assert shown.wait(300) == 0, shown.stdout + shown.stderr
    _assert_quiet(shown)
    assert re.search(r"key_counts at batch \d+: 7 keys", shown.stdout), shown.stdout
    assert "7 biggest of 7 keys shown" in shown.stdout

    verbose = Terminal([platform, "--verbose", "state", "show", "key_counts"], env, REPO_ROOT)
    assert verbose.wait(300) == 0, verbose.stdout + verbose.stderr
    assert "Using incubator modules" in verbose.stderr  # the JVM's own output, shown


def _assert_quiet(terminal: Terminal) -> None:
    assert terminal.stderr == ""
    for text in CHATTER:
        assert text not in terminal.stdout, text
