"""``benchsuite export``: one row per training run of a real store, loaded back with pandas."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke

from benchsuite import UsageError, api, cli
from benchsuite.commands.export import export, export_rows

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors

pd = pytest.importorskip("pandas")
READERS = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}


@pytest.fixture(scope="module")
def out(finished_run) -> Path:
    return finished_run


@pytest.fixture(scope="module")
def stored(out) -> dict[str, dict]:
    """Every result record in the store, by key, read with sqlite3 directly."""
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        rows = db.execute("SELECT key, record FROM results").fetchall()
    return {key: json.loads(text) for key, text in rows}


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_one_row_per_training_run(out, stored, fmt, tmp_path):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    path, count = export(out, fmt, tmp_path / "sub" / f"runs.{fmt}")
    frame = READERS[fmt](path, dtype={"key": str}) if fmt == "csv" else READERS[fmt](path)
    # 2 tracks x 3 mixers x 3 seeds, each job training its 2 grid points
    assert count == len(frame) == 2 * len(stored) == 36
    assert set(frame["key"]) == set(stored) and not frame.duplicated(["key", "config_index"]).any()
    assert set(frame["status"]) == {"ok"}
    for name in (
        "track",
        "mixer",
        "seed",
        "config_index",
        "chosen",
        "config.lr",
        "config.weight_decay",
        "preset",
        "diverged",
        "metric.val.mse",
        "cost.params",
        "seconds",
        "budget.steps",
        "track_option.series",
        "mixer_option.heads",
        "curve",
    ):
        assert name in frame.columns, name
    for row in frame.to_dict("records"):
        record = stored[row["key"]]
        run = record["sweep"][row["config_index"]]
        assert (row["track"], row["mixer"], row["seed"]) == tuple(
            record["job"][k] for k in ("track", "mixer", "seed")
        )
        assert row["config.lr"] == run["config"]["lr"]
        assert row["metric.val.mse"] == pytest.approx(run["metrics"]["val.mse"])
        assert bool(row["chosen"]) == (row["config_index"] == record["chosen"])
        # a list in JSON, JSON text in CSV and Parquet (a table cell holds one value)
        curve = row["curve"] if fmt == "json" else json.loads(row["curve"])
        assert curve == pytest.approx(run["curve"]) and 0 < len(curve) <= 64
    chosen = frame[frame["chosen"].astype(bool)]
    assert len(chosen) == len(stored) and chosen["metric.test.mse"].notna().all()
    assert frame.loc[~frame["chosen"].astype(bool), "metric.test.mse"].isna().all()


def test_rows_match_the_report(out):
    """The test metric of the chosen rows is the report's per-seed figure, seed by seed."""
    report = api.report(out, write=False).to_dict()
    frame = pd.DataFrame(export_rows(out))
    for track, entry in report["tracks"].items():
        metric = f"metric.test.{entry['metric']}"
        for mixer, arm in entry["mixers"].items():
            rows = frame[(frame.track == track) & (frame.mixer == mixer) & frame.chosen]
            chosen = {int(seed): index for seed, index in arm["selection"]["chosen"].items()}
            assert dict(zip(rows["seed"], rows["config_index"], strict=True)) == chosen
            values = rows.sort_values("seed")[metric].tolist()
            assert values == pytest.approx(arm["full"]["raw"]["per_seed"])


def test_curves_give_the_report_learning_curves(out):
    """The report's learning curve of a cell is the median of its chosen rows' exported curves."""
    report = api.report(out, write=False).to_dict()
    frame = pd.DataFrame(export_rows(out))
    chosen = frame[frame["chosen"].astype(bool)]
    for track, entry in report["tracks"].items():
        for mixer, arm in entry["mixers"].items():
            rows = chosen[(chosen.track == track) & (chosen.mixer == mixer)].sort_values("seed")
            curves = np.array(rows["curve"].tolist())  # the rows hold the lists themselves
            assert curves.shape == (3, entry["budget"]["steps"])  # 3 seeds, 30 steps: 30 points
            median = arm["learning_curve"]["median"]
            assert median == pytest.approx(np.median(curves, axis=0), rel=1e-5)


def test_failures_only_when_asked(out, tmp_path):
    path, count = export(out, "csv", tmp_path / "all.csv", include_failures=True)
    frame = pd.read_csv(path)
    failed = frame[frame["status"] == "failed"]
    assert count == len(frame) == 36 + 6  # one row per failed job (2 tracks x 3 seeds)
    assert set(failed["mixer"]) == {"broken"}
    assert failed["error"].str.contains("fails to train on purpose").all()
    assert failed["metric.val.mse"].isna().all()


def test_default_path_and_errors(out, tmp_path):
    path, _ = export(out, "json")
    assert path == out / "results.json"
    assert json.loads(path.read_text())[0]["status"] == "ok"
    with pytest.raises(UsageError, match="valid: csv, parquet, json"):
        export(out, "xlsx")
    with pytest.raises(UsageError, match="no benchsuite store"):
        export(tmp_path / "nothing-here", "csv")


@pytest.mark.skipif("export" not in cli.COMMANDS, reason="`benchsuite export` not wired yet")
def test_cli(out, tmp_path):
    target = tmp_path / "runs.csv"
    done = invoke("export", str(out), "--format", "csv", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(target)) == 36
