"""A running local Spark cluster as another process sees it: its ``cluster.json`` (master URL,
web UI, pids) and the master's own account of its workers and applications."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from platform_pipelines.core.local_server import command_line, live_state

STATE_FILE = "cluster.json"


def is_daemon(pid: int, base_dir: Path) -> bool:
    """The pid runs a Spark daemon of ``base_dir`` (not a process that reused the pid)."""
    cmdline = command_line(pid)
    return (
        cmdline is not None
        and b"org.apache.spark.deploy." in cmdline
        and str(base_dir).encode() in cmdline
    )


def find_running_cluster(base_dir: Path) -> dict[str, Any] | None:
    """The ``cluster.json`` of the live cluster in ``base_dir``, else None (a file left behind
    by a dead master is removed)."""
    base_dir = Path(base_dir).resolve()
    return live_state(base_dir / STATE_FILE, lambda s: is_daemon(int(s["master_pid"]), base_dir))


def master_state(webui_url: str, timeout_s: float = 5) -> dict[str, Any]:
    """The master's own account of the cluster (``<web UI>/json/``): workers with their state,
    cores and memory, active and completed applications."""
    with urllib.request.urlopen(f"{webui_url}/json/", timeout=timeout_s) as answer:
        state: dict[str, Any] = json.load(answer)
    return state
