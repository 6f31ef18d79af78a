"""Every verdict recomputed from the stored per-seed values of a real run: per track (effect, CI,
exact sign-flip p, Holm over the planned family, both-converged), across tracks (the equal-weight
effect and its exact stratified null), and a partial run's tables. The fast tier reads the
session's shared run (conftest's ``finished_run``: two log-ratio tracks, 3 seeds, one failing
mixer); the slow tier adds a 7-seed run where significance is reachable (a log-ratio track, an
accuracy track, a majority-class track), its captions against report.json, and a majority-class
predictor never counted as diverged by rounding."""

from __future__ import annotations

import functools
import html
import itertools
import json
import math

import numpy as np
import pytest
from helpers import invoke, stored_run
from rich.console import Console

from benchsuite.output import numbers
from benchsuite.output.headline import headline
from benchsuite.output.html import render_html
from benchsuite.output.tables import print_report
from benchsuite.plan.plan import Plan
from benchsuite.protocol.stats import excludes_zero, holm
from benchsuite.results.aggregate import normalised
from benchsuite.results.analysis import analyse

PLUGIN = """
from benchsuite import hookimpl
from benchsuite.tracks.tabular import TabularTrack


class FlatTable(TabularTrack):
    name = "tabular_flat"
    description = "a table whose only feature is constant: every model predicts one class"


@hookimpl
def benchsuite_register_tracks(register):
    register(FlatTable())
"""
TRACKS = ("sequence", "tabular", "tabular_flat")
SEEDS = 7  # 2/2**7 < 0.05/2: a verdict can be significant


@pytest.fixture(scope="module")
def seven_seeds(tmp_path_factory):
    """OUT of a real run (identity against the baseline dense, three tracks, 7 seeds), stdout."""
    root = tmp_path_factory.mktemp("verdicts")
    (root / "plugins").mkdir()
    (root / "plugins" / "flat.py").write_text(PLUGIN)
    labels = (np.random.default_rng(7).random(333) < 0.69).astype(int)
    (root / "flat.csv").write_text("x,label\n" + "".join(f"0,{v}\n" for v in labels))
    done = invoke(
        "--plugins-dir",
        str(root / "plugins"),
        "run",
        "--tracks",
        ",".join(TRACKS),
        "--mixers",
        "dense,identity",
        "--seeds",
        str(SEEDS),
        "--design",
        "per-track",
        "--no-futility",  # every seed of every cell: the verdicts' own rules, not the look's
        "--budget",
        "steps=30",
        *[f"--grid={t}.lr=0.01" for t in TRACKS],  # one config: half the training
        "--track-option",
        "sequence.series=24",
        "--track-option",
        "sequence.length=64",
        "--track-option",
        f"tabular_flat.csv={root / 'flat.csv'}",
        "--executor",
        "local",
        "--out",
        str(root / "out"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "out", done.stdout


@pytest.fixture(
    scope="module", params=["shared", pytest.param("seven_seeds", marks=pytest.mark.slow)]
)
def out(request):
    """The folder of a finished run: the session's shared one, or (slow) the 7-seed run."""
    if request.param == "shared":
        return request.getfixturevalue("finished_run")
    return request.getfixturevalue("seven_seeds")[0]


@pytest.fixture(scope="module")
def report(out):
    return json.loads((out / "report.json").read_text())


@pytest.fixture(scope="module")
def seven_seed_report(seven_seeds):
    return json.loads((seven_seeds[0] / "report.json").read_text())


def _exact_sign_flip(d: np.ndarray) -> float:
    """Two-sided p of mean(d) over every sign pattern, enumerated here."""
    means = np.array([np.mean(d * s) for s in itertools.product((-1, 1), repeat=len(d))])
    return float(np.mean(np.abs(means) >= abs(d.mean()) - 1e-12))


def _check_interval(
    bounds: list[float], d: np.ndarray, possible: tuple[float, float] = (-math.inf, math.inf)
) -> None:
    """The 95% interval is the sign-flip test inverted: just inside each bound the enumerated
    test does not reject at 0.05, just outside it does; within the seeds' range; infinite where
    no pattern of the seeds reaches 0.05 (five seeds or fewer). A bound may instead be the limit
    of what the metric allows (``possible``: of an accuracy, from -baseline to 1 - baseline),
    where the test inverted lies beyond it."""
    low, high = (
        side * math.inf if b is None else b for b, side in zip(bounds, (-1, 1), strict=True)
    )
    if len(d) < 6:
        assert (low, high) == (-math.inf, math.inf)
        return
    assert d.min() - 1e-12 <= low <= high <= d.max() + 1e-12
    assert possible[0] - 1e-12 <= low <= high <= possible[1] + 1e-12
    step = 1e-6 * max(np.ptp(d) + np.abs(d).max(), 1e-3)
    for bound, outward, limit in ((low, -1.0, possible[0]), (high, 1.0, possible[1])):
        inside = bound - outward * step if high - low > 2 * step else bound  # [0, 0]: itself
        assert _exact_sign_flip(d - inside) >= 0.05
        if bound != pytest.approx(limit, abs=1e-12):  # clipped: the test would reach further
            assert _exact_sign_flip(d - (bound + outward * step)) < 0.05


def _possible(base: np.ndarray, higher: bool, ideal: float | None, scale: str) -> tuple:
    """What the metric allows the mean difference (> 0: the mixer better) to be, given the
    baseline's mean, written out here: no mean passes the ideal, and an accuracy (higher is
    better, ideal 1 or 100) none goes below 0; a log-ratio is not bounded."""
    if scale == "log" or ideal is None:
        return (-math.inf, math.inf)
    if not higher:  # d = baseline - mixer, the mixer no lower than the ideal
        return (-math.inf, base.mean() - ideal)
    low = -base.mean() if ideal in (1.0, 100.0) else -math.inf
    return (low, ideal - base.mean())


def _check_one_statistic(
    c: dict, base: list[float], mix: list[float], higher: bool, ideal: float | None = None
) -> None:
    """Effect, CI and p of a comparison all come from the same per-seed d on its scale; its
    interval within what the metric allows."""
    base_a, mix_a = np.asarray(base), np.asarray(mix)
    sign = 1 if higher else -1
    d = np.log(base_a / mix_a) if c["scale"] == "log" else sign * (mix_a - base_a)
    assert c["per_seed_improvements"] == pytest.approx(d.tolist())
    assert c["improvement"] == pytest.approx(d.mean())
    assert c["p_value"] == pytest.approx(_exact_sign_flip(d))
    _check_interval(c["ci95"], d, _possible(base_a, higher, ideal, c["scale"]))
    assert excludes_zero(c["ci95"]) == (c["p_value"] < 0.05)
    if c["verdict"].startswith("significant"):
        assert c["p_holm"] < c["alpha"] and excludes_zero(c["ci95"])
        assert c["verdict"].startswith("significant_win") == (c["improvement"] > 0)


def _cells(report: dict) -> list[tuple[str, dict, str, dict]]:
    return [
        (t, e, m, cell) for t, e in report["tracks"].items() for m, cell in e["comparisons"].items()
    ]


@pytest.mark.slow
def test_the_seven_seed_run_is_complete_on_two_scales(seven_seed_report):
    design = seven_seed_report["design"]
    cells = _cells(seven_seed_report)
    assert len(cells) == design["comparisons"] == 3 and not design["partial"]
    assert {e["scale"] for _, e, _, _ in cells} == {"log", "difference"}
    assert design["both_converged_comparisons"] >= 2


def test_every_per_track_and_both_converged_verdict_is_one_statistic(report):
    design = report["design"]
    cells = _cells(report)
    family = design["comparisons"]
    assert len(cells) == design["finished"] <= family and design["partial"] == (len(cells) < family)
    p_holm = holm([cell["comparison"]["p_value"] for *_, cell in cells], family)
    for (_, entry, _, cell), adjusted in zip(cells, p_holm, strict=True):
        c = cell["comparison"]
        # the suite design's first look at per-track verdicts spends half of alpha (docs/
        # protocol.md, "Extending a run"); the per-track design's all of it
        spent = 0.025 if design["claims"] == "suite" else 0.05
        assert c["family"] == family and c["alpha"] == design["alpha"] == spent
        assert c["mde_alpha"] == pytest.approx(spent / family)
        assert c["p_holm"] == pytest.approx(adjusted)
        _check_one_statistic(
            c,
            cell["baseline_values"],
            cell["mixer_values"],
            entry["higher_is_better"],
            entry["ideal"],
        )
    both = [cell["both_converged"] for *_, cell in cells if cell["both_converged"]]
    assert len(both) == design["both_converged_comparisons"] >= 1
    both_holm = holm([b["p_value"] for b in both])
    for b, adjusted in zip(both, both_holm, strict=True):
        assert b["alpha"] == spent and b["family"] == len(both)
        assert b["p_holm"] == pytest.approx(adjusted)
        if b["verdict"].startswith("significant"):
            assert b["p_holm"] < b["alpha"] and excludes_zero(b["ci95"])


def test_the_across_tracks_verdict_tests_its_printed_effect(report):
    across = report["across_tracks"]
    assert across["mixers"]
    for mixer, row in across["mixers"].items():
        _check_suite_row(report, mixer, row, across["alpha"])


def _check_suite_row(report: dict, mixer: str, row: dict, alpha: float) -> None:
    """The suite effect is the equal-weight mean of the tracks' normalised paired differences, and
    its p the exact stratified sign-flip p of that mean."""
    diffs = {}
    for track, entry in report["tracks"].items():
        cell = entry["comparisons"][mixer]
        ideal = entry["ideal"]
        higher = entry["higher_is_better"]
        base = normalised(cell["baseline_values"], cell["caps"], higher, ideal)
        mix = normalised(cell["mixer_values"], cell["caps"], higher, ideal)
        diffs[track] = mix - base
    effect = np.mean([d.mean() for d in diffs.values()])
    assert row["suite_effect"] == pytest.approx(effect)
    assert row["suite_test"]["statistic"] == pytest.approx(effect)
    assert row["suite_test"]["direction"] == ("better" if effect > 0 else "worse")
    # the exact null of the equal-weight mean: every track's 2**n flipped means, combined
    nulls = [
        np.array([np.mean(d * s) for s in itertools.product((-1, 1), repeat=len(d))])
        for d in diffs.values()
    ]
    grid = functools.reduce(np.add.outer, nulls).ravel() / len(nulls)
    exact = np.mean(np.abs(grid) >= abs(effect) - 1e-12)
    assert row["suite_test"]["p_value"] == pytest.approx(exact, abs=0.01)
    if row["verdict"] in ("better", "worse", "not_robust"):
        assert row["suite_test"]["p_holm"] < alpha
        assert excludes_zero(row["suite_effect_ci95"])
    if row["verdict"] in ("better", "worse"):
        assert row["verdict"] == row["suite_test"]["direction"]


@pytest.mark.slow
def test_a_majority_class_predictor_is_not_diverged_by_float_rounding(seven_seed_report):
    entry = seven_seed_report["tracks"]["tabular_flat"]
    cell = entry["comparisons"]["identity"]
    cap = cell["caps"][0]
    rounded = float(np.float32(cap))
    assert rounded < cap  # the float32 accuracy of the majority class is below its cap
    for name in ("identity", "dense"):
        raw = entry["mixers"][name]["full"]["raw"]["per_seed"]
        assert raw.count(rounded) >= SEEDS - 1, raw  # (nearly) every seed: the majority class
        assert entry["mixers"][name]["diverged"] == 0
    assert cell["divergence"]["mixer"]["count"] == cell["divergence"]["baseline"]["count"] == 0
    assert cell["both_converged"] is not None and cell["both_converged"]["n"] == SEEDS


@pytest.mark.slow
def test_captions_state_the_alpha_scale_and_family_of_report_json(seven_seed_report, seven_seeds):
    report = seven_seed_report
    out, stdout = seven_seeds
    design = report["design"]
    alpha = numbers.num(design["verdict_alpha"], 2)
    text = " ".join(stdout.split())  # captions wrap: compare on single spaces
    assert text.count(f"Holm over {design['comparisons']} comparisons") == 3
    assert text.count(f"MDE at alpha {alpha} (Holm's first step)") == 3
    assert text.count("significant: Holm p < α = 0.05 and the 95% CI excludes 0") == 3
    assert text.count("on the log-ratio scale") == 1  # sequence only
    assert text.count("on the difference scale") == 2  # the two accuracy tracks
    assert text.count("Δ pt") >= 2
    assert f"Holm across 1 mixers; better/worse: Holm p < α = {numbers.num(0.025, 3)}" in text
    assert "Stouffer" not in text
    row = report["across_tracks"]["mixers"]["identity"]
    direction = row["suite_test"]["direction"]
    rests_on = ", ".join(row["rests_on"])
    not_robust = row["verdict"] == "not_robust"
    shown = f"{direction}, rests on" if not_robust else row["verdict"]  # its cell may wrap here
    assert f"{numbers.num(row['suite_effect'], 2)} " in text
    assert f"│ {shown} " in text and all(track in text for track in rests_on.split(", "))
    page = " ".join(html.unescape((out / "report.html").read_text(encoding="utf-8")).split())
    assert f"at α = {alpha} (Holm's first step over {design['comparisons']} comparisons" in page
    assert (
        page.count(
            f"Holm over {design['comparisons']} comparisons; MDE and first Holm step at α = {alpha}"
        )
        == 3
    )
    assert page.count("from paired log-ratios, shown as 1 − the geometric-mean ratio") >= 1
    log_track = page[page.index('<h2 id="track-sequence">') : page.index("Track tabular</h2>")]
    assert "geometric-mean ratio" in log_track and "% of the baseline mean" not in log_track
    for stale in (
        "sweep seeds",
        "config chosen for evaluation",
        "baseline mean = 1",
        "on log-ratios, Holm",
    ):
        assert stale not in page
    assert "★ = the config most seeds chose" in page


def test_partial_tables_use_the_planned_family_and_say_so(out, report):
    """One more cell's jobs missing, as after an interruption: Holm still over the whole family."""
    plan, results = stored_run(out)
    track, _, mixer, _ = _cells(report)[0]
    missing = set(plan.cells[track][mixer].jobs)
    partial = analyse(plan, {k: r for k, r in results.items() if k not in missing}, [])
    design = partial.design
    planned, finished = report["design"]["comparisons"], report["design"]["finished"] - 1
    assert design.partial and design.finished == finished and design.comparisons == planned
    cells = [c.comparison for e in partial.tracks.values() for c in e.comparisons.values()]
    assert len(cells) == finished and [c.family for c in cells] == [planned] * finished
    assert [c.p_holm for c in cells] == pytest.approx(holm([c.p_value for c in cells], planned))
    console = Console(record=True, width=200)
    print_report(partial, console)
    text = " ".join(console.export_text().split())
    banner = (
        f"partial: {finished} of {planned} comparisons, {design.jobs_finished} of "
        f"{design.jobs} jobs; Holm over all {planned} comparisons"
    )
    assert design.jobs_finished == len(results) - len(missing) and design.jobs == len(plan.keys())
    assert text.count(banner) == 2  # at the top, and again above the headline
    assert f"Holm over {planned} comparisons (partial: {finished} of {planned} finished)" in text


def _stored(out) -> tuple[dict, Plan, dict]:
    """A finished run's report.json, its plan and its stored records (to change and re-analyse)."""
    return (json.loads((out / "report.json").read_text()), *stored_run(out))


def test_a_cell_short_of_seeds_is_not_finished_and_the_suite_holm_is_the_plans(finished_run):
    """One seed of one cell missing and every job of another mixer: the comparison is made on the
    seeds there are but is not counted as finished; the across-tracks Holm runs over every
    planned mixer, the one without results too; the page's first screen says partial, above the
    headline."""
    report, plan, results = _stored(finished_run)
    track, _, mixer, _ = _cells(report)[0]
    baseline = plan.settings.baseline
    planned = [
        m
        for m in plan.settings.mixers
        if m != baseline and any(m in cells for cells in plan.cells.values())
    ]
    other = next(m for m in planned if m != mixer)
    gone = {plan.cells[track][mixer].jobs[-1]}
    gone |= {key for cells in plan.cells.values() if other in cells for key in cells[other].jobs}
    partial = analyse(plan, {k: r for k, r in results.items() if k not in gone}, [])
    assert partial.tracks[track].comparisons[mixer].missing_seeds == 1
    others = sum(other in cells for cells in plan.cells.values())
    assert partial.design.finished == report["design"]["finished"] - 1 - others
    assert partial.design.partial
    across = partial.across_tracks
    shown = {m: row.suite_test.p_value for m, row in across.mixers.items()}
    assert other not in shown and len(shown) < len(planned)
    expected = holm(list(shown.values()), len(planned))
    assert [row.suite_test.p_holm for row in across.mixers.values()] == pytest.approx(expected)
    page = render_html(partial, [])
    assert "id=partial" in page and page.index("id=partial") < page.index("id=headline")
    assert partial.design.banner() in html.unescape(page)


def test_a_cell_at_the_trivial_level_on_more_than_one_seed_is_flagged(finished_run):
    """One seed of three set to score exactly its trivial predictor's (its cap): the seed is not
    imputed (it is not worse) but learnt nothing, and one seed's bad luck is not flagged; a
    second such seed flags the cell ``no_better_than_trivial`` with its count and reason, in the
    headline too."""
    report, plan, results = _stored(finished_run)
    track, entry, mixer, cell = next(
        c for c in _cells(report) if c[3]["divergence"]["mixer_not_learned"] == 0
    )
    assert "no_better_than_trivial" not in cell["comparison"]["flags"]
    records = sorted(
        (results[key] for key in plan.cells[track][mixer].jobs), key=lambda r: r.job.seed
    )
    metric = entry["metric"]
    records[0].result.metrics.test[metric] = records[0].result.cap
    one = analyse(plan, results, []).tracks[track].comparisons[mixer]
    assert one.divergence.mixer_not_learned == 1
    assert "no_better_than_trivial" not in one.comparison.flags
    records[1].result.metrics.test[metric] = records[1].result.cap
    analysis = analyse(plan, results, [])
    changed = analysis.tracks[track].comparisons[mixer]
    assert changed.divergence.mixer_not_learned == 2
    assert changed.divergence.mixer_reasons["no_better_than_trivial"] == 0  # not imputed
    assert "no_better_than_trivial" in changed.comparison.flags
    assert changed.comparison.verdict != "equivalent_within_margin"
    assert changed.flag_reasons["no_better_than_trivial"].startswith("2 of 3 seeds learnt nothing")
    (line,) = [line for line in headline(analysis) if line.mixer == mixer]
    named = line.better + line.worse + line.equivalent + line.inconclusive + line.undecided
    assert f"{track} (learnt nothing)" in named


def test_learnt_nothing_is_each_seeds_test_against_its_own_test_noise(finished_run):
    """A seed set within 1.645 of its own test standard errors of its trivial predictor's score
    learnt nothing; the same seed set 3 standard errors past it learnt something. A record
    stored before the noise was measured (no ``test_se``) keeps the fixed floor of 1% of the
    gap to the ideal."""
    report, plan, results = _stored(finished_run)
    track, entry, mixer, _ = _cells(report)[0]
    assert entry["higher_is_better"] is False  # an error: better is below the cap
    record = min((results[key] for key in plan.cells[track][mixer].jobs), key=lambda r: r.job.seed)
    assert record.result.test_se is not None and record.result.test_se > 0
    metric = entry["metric"]

    def learnt_nothing(value: float, noise: float | None) -> int:
        record.result.metrics.test[metric], record.result.test_se = value, noise
        return (
            analyse(plan, results, []).tracks[track].comparisons[mixer].divergence.mixer_not_learned
        )

    se = record.result.test_se
    others = learnt_nothing(record.result.cap - 3 * se, se)  # this seed learnt: count the others
    assert learnt_nothing(record.result.cap - 1.0 * se, se) == others + 1
    assert learnt_nothing(record.result.cap - 1.7 * se, se) == others
    gap = record.result.cap - entry["ideal"]
    assert learnt_nothing(record.result.cap - 0.009 * gap, None) == others + 1  # the old floor: 1%
    assert learnt_nothing(record.result.cap - 0.011 * gap, None) == others


def test_the_equivalence_margin_is_the_smaller_of_5_percent_and_a_quarter_of_the_gain(
    finished_run,
):
    """Every comparison's margin (a log-ratio here) is min(log 1.05, a quarter of the baseline's
    mean log gain over its seeds' caps); a baseline barely better than its trivial predictor
    narrows it to the quarter; an equivalence is only ever claimed where the exact TOST can
    reach Holm's first step."""
    report, plan, results = _stored(finished_run)
    for *_, cell in _cells(report):
        c = cell["comparison"]
        gain = float(np.mean(np.log(np.asarray(cell["caps"]) / cell["baseline_values"])))
        assert c["margin"] == pytest.approx(min(math.log1p(0.05), 0.25 * gain))
        if c["verdict"] == "equivalent_within_margin":
            assert c["p_tost_holm"] < c["alpha"] and 0.5 ** c["n"] < c["alpha"] / c["family"]
    track, _, mixer, cell = _cells(report)[0]
    for key in plan.cells[track][plan.settings.baseline].jobs:
        record = results[key]
        record.result.metrics.test[report["tracks"][track]["metric"]] = record.result.cap / 1.02
    narrow = analyse(plan, results, []).tracks[track].comparisons[mixer].comparison
    assert narrow.margin == pytest.approx(0.25 * math.log(1.02))
