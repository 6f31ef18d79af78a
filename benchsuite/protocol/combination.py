"""Looks that never lose seeds: a suite test over stages of seeds, combined by the weighted
inverse normal (Lehmacher & Wassmer 1999; Bauer & Köhne 1994 for the principle).

A study looks at its suite verdicts more than once when a run is extended to more seeds in the
same folder, and the per-track design's futility look decides which later seeds exist from the
signs it saw. Splitting the seeds into stages at those seed counts keeps every test exact given
what came before: a stage's sign-flip test flips only its own seeds, so under the null its p is
(super-)uniform whatever the earlier stages showed, including which cells they stopped. The
one-sided stage p's are combined as ``Z = sum_s w_s * Phi^-1(1 - p_s)`` with weights fixed by the
seeds each stage holds (``w_s**2 = n_s / N``, sum 1), each direction at half the level; a stage
without seeds for the mixer adds 0 (conservative). docs/statistics.md, "Looks".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchsuite.protocol.signflip import Flips, SuiteNull, sign_flips


@dataclass(frozen=True)
class Stage:
    """The seeds ``[first, last)`` of one stage of a mixer: per track, the paired differences
    of those seeds it has (tracks without any left out), and the stage's weight."""

    first: int
    last: int
    diffs: dict[str, np.ndarray]
    flips: Flips
    weight: float


def weights(bounds: Sequence[int]) -> list[float]:
    """Each stage's weight from the seed counts that end the stages (``[3, 6, 13]``: seeds
    0-2, 3-5, 6-12): the square root of its share of the seeds."""
    sizes = np.diff([0, *bounds])
    return [math.sqrt(size / bounds[-1]) for size in sizes]


def stages(
    diffs: dict[str, np.ndarray], seeds: dict[str, Sequence[int]], bounds: Sequence[int], seed: int
) -> list[Stage]:
    """A mixer's differences (per track, with the seed of each) split at ``bounds``."""
    out = []
    for first, last, weight in zip([0, *bounds[:-1]], bounds, weights(bounds), strict=True):
        held = {}
        for track, d in diffs.items():
            mask = np.array([first <= s < last for s in seeds[track]], dtype=bool)
            if mask.any():
                held[track] = np.asarray(d, dtype=float)[mask]
        out.append(Stage(first, last, held, sign_flips(held, seed + first), weight))
    return out


def _z(p: float) -> float:
    """``Phi^-1(1 - p)``: a one-sided p on the normal scale."""
    from scipy.stats import norm

    return float(norm.isf(p))


def _sf(z: float) -> float:
    from scipy.stats import norm

    return float(norm.sf(z))


class Combined:
    """The combination test of a mixer's suite effect over some of its tracks."""

    def __init__(self, staged: list[Stage], tracks: Sequence[str]) -> None:
        self.tests: list[tuple[float, SuiteNull]] = []
        for stage in staged:
            kept = [t for t in tracks if t in stage.diffs]
            if kept:
                self.tests.append((stage.weight, SuiteNull.of(stage.diffs, stage.flips, kept)))

    def p(self, delta: float = 0.0) -> float:
        """The two-sided p of the hypothesis that the suite effect is ``delta``: twice the
        smaller of the two one-sided combined p's."""
        ups = sum(w * _z(test.one_sided(delta, greater=True)) for w, test in self.tests)
        downs = sum(w * _z(test.one_sided(delta, greater=False)) for w, test in self.tests)
        return min(1.0, 2.0 * min(_sf(ups), _sf(downs)))

    def floor(self) -> float:
        """The smallest p these seeds can give: every stage as extreme as its seeds allow, in
        the same direction."""
        zs = (
            sum(w * _z(test.one_sided_floor(greater)) for w, test in self.tests)
            for greater in (True, False)
        )
        return min(1.0, 2.0 * _sf(max(zs)))
