"""The whole path end to end on the sequence track: JSON files, mechanism signature, resume,
determinism, and one-line errors for names that do not exist."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

import pytest
from helpers import TINY, invoke

from benchsuite.protocol.power import dz_star

BENCH_KEYS = {
    "bench_version",
    "track",
    "model",
    "metric_direction",
    "n_seeds",
    "baseline",
    "idea",
    "comparison",
    "mechanism_signature",
    "budget_signature",
    "versions",
}
COMPARISON_KEYS = {
    "delta_mean",
    "idea_wins",
    "n_pairs",
    "per_seed_diffs",
    "p_value",
    "mde",
    "verdict",
    "ci95",
    "p_holm",
    "flags",
}
SIGNATURE_KEYS = {
    "prediction",
    "predicted_norm_ratio",
    "observed_norm_ratio_seed0",
    "observed_inverse_max_error_seed0",
    "baseline_observed_norm_ratio_seed0",
    "confirmed",
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One real run of dense vs butterfly on the sequence track with 8 paired seeds."""
    out = tmp_path_factory.mktemp("run") / "out"
    args = [
        "run",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,butterfly",
        "--seeds",
        "8",
        "--out",
        str(out),
        *TINY,
    ]
    first = invoke(*args)
    assert first.returncode == 0, first.stderr
    return out, args, first


def test_bench_report_files_have_the_prototype_keys(finished):
    out, _, _ = finished
    report = json.loads((out / "sequence" / "butterfly.json").read_text())
    assert set(report) >= BENCH_KEYS
    assert set(report["comparison"]) >= COMPARISON_KEYS
    assert {"best_cfg", "sweep", "full"} <= set(report["baseline"])
    assert report["n_seeds"] == 8 and report["baseline"]["full"]["n"] == 8
    assert len(report["comparison"]["per_seed_diffs"]) == 8
    assert report["metric_direction"] == "lower is better"
    whole = json.loads((out / "report.json").read_text())
    assert whole["tracks"]["sequence"]["dataset"].startswith("synthetic seasonal")


def test_butterfly_preserves_norm_and_dense_does_not(finished):
    out, _, _ = finished
    signature = json.loads((out / "sequence" / "butterfly.json").read_text())["mechanism_signature"]
    assert set(signature) >= SIGNATURE_KEYS
    assert signature["observed_norm_ratio_seed0"] == pytest.approx(1.0, abs=1e-5)
    assert signature["observed_inverse_max_error_seed0"] < 1e-5
    assert abs(signature["baseline_observed_norm_ratio_seed0"] - 1.0) > 1e-2
    assert signature["confirmed"] is True


def test_store_has_one_row_per_tuned_job(finished):
    out, _, _ = finished
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        rows = [json.loads(text) for (text,) in db.execute("SELECT record FROM results")]
    # 2 mixers x 8 evaluation seeds, each tuning over the 2 grid points on its validation split
    assert len(rows) == 16
    for record in rows:
        assert [row["config"]["lr"] for row in record["sweep"]] == [0.01, 0.03]
        scores = [row["metrics"]["val.mse"] for row in record["sweep"]]
        assert record["chosen"] == scores.index(min(scores))  # chosen on validation only
        assert record["metrics"]["val.mse"] == min(scores) and "test.mse" in record["metrics"]


def run_cli_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def _tables(stdout: str) -> str:
    return stdout[stdout.index("sequence —") : stdout.index("jobs:")]


def test_rerun_trains_nothing_and_prints_the_same_tables(finished):
    _out, args, first = finished
    again = invoke(*args)
    assert again.returncode == 0, again.stderr
    assert re.search(r"jobs: 0 trained, 16 reused, 0 failed", again.stdout)
    assert _tables(again.stdout) == _tables(first.stdout)


def test_a_rerun_with_every_job_stored_reuses_the_plan_without_torch(finished):
    """Nothing to train: the folder's last plan is reused (same recipe), so no data is probed,
    no model built to size it, no reference step timed, no statistics recomputed (the design
    check's power is remembered in the cache folder). A fresh interpreter is the subject: what
    it imports."""
    _out, args, _ = finished
    dz_star.cache_clear()  # this process's memo: the design's power goes to this test's cache
    assert invoke(*args).returncode == 0
    code = (
        "import contextlib, io, json, sys\n"
        "import benchsuite.cli as cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        cli.main({args!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ('torch', 'sklearn', 'scipy.stats', 'statsmodels')\n"
        "print(json.dumps([out.getvalue(), sorted(m for m in heavy if m in sys.modules)]))\n"
    )
    done = run_cli_python(code)
    printed, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert "jobs: 0 trained, 16 reused, 0 failed" in printed
    assert imported == []


def test_same_command_twice_gives_bit_identical_metrics(finished, tmp_path):
    out, args, _ = finished
    other = tmp_path / "again"
    rerun = invoke(*[str(other) if a == str(out) else a for a in args])
    assert rerun.returncode == 0, rerun.stderr
    for name in ("butterfly",):
        a = json.loads((out / "sequence" / f"{name}.json").read_text())
        b = json.loads((other / "sequence" / f"{name}.json").read_text())
        assert a["idea"]["per_seed"] == b["idea"]["per_seed"]
        assert a["baseline"]["full"]["per_seed"] == b["baseline"]["full"]["per_seed"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tracks", "sequense"], "unknown track 'sequense' (did you mean 'sequence'?)"),
        (["--mixers", "dense,butterfli"], "unknown mixer 'butterfli' (did you mean 'butterfly'?)"),
        (["--mixers", "dense,butterfly,butterfly"], "mixer 'butterfly' is named twice"),
        (["--track-option", "sequence.lookbak=8"], "unknown option sequence.lookbak"),
        (["--seeds", "1"], "--seeds must be at least 2"),
    ],
)
def test_bad_names_give_one_line_errors(tmp_path, args, needle):
    result = invoke("run", "--out", str(tmp_path / "out"), *args)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert needle in result.stderr
