"""A suite verdict's robustness as a statement about the tracks (docs/statistics.md, "Across
tracks"): per mixer, its suite effect and test without each track, which tracks it rests on, and
how many seeds the leave-one-out tests would need where they agree but lack power.

The rule: a significant suite result is ``better`` / ``worse`` when it stays significant (Holm
over the same mixers, at the same level) with any one track left out. Otherwise it **rests on**
a track only where leaving that track out moves the effect substantially: to the other sign, or
to less than half of its size (:data:`SUBSTANTIAL`). Where every left-out effect keeps the sign
and at least half the size but some left-out test does not pass, the data do not say it rests on
a track; the seeds are too few to show it does not, and :func:`seeds_needed` says how many would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchsuite.protocol.combination import Combined, Stage, stages
from benchsuite.protocol.power import discordant_seeds
from benchsuite.protocol.signflip import (
    EXACT_LIMIT,
    FLIPS,
    Flips,
    SuiteNull,
    inverted,
    sign_flips,
)
from benchsuite.protocol.stats import holm
from benchsuite.results.schema import LeftOut
from benchsuite.vocabulary import Shift

SUBSTANTIAL = 0.5  # a left-out effect below this share of the full one (or of the other sign)
POWER = 0.8  # the power the seeds a robustness test needs are planned for


@dataclass
class SuiteTests:
    """One mixer's suite tests over any of its tracks: one sign-flip test of every seed, or
    (several stages) the combination test of the stages' tests."""

    diffs: dict[str, np.ndarray]
    seeds: dict[str, Sequence[int]]
    bounds: Sequence[int]  # the seed counts that end the stages (one or none: one test)
    seed: int  # of the Monte Carlo draws, where there are too many patterns to count
    staged: list[Stage] = field(init=False, default_factory=list)
    whole: Flips | None = field(init=False, default=None)
    exact: bool = field(init=False, default=True)  # every pattern counted
    flips: int = field(init=False, default=0)  # patterns counted or draws made

    def __post_init__(self) -> None:
        if len(self.bounds) > 1:
            self.staged = stages(self.diffs, self.seeds, self.bounds, self.seed)
            self.exact = all(s.flips.exact for s in self.staged)
            self.flips = sum(s.flips.patterns(list(s.diffs)) for s in self.staged if s.diffs)
        else:
            self.whole = sign_flips(self.diffs, self.seed, EXACT_LIMIT, FLIPS)
            self.exact = self.whole.exact
            self.flips = self.whole.patterns(list(self.diffs))

    def effect(self, tracks: Sequence[str]) -> float:
        """The equal-weight suite effect over ``tracks`` (every seed)."""
        return float(np.mean([self.diffs[t].mean() for t in tracks]))

    def test(self, tracks: Sequence[str]) -> SuiteNull | Combined:
        """The test of the suite effect over ``tracks``: ``.p(delta)`` and ``.floor()``."""
        if self.whole is None:
            return Combined(self.staged, tracks)
        return SuiteNull.of(self.diffs, self.whole, tracks)

    def interval(
        self, test: SuiteNull | Combined, tracks: Sequence[str], alpha: float
    ) -> list[float]:
        """The suite effect's 1 - ``alpha`` interval: ``test`` (of ``tracks``) inverted."""
        return inverted(test, self.effect(tracks), self.diffs, tracks, alpha)


def holm_over(ps: Mapping[str, float], family: int | None) -> dict[str, float]:
    """Holm over ``family`` tests (the plan's; default the ones given), unfinished ones p = 1."""
    if not ps:
        return {}
    size = max(family or 0, len(ps))
    return dict(zip(ps, holm(list(ps.values()), size), strict=True))


def sign(effect: float) -> Shift:
    """The direction of an effect: better above 0, worse below, none at 0."""
    return Shift.BETTER if effect > 0 else Shift.WORSE if effect < 0 else Shift.NONE


def direction(p_holm: float, effect: float, alpha: float) -> Shift:
    """The direction of a suite effect that passes Holm at ``alpha``, else ``NONE``."""
    return Shift.NONE if p_holm >= alpha else sign(effect)


def left_out(
    tests: Mapping[str, SuiteTests], tracks: Sequence[str], family: int | None, alpha: float
) -> dict[str, dict[str, LeftOut]]:
    """Per mixer and per track: its suite effect and test with that track left out (Holm over
    the same family), its direction, ``unreachable`` where even the most extreme effect these
    seeds allow would not pass."""
    found: dict[str, dict[str, LeftOut]] = {n: {} for n in tests}
    for track in tracks:
        rest = {n: [t for t in s.diffs if t != track] for n, s in tests.items() if track in s.diffs}
        rest = {n: ts for n, ts in rest.items() if ts}
        partial = {n: tests[n].test(ts) for n, ts in rest.items()}
        ps = {n: test.p() for n, test in partial.items()}
        adjusted = holm_over(ps, family)
        for name, test in partial.items():
            effect = tests[name].effect(rest[name])
            held = direction(adjusted[name], effect, alpha)
            # no effect these seeds allow would pass: the seeds, not the data, decided
            unreachable = (
                held == Shift.NONE and holm_over({**ps, name: test.floor()}, family)[name] >= alpha
            )
            found[name][track] = LeftOut(
                effect=effect,
                p_value=ps[name],
                p_holm=adjusted[name],
                direction=Shift.UNREACHABLE if unreachable else held,
            )
    return found


def rests_on(effect: float, without: Mapping[str, LeftOut], shown: Shift) -> list[str]:
    """The tracks a significant result in direction ``shown`` rests on: those without which it
    does not hold and whose absence moves the effect to the other sign or below half its size."""
    return [
        track
        for track, held in without.items()
        if held.direction != shown
        and (held.effect * effect <= 0 or abs(held.effect) < SUBSTANTIAL * abs(effect))
    ]


def seeds_needed(
    diffs: Mapping[str, np.ndarray],
    without: Mapping[str, LeftOut],
    shown: Shift,
    level: float,
) -> int | None:
    """The seeds per track with which every left-out test that did not pass would pass at
    ``level`` (Holm's first step) with power :data:`POWER`: the normal approximation of the
    sign-flip test (its null spread from each track's mean square difference, the estimate's
    from its variance, both as measured, the left-out effect as the effect to detect), more than
    the seeds there are, and at least as many as let one discordant seed pass the exact test;
    None where every left-out test passed."""
    from scipy.stats import norm

    failing = [t for t, held in without.items() if held.direction != shown]
    if not failing:
        return None
    have = max(len(d) for d in diffs.values())
    need = have + 1
    z_alpha, z_power = norm.isf(level / 2), norm.ppf(POWER)
    for track in failing:
        kept = [t for t in diffs if t != track]
        effect = abs(without[track].effect)
        if effect == 0:
            continue  # a left-out effect of 0 is a track the result rests on, not power
        null = math.sqrt(sum(float(np.mean(np.square(diffs[t]))) for t in kept))
        spread = math.sqrt(sum(float(np.var(diffs[t])) for t in kept))
        n = math.ceil(((z_alpha * null + z_power * spread) / (len(kept) * effect)) ** 2)
        need = max(need, discordant_seeds(len(kept), level, least=n))
    return need
