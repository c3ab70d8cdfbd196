"""Only one query at a time may run on a stream's checkpoint; a refusal names the holder."""

from __future__ import annotations

import subprocess
import sys

import pytest

from platform_pipelines.runtime.lock import CheckpointBusyError, CheckpointLocks, locked_streams


def test_a_second_run_on_a_held_checkpoint_is_refused_naming_the_holder_until_released(tmp_path):
    checkpoints = {"events": tmp_path / "events", "user_sessions": tmp_path / "user_sessions"}

    with CheckpointLocks(checkpoints, owner="run 1a2b3c4d of all_streams"):
        with pytest.raises(CheckpointBusyError) as refused:
            CheckpointLocks({"events": tmp_path / "events"}).__enter__()
        assert locked_streams(checkpoints.items()) == ["events", "user_sessions"]
    assert "Stream 'events' is already running: run 1a2b3c4d of all_streams (pid" in str(
        refused.value
    )
    assert locked_streams(checkpoints.items()) == []
    with CheckpointLocks({"events": tmp_path / "events"}):  # free again
        pass


def test_locks_are_all_or_nothing(tmp_path):
    with CheckpointLocks({"user_sessions": tmp_path / "user_sessions"}, owner="other"):
        with pytest.raises(CheckpointBusyError):
            CheckpointLocks({"events": tmp_path / "events",
                             "user_sessions": tmp_path / "user_sessions"}).__enter__()  # fmt: skip
        assert locked_streams([("events", tmp_path / "events")]) == []


def test_another_process_cannot_take_a_held_lock(tmp_path):
    code = (
        "import sys; from pathlib import Path; "
        "from platform_pipelines.runtime.lock import CheckpointLocks, CheckpointBusyError\n"
        "try:\n"
        f"    CheckpointLocks({{'events': Path({str(tmp_path / 'events')!r})}}).__enter__()\n"
        "except CheckpointBusyError as e:\n    print(e); sys.exit(3)\n"
    )
    with CheckpointLocks({"events": tmp_path / "events"}, owner="run abc"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 3, result.stderr
    assert "run abc (pid" in result.stdout
