"""What the pre-flight checks before any training: one task per (track, mixer) cell, the
mixer built at each rung's shape, run forward and backward (:mod:`benchsuite.train.preflight`).

The plan hands its cells' checks to a :data:`Checker` in one batch and skips each cell whose
check fails; the executors run the checks in a worker process under a time limit
(:mod:`benchsuite.execute.preflight`), so a plugin whose ``build`` or forward hangs costs the run
that limit and is skipped with its reason, while the rest trains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

REFUSED = ": refused its options at this shape: "
"""In a check's reason: the mixer's build raised a UsageError (bad input, e.g. heads that do not
divide the width), which stops the run at planning instead of skipping the cell."""


def check_key(track: str, mixer: str) -> str:
    """The key of a cell's check (a pool task's key, and how results name it)."""
    return f"pre-flight {track}/{mixer}"


@dataclass(frozen=True)
class Check:
    """One cell's pre-flight: ``mixer`` (a variant's name, as the run names it) built with
    ``options`` at each ``(tokens, dim)`` of ``shapes``, within ``limit`` seconds in all."""

    track: str
    mixer: str
    shapes: tuple[tuple[int, int], ...]
    options: Mapping[str, Any]
    limit: float

    @property
    def key(self) -> str:
        return check_key(self.track, self.mixer)

    @property
    def label(self) -> str:
        return f"{self.track}/{self.mixer}: pre-flight"

    def timed_out(self) -> str:
        """The reason a check that overran its limit gives."""
        return (
            f"mixer {self.mixer!r}: build, forward and backward did not finish within "
            f"{self.limit:g} s (--preflight-timeout)"
        )

    def died(self, how: str) -> str:
        """The reason a check whose process ended in the middle gives (``how``: the exit)."""
        return f"mixer {self.mixer!r}: its pre-flight ended its process ({how})"


@dataclass(frozen=True)
class Checked:
    """A check's outcome: ``reason`` is None when the mixer passed."""

    key: str
    reason: str | None


Checker = Callable[[list[Check]], dict[str, str]]
"""Runs checks and returns the reason of each failing one, by the check's key."""
