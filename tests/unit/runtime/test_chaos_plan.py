"""Which faults each chaos trial gets: the first-start kill first, then the kinds in turn, so that a
run with as many trials as kinds runs every kind whatever its seed."""

from __future__ import annotations

import click
import pytest

from platform_pipelines.cli.chaos import chaos
from platform_pipelines.runtime.chaos_config import DEFAULT_FAULTS, ChaosConfig, FaultRecord
from platform_pipelines.runtime.chaos_faults import plan_faults


def plans(cfg: ChaosConfig) -> list[list[str]]:
    return [plan_faults(cfg, trial) for trial in range(1, cfg.trials + 1)]


@pytest.mark.parametrize("seed", range(1, 21))
def test_the_defaults_run_every_kind_of_fault_whatever_the_seed(seed: int) -> None:
    found = plans(ChaosConfig(seed=seed))

    assert all(plan[0] == "first-start" and len(plan) == 2 for plan in found), found
    assert {kind for plan in found for kind in plan} == set(DEFAULT_FAULTS)


def test_a_plan_is_the_same_for_the_same_seed_and_trial() -> None:
    cfg = ChaosConfig(trials=5, per_trial=(1, 3), seed=4)

    assert plans(cfg) == plans(cfg)
    assert all(2 <= len(plan) <= 4 for plan in plans(cfg))


def test_without_first_start_the_trials_begin_with_the_other_kinds_in_turn() -> None:
    cfg = ChaosConfig(trials=4, faults=("kill", "network"), per_trial=(1, 1), seed=3)

    firsts = [plan[0] for plan in plans(cfg)]

    assert sorted(firsts[:2]) == ["kill", "network"]
    assert firsts[2:] == firsts[:2]


def test_no_other_faults_leaves_the_first_start_kill_alone() -> None:
    assert plans(ChaosConfig(trials=2, faults=("first-start",))) == [["first-start"]] * 2
    assert plans(ChaosConfig(trials=1, per_trial=(0, 0))) == [["first-start"]]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"faults": ("kill", "flood")}, "unknown faults"),
        ({"faults": ("executor",)}, "needs a cluster"),
        ({"per_trial": (2, 1)}, "a range"),
    ],
)
def test_a_config_that_cannot_run_says_why(changes: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ChaosConfig(**changes)  # type: ignore[arg-type]


def test_the_command_s_defaults_are_the_config_s() -> None:
    options = {p.name: p.default for p in chaos.params if isinstance(p, click.Option)}
    cfg = ChaosConfig()

    assert options["trials"] == cfg.trials
    assert options["events"] == cfg.events
    assert options["rate"] == cfg.rate_per_sec
    assert tuple(options["faults"].split(",")) == cfg.faults
    assert options["per_trial"] == f"{cfg.per_trial[0]}"
    assert options["network_seconds"] == cfg.network_seconds
    assert options["seed"] == cfg.seed
    assert options["parallel"] == cfg.parallel


def test_a_fault_line_says_when_it_came_and_how_the_pipeline_recovered() -> None:
    record = FaultRecord("network", 3.94, "recovery", "5 connections dropped", 2.0, "caught up")

    assert record.line() == (
        "network 3.9 s after a recovery: 5 connections dropped; back in 2.0 s (caught up)"
    )
