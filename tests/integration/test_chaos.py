"""`platform chaos` as people run it: its defaults pass on a healthy pipeline (every kind of fault
of the defaults runs, nothing is lost or duplicated) and print their table; Ctrl-C or SIGTERM
stops every process of the run at once, with the documented exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from platform_pipelines.runtime.chaos import TABLES
from platform_pipelines.runtime.chaos_config import DEFAULT_FAULTS, ChaosConfig
from platform_pipelines.runtime.chaos_worker import LAKE_MARKER
from platform_pipelines.settings import REPO_ROOT, get_settings
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]
PLATFORM = str(Path(sys.executable).parent / "platform")
DEFAULTS = ChaosConfig()


def chaos_env(local_dir: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PLATFORM_LOCAL_DIR": str(local_dir),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_UI_ENABLED": "false",
        "COLUMNS": "240",  # the table's rows on one line each
    }
    env.pop("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", None)  # chaos starts its own broker anyway
    return env


def command_lines_under(folder: Path) -> dict[int, str]:
    """The command line of every live process that names ``folder`` (workers, their JVMs, the
    broker), by pid."""
    found = {}
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(folder) in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found[proc.pid] = cmdline
    return found


def processes_under(folder: Path) -> list[str]:
    """``command_lines_under``, each cut short to be shown."""
    return [f"{pid} {cmdline[:200]}" for pid, cmdline in command_lines_under(folder).items()]


def alive(pids: list[int]) -> list[int]:
    running = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            continue
    return running


def test_the_defaults_pass_on_a_healthy_pipeline_and_print_their_table(tmp_path: Path) -> None:
    local, output = tmp_path / "local", tmp_path / "chaos.json"

    done = subprocess.run(
        [PLATFORM, "chaos", "--output", str(output)],
        env=chaos_env(local),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )

    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert "Chaos trials" in done.stdout
    assert f"{DEFAULTS.trials} trials, " in done.stdout
    assert "nothing lost or duplicated" in done.stdout
    trials = json.loads(output.read_text())["trials"]
    assert [t["trial"] for t in trials] == [1, 2, 3]
    kinds = [f["kind"] for t in trials for f in t["faults"]]
    assert set(kinds) == set(DEFAULT_FAULTS), kinds  # every kind of the defaults ran
    for trial in trials:
        assert trial["faults"][0]["kind"] == "first-start"
        for fault in trial["faults"]:
            assert f"{fault['kind']} " in done.stdout  # listed in the table
            assert fault["recovered_by"] in ("batch", "caught up"), fault
        assert trial["lost"] == dict.fromkeys(TABLES, 0), trial
        assert trial["duplicated"] == dict.fromkeys(TABLES, 0), trial
        # every record reached bronze or quarantine (1 % malformed), silver held the rest once
        rows = trial["rows"]
        assert rows["clickstream_raw"] + rows["quarantine"] == DEFAULTS.events
        assert rows["quarantine"] == DEFAULTS.events // 100, rows
        assert rows["events"] == rows["clickstream_raw"] - DEFAULTS.events // 50
    assert not list((local / "chaos").iterdir())  # a passing run leaves no files behind
    assert processes_under(local) == []


@pytest.mark.parametrize(
    ("sent", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"]
)
def test_a_signal_stops_every_process_of_the_run_at_once(
    tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    local = tmp_path / "local"
    chaos = subprocess.Popen(
        [PLATFORM, "chaos"],
        env=chaos_env(local),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        wait_for(
            # the JVM's options come after its long class path
            lambda: any(LAKE_MARKER in c for c in command_lines_under(local).values()),
            600,
            "a chaos worker's JVM",
            show=lambda: processes_under(local),
        )
        started = [p.pid for p in psutil.Process(chaos.pid).children(recursive=True)]
        signalled = time.monotonic()
        if sent == signal.SIGINT:
            os.killpg(chaos.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        else:
            chaos.send_signal(sent)
        out, _ = chaos.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if chaos.poll() is None:
            os.killpg(chaos.pid, signal.SIGKILL)

    assert chaos.returncode == code, out
    assert took < 30, took
    assert f"Interrupted by {sent.name}" in out, out
    assert "Traceback" not in out
    workdir = next((local / "chaos").iterdir())
    assert f"kept in {workdir}" in out.replace("\n", "")
    wait_for(lambda: alive(started) == [], 10, "the run's processes to end", show=lambda: started)
    assert processes_under(local) == []
