"""Where a watermark went wrong: the first batch judged by a watermark ahead of its clock."""

from __future__ import annotations

from platform_pipelines.health.watermark import BatchTimes, first_poisoned_batch


def test_the_first_of_the_newest_poisoned_batches_is_found():
    batches = [
        BatchTimes(3, 1_000, 0),
        BatchTimes(4, 2_000, 500),
        BatchTimes(5, 3_000, 9_000),
        BatchTimes(6, 4_000, 9_000),
    ]
    assert first_poisoned_batch(batches) == 5


def test_a_sane_newest_batch_means_nothing_to_reset():
    assert first_poisoned_batch([BatchTimes(5, 3_000, 9_000), BatchTimes(6, 10_000, 9_000)]) is None
    assert first_poisoned_batch([]) is None
