"""The per-track design's pre-registered futility look (docs/protocol.md, "The futility look").

A run planned for per-track claims over ``N`` seeds looks once at every comparison when its
first ``N // 2`` seeds (both arms) are stored. Whatever the later seeds show, the exact sign-flip
test on all ``N`` cannot give p below twice the sign patterns of the seeds seen whose sum is at
least as extreme as theirs, over ``2**N`` (those patterns, with the later seeds as they fall, are
at least as extreme); likewise each one-sided test of the exact sign-flip TOST. A comparison for
which neither the difference test nor the equivalence test can then pass Holm's first step over
the family (``alpha / family``) stops: its remaining seeds are not trained, and it is reported
with p = 1 and where it stopped. It never costs a rejection at Holm's first step; the rule is
fixed before any seed is seen (half the seeds, the run's alpha and family), so it is
pre-registered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchsuite.protocol.power import holm_first_alpha, min_sign_flip_p, sign_patterns
from benchsuite.settings import RunSettings
from benchsuite.vocabulary import Claims


@dataclass(frozen=True)
class FutilityLook:
    """Where a run looks (``seeds``, of ``planned``) and the alpha a comparison must still be
    able to reach there: Holm's first step over the run's family."""

    seeds: int
    planned: int
    alpha: float


def futility_look(settings: RunSettings, family: int, alpha: float = 0.05) -> FutilityLook | None:
    """The look of a run of resolved ``settings`` whose Holm family holds ``family``
    comparisons: at half its seeds (rounded down) under the per-track design, when its seeds can
    reach Holm's first step at all (fewer cannot decide anything: ``needs_more_seeds``) and the
    look leaves at least two seeds seen and one to save; None otherwise, or with
    ``futility = false``."""
    planned = settings.seeds or 0
    if not settings.futility or settings.design != Claims.PER_TRACK or family < 1:
        return None
    first = holm_first_alpha(family, alpha)
    if min_sign_flip_p(planned) >= first or planned // 2 < 2:
        return None
    return FutilityLook(planned // 2, planned, first)


ENUMERATED = 16  # seeds at a look up to which every sign pattern is counted (65,536)
TIES = 1e-14  # relative: no looser than scipy.stats.permutation_test's (on the mean)


def _at_least_as_extreme(values: Sequence[float], below: bool) -> int:
    """Sign patterns of ``values`` whose sum is at least as extreme as theirs (as low, with
    ``below``; as high otherwise); past :data:`ENUMERATED` values, the patterns that flip only
    values on the other side or tied (a count every pattern-set contains)."""
    seen = np.asarray(values, dtype=float)
    if len(seen) > ENUMERATED:
        against = np.sum(seen > 0) if below else np.sum(seen < 0)
        return 2 ** int(against + np.sum(seen == 0))
    observed = seen.sum()
    slack = max(TIES, TIES * abs(observed))  # sums this close count as ties, as in scipy's test
    sums = sign_patterns(len(seen)) @ seen
    return int(np.sum(sums <= observed + slack if below else sums >= observed - slack))


def lowest_difference_p(improvements: Sequence[float], planned: int) -> float:
    """The smallest two-sided sign-flip p that ``planned`` seeds can still give, the first of
    them being ``improvements``: twice the patterns of these seeds at least as extreme, in the
    direction that has fewer, over 2**planned. Any continuation keeps those patterns at least
    as extreme (with the later seeds as they fall); later seeds far out on one side reach it."""
    fewest = min(_at_least_as_extreme(improvements, below) for below in (False, True))
    return min(1.0, 2.0 * fewest / 2.0**planned)


def lowest_equivalence_p(improvements: Sequence[float], margin: float, planned: int) -> float:
    """A floor under the TOST p (the larger of the one-sided sign-flip p of ``d - margin`` being
    below 0 and of ``d + margin`` being above it) that ``planned`` seeds can still give, the
    first of them being ``improvements``: the patterns of these seeds at least as extreme, on the
    side with more, over 2**planned; 1 without a margin."""
    if margin <= 0:
        return 1.0
    above = _at_least_as_extreme([d - margin for d in improvements], below=True)
    below = _at_least_as_extreme([d + margin for d in improvements], below=False)
    return min(1.0, max(above, below) / 2.0**planned)


def futile(
    improvements: Sequence[float], margin: float, look: FutilityLook, equivalence: bool = True
) -> bool:
    """Whether a comparison whose first seeds gave ``improvements`` (on the analysis scale,
    > 0: the mixer better; ``margin`` on the same scale) can reach neither a difference nor an
    equivalence at Holm's first step by ``look.planned`` seeds (``equivalence``: False when the
    seeds seen already rule an equivalence out, e.g. enough of them learnt nothing)."""
    return lowest_difference_p(improvements, look.planned) >= look.alpha and (
        not equivalence or lowest_equivalence_p(improvements, margin, look.planned) >= look.alpha
    )
