"""Fixtures of the integration tests that start pipeline processes of their own."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.integration.first_start import launch


@pytest.fixture
def launcher() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """``launch``, with every worker it started killed (its process group: driver and JVM) when
    the test ends, even when it failed while a worker was paused."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(launch(*args, **kwargs))
        return started[-1]

    yield start
    for worker in started:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
