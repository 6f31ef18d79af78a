"""The paired sign-flip test, stratified by track, and its inversion (docs/statistics.md).

Under the null every seed's paired difference is symmetric about 0 (each seed tuned on its own
validation split, so the arms are exchangeable): flipping signs within each stratum (a track)
gives the test's exact distribution. Every pattern is enumerated where the pooled seeds have at
most :data:`EXACT_LIMIT` (2**22: each track's own patterns, combined by broadcasting, well under
a second); beyond, Monte Carlo draws from a recorded seed, whose p carries its standard error.
The interval of a mean is the test inverted: the shifts it does not reject, so the interval
excludes 0 exactly when the test rejects 0. The suite test (:mod:`benchsuite.results.aggregate`)
uses it over a mixer's tracks; a per-track comparison (:mod:`benchsuite.protocol.stats`) over its
one track.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchsuite.protocol.power import sign_patterns

EXACT_LIMIT = 2**22  # pooled sign patterns enumerated exactly (under a second on 2 cores)
FLIPS = 20_000  # Monte Carlo sign flips beyond it: p resolves to 1/20001, far below alpha/mixers
CHUNK = 5_000
TIES = 1e-12  # relative: null values this close to the observed one count as ties


@dataclass(frozen=True)
class Flips:
    """One mixer's sign flips, stratified by track: per track and flip, the mean of the flipped
    differences (``effects``) and of the signs alone (``signs``), so that the null of a shifted
    hypothesis (every difference minus ``delta``) is ``effects - delta * signs``. ``exact``: each
    track's every sign pattern (its own 2**n), the tracks' patterns combined by broadcasting;
    else ``draws`` Monte Carlo draws, aligned across tracks draw by draw."""

    effects: dict[str, np.ndarray]
    signs: dict[str, np.ndarray]
    exact: bool

    def patterns(self, tracks: Sequence[str]) -> int:
        """How many null values the test of ``tracks`` weighs (its sign patterns, or draws)."""
        if self.exact:
            return math.prod(len(self.effects[t]) for t in tracks)
        return len(self.effects[tracks[0]])

    def null(self, tracks: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The null of the mean over ``tracks`` as two arrays ``(a, b)``: under the hypothesis
        ``delta`` it is ``a - delta * b``, one value per pattern (or draw)."""
        count = len(tracks)
        if not self.exact:
            return (
                np.mean([self.effects[t] for t in tracks], axis=0),
                np.mean([self.signs[t] for t in tracks], axis=0),
            )
        a, b = np.zeros(1), np.zeros(1)
        for track in tracks:  # the Kronecker sum: every track's pattern with every other's
            a = np.add.outer(a, self.effects[track] / count).ravel()
            b = np.add.outer(b, self.signs[track] / count).ravel()
        return a, b


def sign_flips(
    diffs: dict[str, np.ndarray], seed: int, limit: int = EXACT_LIMIT, draws: int = FLIPS
) -> Flips:
    """The flips of the test: exact enumeration when the seeds of all strata have at most
    ``limit`` sign patterns, else ``draws`` draws (in chunks) from a generator seeded ``seed``."""
    if 2 ** sum(len(d) for d in diffs.values()) <= limit:
        every = {t: sign_patterns(len(d)) for t, d in diffs.items()}
        return Flips(
            {t: (s * diffs[t]).mean(axis=1) for t, s in every.items()},
            {t: s.mean(axis=1) for t, s in every.items()},
            exact=True,
        )
    rng = np.random.default_rng(seed)
    effects: dict[str, list[np.ndarray]] = {t: [] for t in diffs}
    means: dict[str, list[np.ndarray]] = {t: [] for t in diffs}
    for start in range(0, draws, CHUNK):
        size = min(CHUNK, draws - start)
        for track, d in diffs.items():
            flips = rng.choice((-1.0, 1.0), size=(size, len(d)))
            effects[track].append((flips * d).mean(axis=1))
            means[track].append(flips.mean(axis=1))
    return Flips(
        {t: np.concatenate(c) for t, c in effects.items()},
        {t: np.concatenate(c) for t, c in means.items()},
        exact=False,
    )


def _p(extreme: int, total: int, exact: bool) -> float:
    """The p of ``extreme`` of ``total`` null values at least as extreme: their share when every
    pattern is counted, else with the +1 of a valid Monte Carlo p."""
    return float(extreme / total) if exact else float((1 + extreme) / (1 + total))


def mc_error(p: float, draws: int) -> float:
    """The standard error of a Monte Carlo p from ``draws`` draws."""
    return math.sqrt(max(p * (1 - p), 0.0) / draws)


@dataclass(frozen=True)
class SuiteNull:
    """The suite test of one mixer over some of its tracks, ready for any shift: the observed
    equal-weight mean and the null's two arrays (:meth:`Flips.null`)."""

    effect: float
    a: np.ndarray
    b: np.ndarray
    exact: bool
    scratch: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scratch", np.empty_like(self.a))

    @classmethod
    def of(cls, diffs: dict[str, np.ndarray], flips: Flips, tracks: Sequence[str]) -> SuiteNull:
        """The test of the mean over ``tracks`` of each track's mean difference."""
        effect = float(np.mean([diffs[t].mean() for t in tracks]))
        return cls(effect, *flips.null(tracks), exact=flips.exact)

    def shifted(self, delta: float) -> np.ndarray:
        """The null under the hypothesis ``delta``, ``a - delta * b``, in a scratch array (the
        inversion asks for it about 70 times; 2**22 values are 32 MB)."""
        scratch = self.scratch
        np.multiply(self.b, delta, out=scratch)
        return np.subtract(self.a, scratch, out=scratch)

    def p(self, delta: float = 0.0) -> float:
        """The two-sided p of the hypothesis that the suite effect is ``delta``."""
        observed = self.effect - delta
        null = np.abs(self.shifted(delta), out=self.scratch)
        tol = TIES * max(1.0, abs(observed))
        return _p(np.count_nonzero(null >= abs(observed) - tol), len(null), self.exact)

    def one_sided(self, delta: float, greater: bool) -> float:
        """The one-sided p of the hypothesis that the effect is at most ``delta`` (``greater``:
        the alternative is above it) or at least it (below)."""
        observed = self.effect - delta
        null = self.shifted(delta)
        tol = TIES * max(1.0, abs(observed))
        extreme = np.count_nonzero(null >= observed - tol if greater else null <= observed + tol)
        return _p(extreme, len(null), self.exact)

    def floor(self) -> float:
        """The smallest two-sided p these seeds can give: that of the most extreme pattern."""
        return _top(np.abs(self.a), self.exact)

    def one_sided_floor(self, greater: bool) -> float:
        """The smallest one-sided p (above, or below) these seeds can give."""
        return _top(self.a if greater else -self.a, self.exact)


def _top(null: np.ndarray, exact: bool) -> float:
    """The p of the largest of ``null``'s values: the share (or Monte Carlo p) of those tied
    with it."""
    top = float(null.max())
    return _p(np.count_nonzero(null >= top - TIES * max(1.0, abs(top))), len(null), exact)


def suite_test(
    diffs: dict[str, np.ndarray], flips: Flips, tracks: list[str], delta: float = 0.0
) -> tuple[float, float]:
    """The equal-weight suite effect over ``tracks`` and the two-sided stratified sign-flip p of
    the hypothesis that it is ``delta`` (every seed's difference shifted by ``delta`` is
    symmetric about 0): exact over every pattern, or Monte Carlo with the +1 of a valid p."""
    test = SuiteNull.of(diffs, flips, tracks)
    return test.effect, test.p(delta)


def invert(effect: float, spread: float, rejects: Callable[[float], bool]) -> list[float]:
    """The interval of a test inverted: the shifts around ``effect`` that ``rejects`` does not
    reject (each bound found by doubling a step of ``spread`` outwards, then bisecting to 1e-9
    of it); a bound no shift reaches (too few seeds for the level) is infinite."""
    step0 = spread if spread > 0 else 1.0
    bounds = []
    for side in (-1.0, 1.0):
        inside, step = effect, step0
        for _ in range(60):
            if rejects(effect + side * step):
                break
            inside, step = effect + side * step, 2 * step
        else:
            bounds.append(side * math.inf)
            continue
        outside = effect + side * step
        while abs(outside - inside) > 1e-9 * step0:
            middle = (inside + outside) / 2
            inside, outside = (inside, middle) if rejects(middle) else (middle, outside)
        bounds.append(inside)
    return [float(bounds[0]), float(bounds[1])]


def spread_of(diffs: dict[str, np.ndarray], tracks: Sequence[str]) -> float:
    """The step an inversion starts from: the widest track's range plus its largest value."""
    return max(float(np.ptp(diffs[t])) + float(np.abs(diffs[t]).max()) for t in tracks)


def suite_interval(
    diffs: dict[str, np.ndarray], flips: Flips, tracks: list[str], alpha: float = 0.05
) -> list[float]:
    """The suite effect's 1 - ``alpha`` interval by inverting :func:`suite_test`: the shifts
    ``delta`` around the effect that the same test does not reject at ``alpha``. It excludes 0
    exactly when the test rejects 0, barring a p that is not monotone between the effect and 0."""
    test = SuiteNull.of(diffs, flips, tracks)
    return inverted(test, test.effect, diffs, tracks, alpha)


def inverted(
    test: Any, effect: float, diffs: dict[str, np.ndarray], tracks: Sequence[str], alpha: float
) -> list[float]:
    """The 1 - ``alpha`` interval of ``test`` (anything with ``.p(delta)``: this module's test
    or the combination test) around ``effect``: the shifts it does not reject at ``alpha``."""
    return invert(effect, spread_of(diffs, tracks), lambda delta: test.p(delta) < alpha)


def one_sided_p(diffs: dict[str, np.ndarray], flips: Flips, delta: float, greater: bool) -> float:
    """The one-sided sign-flip p of the hypothesis that the mean over strata is at most
    ``delta`` (``greater``: the alternative is above it) or at least it (below): exact over every
    pattern, or Monte Carlo with the +1 of a valid p."""
    return SuiteNull.of(diffs, flips, list(diffs)).one_sided(delta, greater)
