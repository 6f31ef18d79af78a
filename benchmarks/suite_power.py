"""How likely the suite design's verdicts are to be shown robust, at a stated effect and
heterogeneity across tracks (docs/statistics.md, "How many seeds, and why"; issue 50).

    python benchmarks/suite_power.py [--tracks 6] [--mixers 17] [--seeds 3,4,5] [--draws 200]
        [--effects 0.5,1,1.5,2] [--spreads 0,0.5,1]

A mixer's paired score differences are drawn per track and seed as ``N(mu_t, 1)``, in units of
the seeds' own noise, with the tracks' true effects ``mu_t = effect * (1 + heterogeneity * z_t)``
(``z_t`` standard normal: a heterogeneity of 0.5 lets the tracks' effects spread by half the mean
effect). Each draw runs the suite test as a report does (:class:`SuiteTests`, exact over every
sign pattern) over all tracks and with each track left out, at Holm's first step over
``mixers`` at a first look's alpha (0.025): the level a lone true effect among null mixers
faces. Printed per seed count, effect and heterogeneity: the share of draws whose suite test
passes (significant) and whose every left-out test passes too (robust: ``better`` / ``worse``).
"""

from __future__ import annotations

import argparse

import numpy as np

from benchsuite.protocol.power import looks_alpha
from benchsuite.results.robustness import SuiteTests


def shares(
    tracks: int, seeds: int, level: float, effect: float, spread: float, draws: int, rng
) -> tuple[float, float]:
    """(significant, robust) shares of ``draws`` simulated mixers."""
    names = [f"t{i}" for i in range(tracks)]
    significant = robust = 0
    for draw in range(draws):
        means = effect * (1 + spread * rng.standard_normal(tracks))
        diffs = {t: rng.normal(mu, 1.0, seeds) for t, mu in zip(names, means, strict=True)}
        tests = SuiteTests(diffs, {t: list(range(seeds)) for t in names}, [], draw)
        if tests.test(names).p() >= level:
            continue
        significant += 1
        sign = np.sign(tests.effect(names))
        robust += all(
            tests.test(kept).p() < level and np.sign(tests.effect(kept)) == sign
            for kept in ([t for t in names if t != left] for left in names)
        )
    return significant / draws, robust / draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracks", type=int, default=6)
    parser.add_argument("--mixers", type=int, default=17)
    parser.add_argument("--seeds", default="3,4,5")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--effects", default="0.5,1,1.5,2", help="in seed-noise units")
    parser.add_argument("--spreads", default="0,0.5,1", help="sd of the tracks' effects / mean")
    args = parser.parse_args()
    level = looks_alpha(1) / args.mixers
    rng = np.random.default_rng(0)
    print(
        f"{args.tracks} tracks, Holm's first step over {args.mixers} mixers at "
        f"{looks_alpha(1)} ({level:.2g}); {args.draws} draws; effect in seed-noise units"
    )
    print("seeds  effect  heterogeneity  significant  robust")
    for seeds in (int(s) for s in args.seeds.split(",")):
        for effect in map(float, args.effects.split(",")):
            for spread in map(float, args.spreads.split(",")):
                sig, rob = shares(args.tracks, seeds, level, effect, spread, args.draws, rng)
                print(f"{seeds:5d}  {effect:6.1f}  {spread:13.1f}  {sig:11.2f}  {rob:6.2f}")


if __name__ == "__main__":
    main()
