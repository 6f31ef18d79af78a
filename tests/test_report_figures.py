"""Learning curves, the undertrained rule, quality against cost, forest plots, the palette and the
number formatter, on the real tiny run of test_html.py (2 tracks x 3 mixers, 3 seeds, 30 steps)
and on hand-made curves where the rule's answer is known."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from helpers import Page

from benchsuite import api
from benchsuite.output import numbers
from benchsuite.output.diagnostics import cost_figure, curves_figure, forest_figure
from benchsuite.output.html import render_html
from benchsuite.output.palette import BASELINE, MARKERS, OKABE_ITO, VERDICTS, mixer_styles
from benchsuite.output.plots import make_plots
from benchsuite.plan.plan import Plan
from benchsuite.results import curves
from benchsuite.results.analysis import analyse
from benchsuite.results.schema import Analysis
from benchsuite.results.tradeoffs import COSTS, pareto
from benchsuite.store.store import Store

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors


@pytest.fixture(scope="module")
def out(finished_run):
    return finished_run


@pytest.fixture(scope="module")
def report(out) -> Analysis:
    return api.report(out, write=False)


@pytest.fixture(scope="module")
def data(report) -> dict:
    """The report as report.json holds it."""
    return report.to_dict()


@pytest.fixture(scope="module")
def chosen_curves(out) -> dict[tuple[str, str], dict[int, list]]:
    """(track, mixer) -> seed -> the stored curve of the config that seed chose (sqlite3)."""
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        records = [json.loads(text) for (text,) in db.execute("SELECT record FROM results")]
    found: dict[tuple[str, str], dict[int, list]] = {}
    for r in records:
        cell = found.setdefault((r["job"]["track"], r["job"]["mixer"]), {})
        cell[r["job"]["seed"]] = r["sweep"][r["chosen"]]["curve"]
    return found


def test_learning_curves_are_the_median_of_the_chosen_configs(data, chosen_curves):
    for track, entry in data["tracks"].items():
        steps = entry["budget"]["steps"]
        for mixer, arm in entry["mixers"].items():
            curve = arm["learning_curve"]
            stored = chosen_curves[(track, mixer)]
            stack = np.array([stored[s] for s in sorted(stored)])
            assert curve["seeds"] == sorted(stored) and curve["left_out"] == 0
            assert curve["points"] == min(64, steps) == stack.shape[1]
            assert curve["median"] == pytest.approx(np.median(stack, axis=0), rel=1e-5)
            assert np.all(np.array(curve["q25"]) <= np.array(curve["median"]) + 1e-12)
            assert np.all(np.array(curve["median"]) <= np.array(curve["q75"]) + 1e-12)
            assert curve["undertrained"] == arm["undertrained"]


def test_undertrained_is_one_rule_flagged_everywhere(report, data):
    """The flag follows the figures of the median curve, and shows in the comparison flags, the
    run's list and the problems list of the page."""
    summary = data["learning_curves"]
    flagged = {(f["track"], f["mixer"]) for f in summary["undertrained"]}
    for track, entry in data["tracks"].items():
        base_flag = entry["mixers"][entry["baseline"]]["undertrained"]
        for mixer, arm in entry["mixers"].items():
            curve = arm["learning_curve"]
            expected = (
                curve["tail_drop"] > curves.MIN_DROP and curve["tail_share"] > curves.MIN_SHARE
            )
            assert arm["undertrained"] == expected == ((track, mixer) in flagged)
            if mixer in entry["comparisons"]:
                flags = entry["comparisons"][mixer]["comparison"]["flags"]
                assert ("undertrained" in flags) == expected
                assert ("baseline_undertrained" in flags) == base_flag
    page = render_html(report, [])
    cells = Page(page[page.index("id=problems") :]).cells
    assert cells.count("undertrained") == len(flagged) > 0  # 30 steps: some loss still falls
    assert all(f["reason"] in cells for f in summary["undertrained"])
    assert summary["rule"] == curves.RULE


def falling(points: int, floor: float, rate: float) -> np.ndarray:
    return floor + (2.0 - floor) * np.exp(-rate * np.linspace(0, 1, points))


def near_floor() -> np.ndarray:
    """2.2 down to 0.02 over 80% of the budget, then to 0.018: a 10% fall at the end, but 2% of
    the whole fall on a log scale (a recall task the model has solved)."""
    return np.r_[np.geomspace(2.2, 0.02, 51), np.linspace(0.02, 0.018, 14)[1:]]


@pytest.mark.parametrize(
    ("curve", "flagged"),
    [
        (falling(64, 0.5, 12.0), False),  # levelled off long before the end
        (2.0 - 1.5 * np.linspace(0, 1, 64), True),  # still falling in a straight line
        (falling(64, 0.0, 5.0), True),  # halving every few steps, no floor in sight
        (near_floor(), False),  # near its floor: the fall left is tiny on a log scale
        (np.full(64, 2.2) + 0.01 * np.sin(np.arange(64)), False),  # flat: learnt nothing
        (falling(4, 0.0, 5.0), None),  # too few points for the rule
    ],
)
def test_the_rule_on_known_curves(curve, flagged):
    figures = curves.tail_figures(np.asarray(curve))
    if flagged is None:
        assert figures is None
        return
    drop, share = figures
    assert (drop > curves.MIN_DROP and share > curves.MIN_SHARE) == flagged, (drop, share)


def stored(out: Path) -> tuple[Plan, dict, list]:
    """The last plan of a run folder, its results and its failures, read from the store."""
    store = Store(out / "benchsuite.sqlite")
    try:
        plan = Plan.from_dict(store.last_plan())
        return plan, store.results(plan.keys()), store.failures()
    finally:
        store.close()


def test_a_diverged_seed_is_left_out_of_the_curve(out, report):
    """A seed whose chosen curve holds a non-finite value is counted, not averaged in."""
    plan, results, failures = stored(out)
    key = next(
        k
        for k, r in results.items()
        if (r.job.track, r.job.mixer, r.job.seed) == ("sequence", "attention", 1)
    )
    broken = copy.deepcopy(results[key])
    broken.result.sweep[broken.result.chosen].curve[-1] = float("nan")
    curve = (
        analyse(plan, {**results, key: broken}, failures)
        .tracks["sequence"]
        .mixers["attention"]
        .learning_curve
    )
    assert curve.seeds == [0, 2] and curve.left_out == 1
    before = report.tracks["sequence"].mixers["attention"].learning_curve
    assert curve.median != before.median


def test_pareto_front():
    points = {
        "a": (1.0, 0.0),
        "b": (2.0, 5.0),
        "c": (3.0, 4.0),
        "d": (4.0, 6.0),
        "e": (2.0, 5.0),
        "f": (None, 9.0),
        "g": (1.0, -1.0),
    }
    assert pareto(points) == ["a", "b", "e", "d"]  # c is beaten by b; g by a; f has no cost


def test_quality_against_cost_numbers(data):
    report = data
    tradeoffs = report["quality_vs_cost"]
    assert tradeoffs["costs"] == list(COSTS)
    for track, entry in report["tracks"].items():
        found = tradeoffs["tracks"][track]
        assert set(found["points"]) == set(entry["mixers"])
        assert found["points"][entry["baseline"]]["score"] == 0.0
        for mixer, cell in entry["comparisons"].items():
            point, c = found["points"][mixer], cell["comparison"]
            assert point["score"] == c["improvement_rel_pct"]
            assert point["ci95"] == c["ci95_rel_pct"] and point["verdict"] == c["verdict"]
            assert point["params"] == entry["mixers"][mixer]["costs_median"]["params"]
        for cost in COSTS:  # the front, recomputed by brute force from the report's numbers
            pts = {m: (p[cost], p["score"]) for m, p in found["points"].items()}
            beaten = {
                m
                for m, (c, s) in pts.items()
                if c is not None
                and any(
                    c2 is not None and c2 <= c and s2 >= s and (c2 < c or s2 > s)
                    for c2, s2 in pts.values()
                )
            }
            assert (
                set(found["pareto"][cost])
                == {m for m, (c, _) in pts.items() if c is not None} - beaten
            )
    across = tradeoffs["across"]
    baseline = report["settings"]["baseline"]
    assert across["points"][baseline]["params"] == 1.0
    for mixer, row in report["across_tracks"]["mixers"].items():
        point = across["points"][mixer]
        assert point["score"] == row["suite_effect"]
        ratios = [
            report["tracks"][t]["mixers"][mixer]["costs_median"]["params"]
            / report["tracks"][t]["mixers"][baseline]["costs_median"]["params"]
            for t in row["tracks"]
        ]
        assert point["params"] == pytest.approx(float(np.exp(np.mean(np.log(ratios)))))


def test_forest_plot_orders_comparisons_and_draws_the_margin(report):
    fig = forest_figure("sequence", report.tracks["sequence"])
    ax = fig.axes[0]
    entry = report.to_dict()["tracks"]["sequence"]
    order = sorted(
        entry["comparisons"],
        key=lambda m: entry["comparisons"][m]["comparison"]["improvement_rel_pct"],
    )
    assert [t.get_text() for t in ax.get_yticklabels()] == order
    texts = [t.get_text() for t in ax.texts]
    for mixer in order:  # the verdict in words beside each interval, not only as a colour
        look = VERDICTS[entry["comparisons"][mixer]["comparison"]["verdict"]]
        assert any(t.startswith(f"{look.symbol} {look.short}") for t in texts)
    assert any(line.get_xdata()[0] == 0 for line in ax.get_lines())  # the line at 0
    assert len(ax.patches) == 1  # the ±margin band


def test_curves_and_cost_figures(report, data):
    styles = mixer_styles(list(report.tracks["sequence"].mixers))
    ax = curves_figure("sequence", report.tracks["sequence"], styles).axes[0]
    entry = data["tracks"]["sequence"]
    bands = [arm["learning_curve"] for arm in entry["mixers"].values()]
    spread = max(max(c["q75"]) for c in bands) / min(min(c["q25"]) for c in bands)
    assert ax.get_yscale() == ("log" if spread > 10 else "linear")
    lines = {line.get_label(): line for line in ax.get_lines()}
    for mixer, arm in entry["mixers"].items():
        label = mixer + (" (undertrained)" if arm["undertrained"] else "")
        assert lines[label].get_linestyle() == ("--" if arm["undertrained"] else "-")
        assert lines[label].get_color() == styles[mixer].colour
    tradeoff = data["quality_vs_cost"]["tracks"]["sequence"]
    fig = cost_figure("t", report.quality_vs_cost.tracks["sequence"], list(COSTS), styles, "y")
    assert len(fig.axes) == len(COSTS)  # this run recorded every cost
    for ax, cost in zip(fig.axes, COSTS, strict=True):
        assert ax.get_xscale() == "log"
        rings = [c for c in ax.collections if list(getattr(c, "get_sizes", list)()) == [160]]
        assert len(rings) == len(tradeoff["pareto"][cost]) > 0


def test_report_html_has_every_new_figure(report):
    plots = make_plots(report)
    kinds = {(p.section, p.kind) for p in plots}
    for track in report.tracks:
        assert {(track, "curves"), (track, "forest"), (track, "cost")} <= kinds
    assert ("across", "cost") in kinds
    text = render_html(report, plots)
    for heading in ("Learning curves", "Quality against cost"):
        assert text.count(f"<h3>{heading}</h3>") >= len(report.tracks)
    assert "Pareto front by params" in text


def test_plots_say_which_tracks_they_leave_out(out):
    """Without the baseline's runs on one track, the IQM and rank figures and their captions say
    that track was left out, and why."""
    plan, results, failures = stored(out)
    kept = {
        k: r for k, r in results.items() if (r.job.track, r.job.mixer) != ("sequence_b", "dense")
    }
    report = analyse(plan, kept, failures)
    reason = "no results for the baseline dense"
    assert report.across_tracks.tracks_left_out == {"sequence_b": reason}
    notes = {p.kind: p.note for p in make_plots(report) if p.section == "across"}
    assert f"sequence_b ({reason})" in notes["iqm"] and f"sequence_b ({reason})" in notes["ranks"]
    assert f"sequence_b ({reason})" in render_html(report, make_plots(report))


def test_palette_is_distinct_for_many_mixers():
    names = [f"mixer{i}" for i in range(25)]
    styles = mixer_styles(names)
    assert len({(s.colour, s.marker) for s in styles.values()}) == 25
    assert (styles["mixer0"].colour, styles["mixer0"].marker) == BASELINE  # the baseline
    assert {s.colour for s in styles.values()} - {BASELINE[0]} <= set(OKABE_ITO)
    assert all(s.colour != BASELINE[0] for n, s in styles.items() if n != "mixer0")
    assert {s.marker for n, s in styles.items() if n != "mixer0"} <= set(MARKERS)
    for a, b in itertools.pairwise(names[1:]):  # neighbours differ in colour and marker
        assert styles[a].colour != styles[b].colour and styles[a].marker != styles[b].marker
    shapes = {v.marker for v in VERDICTS.values()}
    assert len(shapes) >= 4 and len({v.symbol for v in VERDICTS.values()}) == len(VERDICTS)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (10090, "10.1k"),
        (999_999, "1M"),
        (1.2e6, "1.2M"),
        (3.4e-05, "3.4e-05"),
        (0.12345, "0.1235"),
        (12, "12"),
        (float("nan"), "–"),
        (None, "–"),
    ],
)
def test_one_number_formatter(value, written):
    assert numbers.num(value) == written
    assert numbers.count(10090) == numbers.cost("params", 10090) == "10.1k"
    assert numbers.pct(12.34) == "+12.3%" and numbers.pct(-3, signed=False) == "-3.0%"
    assert numbers.cost("seconds_per_step", 0.00123) == "1.23 ms"


def test_the_per_seed_figure_splits_into_panels_past_eight_mixers(report):
    """A track of 18 mixers (the run's comparisons copied under new names): three panels of six,
    one above the other on one y scale, every mixer named once; a track of four: one panel."""
    from benchsuite.output.plots import seeds_figure

    track, entry = next(iter(report.tracks.items()))
    small = seeds_figure(track, entry)
    assert len(small.axes) == 1
    many = copy.deepcopy(entry)
    first = next(iter(entry.comparisons))
    for i in range(18 - len(entry.ordered())):
        many.comparisons[f"copy{i}"] = entry.comparisons[first]
        many.mixers[f"copy{i}"] = entry.mixers[first]
    fig = seeds_figure(track, many)
    names = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]
    assert [len(panel) for panel in names] == [6, 6, 6]
    assert sorted(itertools.chain(*names)) == sorted(many.ordered())
    assert len({ax.get_ylim() for ax in fig.axes}) == 1  # one y scale


def test_the_pages_suite_table_counts_the_tracks_whose_verdict_needs_more_seeds(report):
    """A suite-design run reaches no per-track verdict: the across-tracks table's won / lost /
    equivalent / inconclusive columns read 0 there, and the count beside them says on how many
    tracks the per-track verdict needs more seeds (it read 0/0/0/0 before)."""
    assert report.design.suite_claims()
    page = render_html(report, [])
    across = page[page.index("id=across") : page.index("id=costs")]
    assert "won/lost/equivalent/inconclusive/needs more seeds" in across
    cells = Page(across).cells
    for mixer, row in report.across_tracks.mixers.items():
        undecided = [
            t
            for t, entry in report.tracks.items()
            if mixer in entry.comparisons
            and entry.comparisons[mixer].comparison.verdict == "needs_more_seeds"
        ]
        assert len(undecided) == row.n_tracks == 2  # every track of this run
        counts = f"{row.tracks_won}/{row.tracks_lost}/{row.tracks_equivalent}/"
        counts += f"{row.tracks_inconclusive}/{len(undecided)}"
        assert counts == "0/0/0/0/2"
        assert cells[cells.index(mixer) + 8] == counts


def test_a_step_time_ratio_timed_by_different_runs_says_so(out, report):
    """Every record says which run trained (and timed) it: the one run of this folder timed every
    cell side by side, so no ratio is flagged. Where the baseline's jobs were timed by an earlier
    run (its records reused beside the mixer's trained now), every comparison on that track is
    flagged ``timings_from_different_runs`` with its reason, and the page's headline says so
    beside the step time ratio."""
    plan, results, failures = stored(out)
    runs = {r.environment.get("run") for r in results.values()}
    assert len(runs) == 1 and None not in runs  # this run's lease owner id
    flagged = "timings_from_different_runs"
    assert not any(
        flagged in c.comparison.flags
        for e in report.tracks.values()
        for c in e.comparisons.values()
    )
    assert "timings from different runs" not in render_html(report, [])
    baseline = plan.settings.baseline
    earlier = {
        key: dataclasses.replace(r, environment={**r.environment, "run": "host:1:earlier"})
        if (r.job.track, r.job.mixer) == ("sequence", baseline)
        else r
        for key, r in results.items()
    }
    changed = analyse(plan, earlier, failures)
    for track, entry in changed.tracks.items():
        for cell in entry.comparisons.values():
            assert (flagged in cell.comparison.flags) == (track == "sequence")
            if track == "sequence":
                assert "not side by side" in cell.flag_reasons[flagged]
    page = render_html(changed, [])
    assert page.count("× (timings from different runs)") == len(
        changed.tracks["sequence"].comparisons
    )
    # a record stored before runs were named: unknown, not flagged
    unnamed = {k: dataclasses.replace(r, environment={}) for k, r in earlier.items()}
    assert not any(
        flagged in c.comparison.flags
        for e in analyse(plan, unnamed, failures).tracks.values()
        for c in e.comparisons.values()
    )


def test_every_place_says_one_count_of_seeds_a_per_track_verdict_needs(report, tmp_path):
    """The design line, each track's caption and the page state the same figure for what a
    per-track verdict needs, the fewest seeds with which one can reach significance after Holm
    over the family (``min_seeds_for_significance``); where the per-track design's planned count
    (one discordant seed allowed) is given, it is called the planned count."""
    import io

    from rich.console import Console

    from benchsuite.output.progress import print_design
    from benchsuite.output.tables import print_report
    from benchsuite.plan.design import design_check
    from benchsuite.protocol.power import default_seeds, min_seeds_for_significance
    from benchsuite.registry.plugins import load_registry
    from benchsuite.settings import RunSettings

    family = report.design.comparisons
    least, planned = min_seeds_for_significance(family), default_seeds(family)
    assert report.design.suite_claims() and least != planned  # the two figures differ here
    console = Console(file=io.StringIO(), width=400)
    print_report(report, console)
    printed = " ".join(console.file.getvalue().split())
    assert f"per-track verdict: needs at least {least} seeds" in printed
    assert f"needs {planned} seeds" not in printed
    page = " ".join(render_html(report, []).split())
    assert f"per-track verdicts need at least {least} seeds" in page
    assert f"plans {planned}: one discordant seed allowed" in page
    settings = RunSettings(
        tracks=("sequence", "tabular"),
        mixers=("dense", "identity", "mlp"),
        out=str(tmp_path),
        seeds=8,
        design="suite",
    )
    design = design_check(settings, load_registry(None).tracks)
    console = Console(file=io.StringIO(), width=400)
    print_design(design, console)
    line = " ".join(console.file.getvalue().split())
    m = min_seeds_for_significance(4)
    assert m == 8  # Holm over 4 comparisons: 8 seeds can reach it, as 8-seed runs show
    assert (
        f"(Holm over 4 comparisons) need at least {m} seeds (the per-track design plans 12" in line
    )
