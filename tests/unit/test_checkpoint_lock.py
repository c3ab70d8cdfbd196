"""Only one query at a time may run on a stream's checkpoint."""

from __future__ import annotations

import pytest

from platform_pipelines.runtime.runner import (
    CheckpointBusyError,
    _lock_checkpoint,
    _unlock_checkpoint,
)


def test_a_second_query_on_a_held_checkpoint_is_refused_until_the_first_releases_it(tmp_path):
    checkpoint = str(tmp_path / "events")
    _lock_checkpoint("events", checkpoint)
    try:
        with pytest.raises(CheckpointBusyError, match="Stream 'events' is already running on"):
            _lock_checkpoint("events", checkpoint)
    finally:
        _unlock_checkpoint(checkpoint)
    _lock_checkpoint("events", checkpoint)  # free again
    _unlock_checkpoint(checkpoint)
