"""Each flag fires exactly when its documented threshold (docs/results.md) is crossed, the page
lists every raised flag with its reason, and the terminal tables and the page's head name the
scale (preset, width, depth, budget) that produced the results.

The unit tests take the rules on their own; the rest read the real tiny run of test_html.py.
"""

from __future__ import annotations

import dataclasses
import io
import re
from types import SimpleNamespace as NS  # plain records with the fields reasons() reads

import pytest
from helpers import Page
from rich.console import Console

from benchsuite import Budget, api
from benchsuite.measures import Costs
from benchsuite.output.html import render_html
from benchsuite.output.tables import print_report
from benchsuite.protocol.stats import PARAM_TOLERANCE
from benchsuite.results import flags, summaries
from benchsuite.results.cells import selection
from benchsuite.results.comparison import comparison_size
from benchsuite.results.schema import Analysis

LR = [{"lr": v} for v in (0.001, 0.003, 0.01, 0.03, 0.1)]


@pytest.mark.parametrize(
    ("ratio", "raised"),
    [
        (1.0, False),
        (1.10, False),
        (1.1001, True),
        (0.9, False),
        (0.8999, True),
        (2.99, True),
        (None, False),
    ],
)
def test_param_mismatch_outside_ten_percent(ratio, raised):
    assert flags.param_mismatch(ratio) is raised


def test_param_ratio_needs_both_counts():
    def ratio(mixer, base):
        return comparison_size(None, Costs(params=base), Costs(params=mixer)).params_ratio

    assert ratio(150, 100) == 1.5
    assert ratio(None, 100) is None
    assert ratio(150, 0) is None


@pytest.mark.parametrize(
    ("chosen", "steps", "raised"),
    [
        ([2, 2, 2, 2], 0.0, False),
        ([1, 2, 2, 3], 0.5, False),
        ([1, 1, 2, 3], 1.25, False),
        ([1, 1, 3, 3], 2.0, True),
        ([0, 0, 4, 4], 4.0, True),
        ([0, 2, 2, 2, 2, 2, 2, 4], 0.0, False),
    ],  # two outliers: the middle half agrees
)
def test_indecisive_from_the_spread_of_choices(chosen, steps, raised):
    spread, axis = flags.selection_spread(LR, chosen)
    assert spread == pytest.approx(steps)
    assert axis == ("lr" if steps else None)
    assert flags.indecisive(spread) is raised


def test_spread_takes_the_widest_numeric_axis_and_skips_categorical_ones():
    grid = [
        {"lr": lr, "wd": wd, "opt": o}
        for lr in (0.01, 0.1)
        for wd in (0.0, 0.1, 0.2)
        for o in ("adam", "sgd")
    ]
    far = [i for i, c in enumerate(grid) if c["lr"] == 0.01 and c["wd"] in (0.0, 0.2)]
    assert flags.selection_spread(grid, far * 2) == (2.0, "wd")
    assert flags.selection_spread([{"opt": "adam"}, {"opt": "sgd"}], [0, 1, 0, 1]) == (0.0, None)


def test_selection_does_not_call_a_cell_at_chance_indecisive():
    chosen = dict(enumerate([0, 0, 4, 4]))
    assert selection(LR, chosen, {}, "acc").indecisive
    assert not selection(LR, chosen, {}, "acc", chance=True).indecisive


def test_every_raised_flag_gets_its_reason_with_its_figure():
    raised = [
        "unstable",
        "param_mismatch",
        "indecisive_selection",
        "baseline_undertrained",
        "no_better_than_trivial",
    ]
    cell = NS(
        comparison=NS(n=4, flags=raised),
        param_ratio=0.34,
        divergence=NS(mixer_reasons={"non_finite": 2}, mixer_not_learned=1),
    )
    arm = NS(
        best_cfg={"lr": 0.1}, selection=NS(spread=NS(steps=2.5, axis="lr")), learning_curve=None
    )
    base = NS(best_cfg={"lr": 0.01}, learning_curve=NS(tail_drop=0.253, tail_share=0.08))
    reasons = flags.reasons(cell, arm, base)
    assert list(reasons) == raised
    assert "2 of 4 seeds" in reasons["unstable"]
    assert "0.34×" in reasons["param_mismatch"]
    assert "2.5 grid steps of lr" in reasons["indecisive_selection"]
    assert "25.3%" in reasons["baseline_undertrained"]
    assert reasons["no_better_than_trivial"].startswith("1 of 4 seeds learnt nothing")


def test_scale_note_names_preset_width_depth_and_budget():
    budget = Budget(steps=150, batch_size=8, dim=16, depth=2, grid=())
    quick = summaries.scale_note("quick", budget)
    assert quick.startswith("quick preset: dim 16, depth 2, 150 steps × batch 8")
    assert "small scale" in quick
    assert "small scale" not in summaries.scale_note("full", budget)
    ruled = dataclasses.replace(  # the steps: a cap
        budget, steps=4000, eval_every=10, patience=4, schedule="plateau"
    )
    assert "at most 4000 steps × batch 8, plateau schedule" in summaries.scale_note("quick", ruled)
    # the page head's sentence over every track says the same (it said "4000 steps" before)
    from types import SimpleNamespace

    head = summaries.scale_summary(
        "quick", {"dynamics": SimpleNamespace(facts=SimpleNamespace(budget=ruled))}
    ).note
    assert "dynamics: dim 16, depth 2, at most 4000 steps × batch 8, plateau schedule" in head


# ----------------------------------------------------------------------- the real tiny run


@pytest.fixture(scope="module")
def report(finished_run) -> Analysis:
    return api.report(finished_run, write=False)


def _cells(report: Analysis):
    for track, entry in report.tracks.items():
        for mixer, cell in entry.comparisons.items():
            yield track, entry, mixer, cell


def test_flags_of_a_real_run_follow_their_thresholds(report):
    seen = set()
    for _track, entry, mixer, cell in _cells(report):
        raised = cell.comparison.flags
        arm, base = entry.mixers[mixer], entry.mixers[entry.baseline]
        ratio = arm.costs.params / base.costs.params
        assert cell.param_ratio == pytest.approx(ratio)
        assert ("param_mismatch" in raised) is (abs(ratio - 1) > PARAM_TOLERANCE)
        chose = arm.selection
        wide = chose.spread.steps >= flags.INDECISIVE_STEPS
        assert ("indecisive_selection" in raised) is (wide and not chose.at_chance)
        assert ("undertrained" in raised) is arm.undertrained
        assert list(cell.flag_reasons) == raised and all(cell.flag_reasons.values())
        seen.update(raised)
    assert "param_mismatch" in seen  # the run's mixers differ in size: the rule was exercised


def test_page_lists_each_flag_with_its_reason_and_the_scale_in_its_head(report):
    text = render_html(report, [])
    page = Page(text)
    for _track, _entry, mixer, cell in _cells(report):
        for flag, reason in cell.flag_reasons.items():
            assert re.search(
                rf"<td>{re.escape(mixer)}</td><td>{flag}</td><td>{re.escape(reason)}</td>",
                text.replace("&#39;", "'"),
            ), (mixer, flag)
            assert ("span", "title", reason) in page.attributes
    head = text[text.index("<h1>") : text.index("<nav>")]
    budget = report.tracks["sequence"].facts.budget
    assert f"dim {budget.dim}, depth {budget.depth}" in head
    assert f"{budget.steps} steps × batch {budget.batch_size}" in head
    assert budget.steps == 30 and "quick preset" in head


def test_terminal_tables_name_the_scale(report):
    console = Console(file=io.StringIO(), width=80)
    print_report(report, console)
    printed = " ".join(console.file.getvalue().split())
    for entry in report.tracks.values():
        assert entry.scale_note in printed
        assert "30 steps" in entry.scale_note


def test_learnt_nothing_says_so_where_the_scores_are_identitys(report):
    """A comparison flagged ``no_better_than_trivial`` whose mixer scores as the ``identity``
    control does on every seed says it passes nothing between tokens, on the page (its reason)
    and in the terminal's flags column; the other rows of the track do not, and one seed apart
    is not "every seed"."""
    changed = dataclasses.replace(report, tracks=dict(report.tracks))
    track, entry, mixer, cell = next(
        c for c in _cells(report) if "no_better_than_trivial" not in c[3].comparison.flags
    )
    arm = entry.mixers[mixer]
    flagged = dataclasses.replace(
        cell,
        comparison=dataclasses.replace(
            cell.comparison, flags=[*cell.comparison.flags, "no_better_than_trivial"]
        ),
        flag_reasons={**cell.flag_reasons, "no_better_than_trivial": "2 of 3 seeds learnt nothing"},
    )
    changed.tracks[track] = dataclasses.replace(
        entry,
        mixers={**entry.mixers, flags.IDENTITY: dataclasses.replace(arm)},
        comparisons={**entry.comparisons, mixer: flagged},
    )
    shown = flags.track_reasons(changed.tracks[track], mixer)["no_better_than_trivial"]
    assert shown == f"2 of 3 seeds learnt nothing ({flags.IDENTITY_HINT})"
    page = render_html(changed, []).replace("&#39;", "'")
    assert f"<td>{mixer}</td><td>no_better_than_trivial</td><td>{shown}</td>" in page
    assert page.count(flags.IDENTITY_HINT) == 2  # the flag table's reason and the cell's title
    console = Console(file=io.StringIO(), width=300)
    print_report(changed, console)
    printed = console.file.getvalue()
    assert printed.count("scores = identity's: nothing passes between tokens") == 1
    # one seed apart: not the same scores
    other = dataclasses.replace(arm, full=dataclasses.replace(arm.full, raw=None))
    other.full.per_seed = [*arm.full.per_seed[:-1], arm.full.per_seed[-1] + 0.01]
    assert not flags.same_as_identity(arm, other)
    assert flags.same_as_identity(arm, dataclasses.replace(arm))
    assert not flags.same_as_identity(arm, None)
