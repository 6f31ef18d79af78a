"""The per-track design's futility look (docs/protocol.md, "The futility look"): once half the
seeds are in, a comparison whose seeds can no longer give an exact p below Holm's first step, as
a difference or an equivalence, stops there; its later seeds are never trained, it is reported
with p = 1 and where it stopped, and the report, a re-run and ``benchsuite report`` decide it
alike from the store."""

from __future__ import annotations

import itertools
import json
import sqlite3

import numpy as np
import pytest
from helpers import TINY, invoke

from benchsuite.output import html, track_tables
from benchsuite.output.numbers import num
from benchsuite.protocol.futility import (
    FutilityLook,
    futile,
    futility_look,
    lowest_difference_p,
    lowest_equivalence_p,
)
from benchsuite.protocol.stats import sign_flip_p
from benchsuite.results.schema import Analysis
from benchsuite.settings import RunSettings


def _one_sided(d: np.ndarray, alternative: str) -> float:
    """The exact one-sided sign-flip p of mean(d), every sign pattern enumerated."""
    observed = d.mean()
    means = [
        np.mean(d * np.array(signs)) for signs in itertools.product((1.0, -1.0), repeat=len(d))
    ]
    hits = [m >= observed if alternative == "greater" else m <= observed for m in means]
    return float(np.mean(hits))


@pytest.mark.parametrize("trial", range(6))
def test_no_continuation_of_the_seen_seeds_gives_a_difference_p_below_the_bound(trial):
    rng = np.random.default_rng(trial)
    seen = rng.normal(0.1, 1.0, 4)
    bound = lowest_difference_p(seen.tolist(), 9)
    for _ in range(20):
        later = rng.normal(rng.normal(0, 2), 1.0, 5)
        assert sign_flip_p(np.concatenate([seen, later]))[0] >= bound - 1e-12
    # the bound is reached: every later seed far out on one side (the better of the two)
    reached = [sign_flip_p(np.concatenate([seen, np.full(5, side)]))[0] for side in (1e3, -1e3)]
    assert min(reached) == pytest.approx(bound)
    # never below the count of seeds on the side with fewer
    against = min((seen > 0).sum(), (seen < 0).sum()) + (seen == 0).sum()
    assert bound >= 2.0 ** (against + 1 - 9)


def test_a_tied_seed_counts_against_either_side():
    assert lowest_difference_p([0.0, 1.0, 2.0], 6) == 2 * 2 / 2**6
    assert lowest_difference_p([1.0, 2.0, 3.0], 6) == 2 / 2**6  # still reachable
    assert lowest_difference_p([1.0, -1.0, 0.0, 0.0], 5) == 2 * 12 / 2**5  # 12 of 16 sum >= 0
    # one small seed the other way: only the patterns that flip it are as extreme
    assert lowest_difference_p([3.0, 2.0, -0.5, 1.0], 13) == 2 * 2 / 2**13
    # a large one: flipping smaller seeds instead is as extreme too
    assert lowest_difference_p([0.1, 0.2, -3.0, 0.3], 13) == 2 * 8 / 2**13


@pytest.mark.parametrize("trial", range(4))
def test_no_continuation_gives_an_exact_tost_p_below_the_equivalence_bound(trial):
    rng = np.random.default_rng(10 + trial)
    margin, seen = 0.5, rng.normal(0.0, 0.6, 4)
    bound = lowest_equivalence_p(seen.tolist(), margin, 8)
    for _ in range(10):
        d = np.concatenate([seen, rng.normal(0.0, 0.3, 4)])
        tost = max(_one_sided(d + margin, "greater"), _one_sided(d - margin, "less"))
        assert tost >= bound - 1e-12
    assert bound >= 2.0 ** (max((seen >= margin).sum(), (seen <= -margin).sum()) - 8)
    assert lowest_equivalence_p(seen.tolist(), 0.0, 8) == 1.0  # no margin: no equivalence


def test_a_comparison_stops_only_when_neither_test_can_pass_holms_first_step():
    look = FutilityLook(seeds=6, planned=13, alpha=0.05 / 101)
    # two seeds on each side: no difference; three beyond the margin above: no equivalence
    assert futile([0.2, 0.3, 0.25, -0.1, -0.05, 0.01], 0.05, look)
    # one seed the other way: a difference can still pass (4/2**13 < 0.05/101)
    assert not futile([0.2, 0.3, 0.25, 0.1, 0.05, -0.01], 0.05, look)
    # mixed signs, but all within the margin: an equivalence can still pass
    assert not futile([0.01, -0.02, 0.03, -0.01, 0.02, -0.03], 0.05, look)
    # the same seeds from a mixer that learnt nothing: no equivalence is ever claimed for it
    assert futile([0.01, -0.02, 0.03, -0.01, 0.02, -0.03], 0.05, look, equivalence=False)


def test_the_look_is_at_half_the_seeds_of_a_per_track_design_that_can_decide():
    per_track = RunSettings(seeds=13, design="per-track")
    assert futility_look(per_track, 101) == FutilityLook(6, 13, 0.05 / 101)
    assert futility_look(per_track.replace(futility=False), 101) is None
    assert futility_look(RunSettings(seeds=3, design="suite"), 101) is None
    assert futility_look(per_track.replace(seeds=8), 101) is None  # cannot reach Holm anyway
    assert futility_look(RunSettings(seeds=9, design="per-track"), 5) == FutilityLook(4, 9, 0.01)


TINY_RUN = (
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,identity,attention,fnet,pooling,mlp",
    "--seeds",
    "9",
    "--margin",
    "0",  # no equivalence test: the look decides on the difference alone
    *TINY,
    "--executor",
    "local",
)


def _seeds_stored(out) -> dict[str, int]:
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        return dict(db.execute("SELECT mixer, COUNT(*) FROM results GROUP BY mixer"))


def test_a_stopped_comparison_trains_no_later_seed_and_reads_p_1_where_it_stopped(tmp_path):
    out = tmp_path / "out"
    first = invoke(*TINY_RUN, "--out", str(out))
    assert first.returncode == 0, first.stderr
    said = " ".join((first.stdout + first.stderr).split())
    assert "futility look at 4 of 9 seeds (pre-registered; --no-futility" in said
    report = json.loads((out / "report.json").read_text())
    look = FutilityLook(4, 9, 0.05 / 5)
    comparisons = report["tracks"]["sequence"]["comparisons"]
    stored = _seeds_stored(out)
    stopped = {m for m, c in comparisons.items() if c["comparison"]["stopped_at"]}
    assert stopped, "the run is chosen so that the look stops some comparison"
    assert report["design"]["futility_seeds"] == 4
    assert report["design"]["stopped"] == len(stopped)
    for mixer, cell in comparisons.items():
        seen = cell["comparison"]["per_seed_improvements"][:4]
        assert (mixer in stopped) == futile(seen, 0.0, look)
        if mixer in stopped:
            assert cell["comparison"]["p_value"] == 1.0
            # beside the rule's 1, the exact sign-flip p of the seeds it stopped at, as printed
            own, method, _ = sign_flip_p(np.asarray(seen))
            assert method == "exact" and cell["comparison"]["p_at_stop"] == pytest.approx(own)
            assert cell["comparison"]["verdict"] == "inconclusive"
            assert (cell["seeds"], cell["missing_seeds"], stored[mixer]) == ([0, 1, 2, 3], 0, 4)
        else:
            assert stored[mixer] == 9 and len(cell["seeds"]) == 9
    trained = sum(stored.values())
    assert f"jobs: {trained} trained, 0 reused" in said
    assert f"futility look at 4 of 9 seeds: {len(stopped)} of 5 comparisons" in said
    assert not report["design"]["partial"]

    again = invoke(*TINY_RUN, "--out", str(out))
    assert again.returncode == 0 and "jobs: 0 trained" in again.stdout + again.stderr
    rebuilt = invoke("report", str(out), env={"COLUMNS": "400"})  # the wide table, unfolded
    assert rebuilt.returncode == 0, rebuilt.stderr
    for mixer in stopped:  # the p column: the rule's 1, and beside it its seeds' own p
        own = comparisons[mixer]["comparison"]["p_at_stop"]
        assert f"│ 1 (stopped at 4 seeds; its 4 seeds: p {num(own, 3)}) │" in rebuilt.stdout
    reread = json.loads((out / "report.json").read_text())["tracks"]["sequence"]["comparisons"]
    assert {m: c["comparison"]["stopped_at"] for m, c in reread.items()} == {
        m: c["comparison"]["stopped_at"] for m, c in comparisons.items()
    }
    # a stopped comparison listed first does not speak for the track: its caption is the 9
    # seeds' family, not "no sign pattern of 4 seeds"
    analysis = Analysis.from_dict(report)
    entry = analysis.tracks["sequence"]
    halted = sorted(entry.comparisons, key=lambda m: m not in stopped)
    entry.comparisons = {m: entry.comparisons[m] for m in halted}
    caption = str(track_tables.track_table("sequence", entry, analysis.design).caption)
    assert "Holm over 5 comparisons;" in caption and "no sign pattern" not in caption
    assert html.mde_text(entry) != "none (the seeds cannot reach α)"

    page = (out / "report.html").read_text()
    assert page.count("stopped at 4 seeds</span>") == len(stopped)
    for mixer in stopped:
        own = comparisons[mixer]["comparison"]["p_at_stop"]
        assert f"<td class=num>1 (stopped at 4 seeds; its 4 seeds: p {num(own, 3)})</td>" in page
    assert "p_at_stop" not in page  # a field of report.json, said in words on the page

    every_seed = invoke(*TINY_RUN, "--no-futility", "--out", str(out))
    assert every_seed.returncode == 0, every_seed.stderr
    assert f"jobs: {5 * len(stopped)} trained" in every_seed.stdout + every_seed.stderr
    assert set(_seeds_stored(out).values()) == {9}
