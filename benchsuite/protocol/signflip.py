"""The paired sign-flip test, stratified by track, and its inversion (docs/statistics.md).

Under the null every seed's paired difference is symmetric about 0 (each seed tuned on its own
validation split, so the arms are exchangeable): flipping signs within each stratum (a track)
gives the test's exact distribution (every pattern where there are at most a limit, else Monte
Carlo draws from a recorded seed). The interval of a mean is the test inverted: the shifts it
does not reject, so the interval excludes 0 exactly when the test rejects 0. The suite test
(:mod:`benchsuite.results.aggregate`) uses it over a mixer's tracks; a per-track comparison
(:mod:`benchsuite.protocol.stats`) over its one track.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchsuite.protocol.power import sign_patterns

FLIPS = 20_000  # Monte Carlo sign flips: p resolves to 1/20001, far below alpha/(mixers)
CHUNK = 5_000


@dataclass(frozen=True)
class Flips:
    """One mixer's sign flips, stratified by track: per track and flip, the mean of the flipped
    differences (``effects``) and of the signs alone (``signs``), so that the null of a shifted
    hypothesis (every difference minus ``delta``) is ``effects - delta * signs``. ``exact``: every
    sign pattern enumerated once (where there are at most ``FLIPS``), else ``FLIPS`` Monte Carlo
    draws."""

    effects: dict[str, np.ndarray]
    signs: dict[str, np.ndarray]
    exact: bool


def sign_flips(diffs: dict[str, np.ndarray], seed: int, limit: int = FLIPS) -> Flips:
    """The flips of the test: exact enumeration when the seeds of all strata have at most
    ``limit`` sign patterns, else ``limit`` draws (in chunks) from a generator seeded ``seed``."""
    sizes = {t: len(d) for t, d in diffs.items()}
    if 2 ** sum(sizes.values()) <= limit:
        every = sign_patterns(sum(sizes.values()))
        cuts = np.cumsum([0, *sizes.values()])
        signs = {t: every[:, a:b] for t, a, b in zip(diffs, cuts[:-1], cuts[1:], strict=True)}
        return Flips(
            {t: (s * diffs[t]).mean(axis=1) for t, s in signs.items()},
            {t: s.mean(axis=1) for t, s in signs.items()},
            exact=True,
        )
    rng = np.random.default_rng(seed)
    effects: dict[str, list[np.ndarray]] = {t: [] for t in diffs}
    means: dict[str, list[np.ndarray]] = {t: [] for t in diffs}
    for start in range(0, limit, CHUNK):
        size = min(CHUNK, limit - start)
        for track, d in diffs.items():
            flips = rng.choice((-1.0, 1.0), size=(size, len(d)))
            effects[track].append((flips * d).mean(axis=1))
            means[track].append(flips.mean(axis=1))
    return Flips(
        {t: np.concatenate(c) for t, c in effects.items()},
        {t: np.concatenate(c) for t, c in means.items()},
        exact=False,
    )


def suite_test(
    diffs: dict[str, np.ndarray], flips: Flips, tracks: list[str], delta: float = 0.0
) -> tuple[float, float]:
    """The equal-weight suite effect over ``tracks`` and the two-sided stratified sign-flip p of
    the hypothesis that it is ``delta`` (every seed's difference shifted by ``delta`` is
    symmetric about 0): exact over every pattern, or Monte Carlo with the +1 of a valid p."""
    effect = float(np.mean([diffs[t].mean() for t in tracks]))
    null = np.mean([flips.effects[t] - delta * flips.signs[t] for t in tracks], axis=0)
    observed = effect - delta
    tol = 1e-12 * max(1.0, abs(observed))
    extreme = np.count_nonzero(np.abs(null) >= abs(observed) - tol)
    if flips.exact:
        return effect, float(extreme / len(null))
    return effect, float((1 + extreme) / (1 + len(null)))


def suite_floor(flips: Flips, tracks: list[str]) -> float:
    """The smallest p :func:`suite_test` of ``tracks`` can give with these seeds: that of an
    effect as extreme as the most extreme sign pattern."""
    null = np.abs(np.mean([flips.effects[t] for t in tracks], axis=0))
    top = float(null.max())
    extreme = np.count_nonzero(null >= top - 1e-12 * max(1.0, top))
    if flips.exact:
        return float(extreme / len(null))
    return float((1 + extreme) / (1 + len(null)))


def suite_interval(
    diffs: dict[str, np.ndarray], flips: Flips, tracks: list[str], alpha: float = 0.05
) -> list[float]:
    """The suite effect's 1 - ``alpha`` interval by inverting :func:`suite_test`: the shifts
    ``delta`` around the effect that the same test does not reject at ``alpha`` (each bound
    found by doubling a step outwards, then bisecting to 1e-9 of the data's spread); a bound no
    shift reaches (too few seeds for ``alpha``) is infinite. It excludes 0 exactly when the test
    rejects 0, barring a p that is not monotone between the effect and 0."""
    effect = suite_test(diffs, flips, tracks)[0]
    spread = max(float(np.ptp(diffs[t])) + float(np.abs(diffs[t]).max()) for t in tracks)
    step0 = spread if spread > 0 else 1.0

    def rejects(delta: float) -> bool:
        return suite_test(diffs, flips, tracks, delta)[1] < alpha

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


def one_sided_p(diffs: dict[str, np.ndarray], flips: Flips, delta: float, greater: bool) -> float:
    """The one-sided sign-flip p of the hypothesis that the mean over strata is at most
    ``delta`` (``greater``: the alternative is above it) or at least it (below): exact over every
    pattern, or Monte Carlo with the +1 of a valid p."""
    tracks = list(diffs)
    observed = float(np.mean([diffs[t].mean() for t in tracks])) - delta
    null = np.mean([flips.effects[t] - delta * flips.signs[t] for t in tracks], axis=0)
    tol = 1e-12 * max(1.0, abs(observed))
    extreme = np.count_nonzero(null >= observed - tol if greater else null <= observed + tol)
    if flips.exact:
        return float(extreme / len(null))
    return float((1 + extreme) / (1 + len(null)))
