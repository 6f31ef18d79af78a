"""The reference step, the unit of cost a run records in its environment."""

from __future__ import annotations

import torch

from benchsuite.plan.environment import describe
from benchsuite.train.reference import reference_step_seconds


def test_reference_step_is_measured_and_leaves_torch_as_it_was() -> None:
    torch.set_num_threads(2)
    state = torch.random.get_rng_state()
    seconds = reference_step_seconds(steps=5, repeats=3, warmup=2)
    assert 1e-5 < seconds < 1.0  # a tiny model's step: microseconds to milliseconds
    assert torch.get_num_threads() == 2
    assert torch.equal(torch.random.get_rng_state(), state)


def test_the_environment_block_carries_the_reference_step() -> None:
    seconds = reference_step_seconds(steps=5, repeats=3, warmup=2)
    assert describe("cpu", 1, seconds).reference_step_seconds == seconds
