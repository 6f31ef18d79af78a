"""Power and feasibility of a design: what n paired seeds can detect, and whether they can reach
significance after Holm at all (docs/statistics.md). Used before training (the design check) and
after (the MDE of each comparison)."""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

import numpy as np

from benchsuite.paths import cache_dir


@lru_cache(maxsize=256)
def dz_star(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Standardised effect a two-sided paired t test detects with the given power at n pairs.

    Solved by statsmodels (1.9 s to import with pandas and scipy.stats) and remembered on disk
    (``cache_dir()/power.json``, per statsmodels version), so that a re-run with nothing to
    train prints its design without importing them."""
    if n < 2:
        return math.nan
    key = f"n={n} alpha={alpha!r} power={power!r} statsmodels={version('statsmodels')}"
    memo = _remembered()
    if key not in memo:
        from statsmodels.stats.power import TTestPower

        solved = TTestPower().solve_power(nobs=n, alpha=alpha, power=power, alternative="two-sided")
        memo[key] = float(solved)
        _remember(memo)
    return memo[key]


def _memo_path() -> Path:
    return cache_dir() / "power.json"


def _remembered() -> dict[str, float]:
    try:
        return dict(json.loads(_memo_path().read_text()))
    except (OSError, ValueError, TypeError):
        return {}


def _remember(memo: dict[str, float]) -> None:
    """Write the memo atomically (a concurrent run writes the same values); a cache that cannot
    be written is only slower."""
    path = _memo_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(memo, sort_keys=True))
        partial.replace(path)
    except OSError:
        pass


@lru_cache(maxsize=8)
def sign_patterns(n: int) -> np.ndarray:
    """Every one of the 2**n sign patterns of n seeds, one per row (read-only, remembered): the
    exact sign-flip tests enumerate these."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n - 1, -1, -1)) & 1
    signs = 1.0 - 2.0 * bits
    signs.flags.writeable = False
    return signs


def min_sign_flip_p(n: int) -> float:
    """The smallest two-sided sign-flip p that n paired seeds can give: 2 / 2**n (every seed on
    one side)."""
    return 2.0 / 2.0**n


def planned_mde(n: int, sd: float, alpha: float = 0.05) -> float:
    """Planning MDE (two-sided, power .8, at ``alpha``) for n paired seeds and a guessed sd of d;
    NaN when no sign pattern of n seeds reaches ``alpha`` (nothing is detectable)."""
    if n < 2 or min_sign_flip_p(n) >= alpha:
        return math.nan
    return dz_star(n, alpha) * float(sd)


def holm_first_alpha(m: int, alpha: float = 0.05) -> float:
    """The most demanding threshold Holm applies over m comparisons (its first step): alpha/m."""
    return alpha / max(m, 1)


MIN_DEFAULT_SEEDS = 12


def default_seeds(m: int, alpha: float = 0.05) -> int:
    """The default seed count: the fewest with which a comparison whose smallest difference has
    the other sign (exact sign-flip p = 4/2**n) passes Holm's first step over m comparisons,
    and at least 12 (docs/statistics.md): m = 40 gives 12, m = 100 gives 13."""
    if m < 1:
        raise ValueError(f"the family must hold at least one comparison, got m={m}")
    return max(MIN_DEFAULT_SEEDS, math.floor(math.log2(4 * m / alpha)) + 1)


def looks_alpha(look: int, alpha: float = 0.05) -> float:
    """The alpha the suite tests spend at the ``look``-th look at the same comparisons (1: a
    run's first, 2: its first extension to more seeds, ...): alpha / 2**look, so that the
    family-wise error over any number of looks stays below ``alpha`` (a Bonferroni bound:
    alpha/2 + alpha/4 + ... < alpha; docs/protocol.md, "Extending a run")."""
    return alpha / 2.0 ** max(look, 1)


def suite_seeds(tracks: int, mixers: int, alpha: float | None = None) -> int:
    """The seed count of the suite design: the fewest seeds per track with which a mixer's
    across-tracks test (its seeds pooled over the tracks, docs/statistics.md) can pass Holm's
    first step over ``mixers`` at ``alpha`` (default: a first look's, :func:`looks_alpha`) with
    one discordant seed (sign-flip p = 4/2**N over N pooled seeds) even with any one of
    ``tracks`` left out: 3 for 6 tracks and 17 mixers, 4 for 4 and 20. At least 2 (a paired
    comparison); a run of one track has no suite claim (the per-track design)."""
    if tracks < 2 or mixers < 1:
        raise ValueError(f"the suite design needs >= 2 tracks and a mixer, got {tracks}, {mixers}")
    alpha = looks_alpha(1) if alpha is None else alpha
    return discordant_seeds(tracks - 1, alpha / mixers)


def discordant_seeds(tracks: int, level: float, least: int = 2) -> int:
    """The fewest seeds per track, at least ``least``, with which a sign-flip test of the
    seeds of ``tracks`` tracks pooled passes ``level`` with one discordant seed
    (p = 4/2**N over N pooled seeds)."""
    n = least
    while 4.0 / 2.0 ** (tracks * n) >= level:
        n += 1
    return n


def min_seeds_for_significance(m: int, alpha: float = 0.05) -> int:
    """Fewest seeds for which the exact sign-flip p (at best 2/2**n) can pass Holm over m tests.

    Equals ceil(log2(2m/alpha)) except when 2m/alpha is a power of two (then one more, since the
    test needs 2/2**n < alpha/m strictly).
    """
    if m < 1:
        raise ValueError(f"the family must hold at least one comparison, got m={m}")
    return math.floor(math.log2(2 * m / alpha)) + 1


def design_warning(n_seeds: int, m: int, alpha: float = 0.05) -> str | None:
    """One-line warning when n_seeds cannot give a Holm-significant result among m comparisons."""
    need = min_seeds_for_significance(m, alpha)
    if n_seeds >= need:
        return None
    return (
        f"with {n_seeds} seeds no per-track verdict can reach significance after Holm over the "
        f"{m} per-track comparisons; "
        f"use at least {need} seeds"
    )
