"""A track's training budget under one preset: steps, batch, model size, sweep grid, and the
early-stopping rule every mixer trains under (docs/protocol.md, "Training length").

Part of the plugin contracts (re-exported by :mod:`benchsuite.specs` and ``benchsuite``); nothing
here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def lr_grid(*lrs: float, weight_decay: float = 0.0) -> tuple[dict[str, float], ...]:
    """A sweep grid over learning rates at one weight decay (the usual shape of a track's grid)."""
    return tuple({"lr": lr, "weight_decay": weight_decay} for lr in lrs)


CHECKPOINTS = ("last", "best")
SCHEDULES = ("cosine", "plateau")


@dataclass(frozen=True)
class Budget:
    """The training budget and shared sweep grid of a track under one preset.

    ``grid`` is the list of shared hyperparameter configurations every mixer is swept over
    (keys understood by :mod:`benchsuite.train`: ``lr``, ``weight_decay``).
    """

    steps: int
    batch_size: int
    dim: int
    depth: int
    grid: tuple[Mapping[str, float], ...]
    mlp_ratio: int = 2
    eval_batch_size: int = 1024
    checkpoint: str = "last"  # the state scored: "last" (after training) or "best" (best check)
    warmup_fraction: float = 0.05
    warmup_steps: int = 0  # the warm-up's length in steps (0: warmup_fraction of ``steps``)
    clip: float = 0.0  # gradient norm clipping (0: none), per model
    # early stopping, the same for every mixer (docs/protocol.md, "Training length"): every
    # ``eval_every`` steps (0: never) each config's validation score is read; a config whose score
    # has not improved by more than ``min_delta`` (relative) for ``patience`` checks in a row
    # (0: never) stops, but never before ``min_steps`` and never while its best score is still at
    # the trivial predictor's level (a config that has learnt nothing has not converged);
    # ``steps`` is the most any config trains
    eval_every: int = 0
    patience: int = 0
    min_delta: float = 0.0
    min_steps: int = 0
    # successive halving inside each seed (docs/protocol.md, "Pruning the grid"): at the first
    # check at or after each of these steps, the configs still training are ranked by their best
    # validation score so far and only the better half (rounded up) trains on; () never prunes
    halve_at: tuple[int, ...] = ()
    # the learning rate after the warm-up (docs/protocol.md, "The learning-rate schedule"):
    # "cosine" decays it to zero at ``steps``; "plateau" holds it until the stopping rule's
    # patience runs out, then multiplies it by ``cut_factor`` and restarts the patience, ``cuts``
    # times, and the next plateau stops the config (``steps`` is only a cap)
    schedule: str = "cosine"
    cuts: int = 1
    cut_factor: float = 0.1

    def __post_init__(self) -> None:
        if self.checkpoint not in CHECKPOINTS:
            raise ValueError(
                f"budget checkpoint {self.checkpoint!r}: expected one of {', '.join(CHECKPOINTS)}"
            )
        if self.schedule not in SCHEDULES:
            expected = " or ".join(SCHEDULES)
            raise ValueError(f"budget schedule: expected {expected}, got {self.schedule!r}")
        if self.schedule == "plateau" and not (self.eval_every and self.patience):
            raise ValueError(
                "budget schedule 'plateau' needs eval_every and patience ≥ 1 (its rate is cut "
                "when the validation score stops improving)"
            )
        if not 0 < self.cut_factor < 1:
            raise ValueError(
                f"budget cut_factor: expected a number between 0 and 1, got {self.cut_factor!r}"
            )
        if self.cuts < 0:
            raise ValueError(f"budget cuts: must be at least 0, got {self.cuts!r}")
        if (self.patience or self.halve_at or self.checkpoint == "best") and not self.eval_every:
            raise ValueError(
                "budget patience, halve_at and checkpoint='best' need eval_every ≥ 1 "
                "(steps between validation checks)"
            )
        halvings = tuple(int(step) for step in self.halve_at)  # a list after a JSON round trip
        if any(step < 1 for step in halvings) or list(halvings) != sorted(set(halvings)):
            raise ValueError(f"budget halve_at {list(halvings)}: expected increasing steps ≥ 1")
        if self.min_steps < 0:
            raise ValueError(f"budget min_steps {self.min_steps}: expected a whole number ≥ 0")
        if halvings and halvings[0] < self.min_steps:
            raise ValueError(
                f"budget halve_at {list(halvings)}: the first halving comes before min_steps "
                f"{self.min_steps} (pruning slow starters early favours fast learners)"
            )
        object.__setattr__(self, "halve_at", halvings)

    @property
    def warmup(self) -> int:
        """The warm-up's length in steps (at least 1)."""
        return max(1, self.warmup_steps or int(self.warmup_fraction * self.steps))

    def training(self) -> dict[str, Any]:
        """The fields that shape one training run (everything but the grid)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "grid"}
