"""Issue 5 end to end: diverged runs, the design check, `compare` and `report` on real runs. The
slow tier trains its own runs (a mixer that diverges on some seeds, runs listed out of order, a
different budget); the fast tier reads the session's shared run."""

from __future__ import annotations

import copy
import io
import json

import pytest
from helpers import TINY, copy_run, invoke
from rich.console import Console

from benchsuite.commands.compare import compare_runs, load_run
from benchsuite.output.tables import compare_table
from benchsuite.results.analysis import analyse_store

FLAKY = """
from benchsuite import Mixer, hookimpl


def build(tokens, dim):
    import torch
    from torch import nn

    broken = bool(torch.rand(()) < 0.5)  # drawn from this seed's init stream for the mixer

    class Flaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.eye(tokens))

        def forward(self, x):
            y = torch.einsum("st,btd->bsd", self.weight, x)
            return y * float("nan") if broken else y

    return Flaky()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="flaky", build=build, description="diverges on about half the seeds"))
"""

# every seed of every cell (no futility look): the baseline's seeds are the same in every run
ARGS = ["run", "--tracks", "sequence", "--seeds", "6", "--no-futility", *TINY]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run with a diverging mixer, the same baseline without it, and a reference run."""
    root = tmp_path_factory.mktemp("stats")
    plugins = root / "plugins"
    plugins.mkdir()
    (plugins / "flaky.py").write_text(FLAKY)
    with_flaky = invoke(
        "--plugins-dir",
        str(plugins),
        *ARGS,
        "--mixers",
        "dense,flaky",
        "--out",
        str(root / "flaky"),
    )
    assert with_flaky.returncode == 0, with_flaky.stderr
    plain = invoke(*ARGS, "--mixers", "dense,identity", "--out", str(root / "plain"))
    assert plain.returncode == 0, plain.stderr
    return root, with_flaky


def _report(folder):
    return json.loads((folder / "report.json").read_text())


@pytest.mark.slow
def test_diverged_runs_are_counted_imputed_and_flagged(runs):
    root, _ = runs
    report = _report(root / "flaky")
    cell = report["tracks"]["sequence"]["comparisons"]["flaky"]
    diverged = cell["divergence"]["mixer"]["count"]
    assert 0 < diverged < 6
    cap = report["tracks"]["sequence"]["mixers"]["flaky"]
    assert cap["diverged"] == diverged
    # imputed label-blind with the track's cap (the trivial predictor's test MSE)
    imputed = [v for v in cell["mixer_values"] if v is not None]
    assert len(imputed) == 6
    assert sum(v >= 0.9 for v in imputed) >= diverged
    if diverged / 6 >= 0.25:
        assert "unstable" in cell["comparison"]["flags"]
    baseline = _report(root / "plain")["tracks"]["sequence"]["comparisons"]["identity"]
    assert cell["divergence"]["baseline"] == baseline["divergence"]["baseline"]
    lo, hi = cell["divergence"]["mixer"]["ci95"]
    assert lo <= diverged / 6 <= hi


@pytest.mark.slow
def test_baseline_numbers_do_not_depend_on_the_other_mixers(runs):
    root, _ = runs
    flaky = _report(root / "flaky")["tracks"]["sequence"]["mixers"]["dense"]["full"]["per_seed"]
    plain = _report(root / "plain")["tracks"]["sequence"]["mixers"]["dense"]["full"]["per_seed"]
    assert flaky == plain


@pytest.mark.slow
def test_design_warning_is_printed_before_training(runs):
    _, result = runs
    head = result.stdout[: result.stdout.index("sequence —")]  # the design, before the tables
    assert "6 paired seeds (as given), 1 comparisons (Holm needs at least 6 seeds" in head
    assert "  jobs: 12 to train of 12 planned" in head
    assert "sequence: planned MDE" not in head  # under -v only


def test_strict_refuses_an_underpowered_design(tmp_path):
    result = invoke(
        *ARGS, "--mixers", "dense,identity", "--seeds", "3", "--strict", "--out", str(tmp_path)
    )
    assert result.returncode == 2 and "(--strict)" in result.stderr
    said = "with 3 seeds no per-track verdict can reach significance after Holm over the 1"
    assert said in result.stderr
    assert not (tmp_path / "benchsuite.sqlite").exists()


def test_report_rebuilds_the_same_figures_from_the_store(finished_run, tmp_path):
    folder = tmp_path / "run"
    copy_run(finished_run, folder)
    before = _report(folder)
    (folder / "report.json").unlink()
    result = invoke("report", str(folder))
    assert result.returncode == 0, result.stderr
    assert "sequence —" in result.stdout
    assert _report(folder) == before


@pytest.mark.slow
def test_report_agrees_with_the_run_whatever_order_the_run_listed(tmp_path):
    """The saved plan lists tracks and mixers sorted; a run listed them as asked. The across-track
    bootstrap and sign flips draw in name order, so ``report`` rebuilds the run's figures."""
    result = invoke(
        "run",
        "--tracks",
        "sequence,dynamics",
        "--mixers",
        "dense,mlp,identity",
        "--seeds",
        "4",
        *TINY,
        "--grid",
        "dynamics.lr=0.01,0.03",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    before = _report(tmp_path)
    assert set(before["across_tracks"]["tracks"]) == {"sequence", "dynamics"}
    (tmp_path / "report.json").unlink()
    assert invoke("report", str(tmp_path)).returncode == 0
    assert _report(tmp_path)["across_tracks"] == before["across_tracks"]


@pytest.mark.slow
def test_compare_pairs_two_runs_and_refuses_different_budgets(runs, tmp_path):
    root, _ = runs
    # the runs share only the baseline, whose jobs are the very same in both: nothing to test
    same = invoke("compare", str(root / "plain"), str(root / "flaky"), "--json")
    assert same.returncode == 2 and same.stderr.count("\n") == 1
    assert "(the same jobs in both: sequence/dense)" in same.stderr

    other = invoke(
        *ARGS,
        "--mixers",
        "dense,identity",
        "--budget",
        "steps=31",
        "--out",
        str(tmp_path / "other"),
    )
    assert other.returncode == 0, other.stderr
    refused = invoke("compare", str(root / "plain"), str(tmp_path / "other"))
    assert refused.returncode == 2
    assert "budget signatures differ" in refused.stderr and refused.stderr.count("\n") == 1


def test_compare_analyses_a_log_ratio_track_as_run_does(finished_run):
    """Run B's dense seeds replaced by butterfly's: compare's dense row is then run's butterfly
    comparison (the same seeds, the same log-ratio scale and margin)."""
    report = analyse_store(finished_run / "benchsuite.sqlite")
    assert report.tracks["sequence"].facts.scale == "log"
    want = report.tracks["sequence"].comparisons["butterfly"].comparison
    a = load_run(finished_run)  # the stored per-seed values, no analysis of the whole run
    b = copy.deepcopy(a)
    b.tracks["sequence"].cells["dense"] = a.tracks["sequence"].cells["butterfly"]
    row = next(r for r in compare_runs(a, b).rows if r.mixer == "dense").comparison
    assert row.scale == "log" and row.margin == pytest.approx(want.margin)
    for key in ("improvement", "improvement_rel_pct", "p_value", "p_tost"):
        assert getattr(row, key) == pytest.approx(getattr(want, key)), key
    assert row.ci95 == pytest.approx(want.ci95)


def test_compare_shows_a_row_that_learnt_nothing_in_its_table(finished_run):
    """Run B's butterfly seeds at their trivial predictors' scores: the row is flagged
    ``no_better_than_trivial`` and the table says so, in the wide and in the narrow layout
    (issue 50: only --json had it)."""
    a = load_run(finished_run)
    b = copy.deepcopy(a)
    cell = b.tracks["sequence"].cells["butterfly"]
    cell.not_learned.update(dict.fromkeys(cell.not_learned, True))
    cell.jobs.update({seed: f"{key}-b" for seed, key in cell.jobs.items()})  # other jobs than A's
    (row,) = [r for r in compare_runs(a, b).rows if r.mixer == "butterfly"]
    assert "no_better_than_trivial" in row.comparison.flags
    flagged = sum("no_better_than_trivial" in r.comparison.flags for r in compare_runs(a, b).rows)
    for width in (220, 90):
        console = Console(file=io.StringIO(), width=width)
        console.print(compare_table(compare_runs(a, b)))
        assert console.file.getvalue().count("no_better") == flagged


def test_compare_of_runs_that_differ_in_one_mixer_tests_that_mixer_alone(tmp_path):
    """Runs A and B differ only in attention's heads: dense and identity train the very same jobs
    in both (reused, identical results), so compare leaves them out of Holm's family and says
    so; attention's row then has the Holm p and verdict of comparing attention alone."""
    common = ["--tracks", "sequence", "--mixers", "dense,identity,attention", "--seeds", "3"]
    runs = {}
    for name, heads in (("a", 4), ("b", 2)):
        runs[name] = tmp_path / name
        done = invoke(
            "run",
            *common,
            *TINY,
            "--mixer-option",
            f"attention.heads={heads}",
            "--executor",
            "local",
            "--no-config",
            "--out",
            str(runs[name]),
            *(["-q"] if heads == 4 else []),
        )
        assert done.returncode == 0, done.stderr
    # B's design block and its page say the option it set (A's are the defaults)
    assert "mixer options not at their defaults (-v: every one): attention: heads=2" in (
        " ".join(done.stdout.split())
    )
    page = (runs["b"] / "report.html").read_text()
    assert "<td>mixer options</td><td>dense: init_scale=1.0; attention: heads=2</td>" in page
    a, b = load_run(runs["a"]), load_run(runs["b"])
    both = compare_runs(a, b)
    assert [row.mixer for row in both.rows] == ["attention"]
    assert both.unchanged == ["sequence/dense", "sequence/identity"]
    alone = compare_runs(a, b, mixers=["attention"]).rows[0].comparison
    row = both.rows[0].comparison
    assert (row.p_holm, row.verdict, row.family) == (alone.p_holm, alone.verdict, 1)
    shown = invoke("compare", str(runs["a"]), str(runs["b"]))
    text = " ".join(shown.stdout.split())
    assert "Holm over the 1 rows whose jobs differ between the runs" in text
    assert "the same jobs in both: sequence/dense, sequence/identity" in text
