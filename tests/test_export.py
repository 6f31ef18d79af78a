"""``benchsuite export``: one row per training run of a real store, loaded back with pandas."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_html import finished_run

from benchsuite import UsageError, api, cli
from benchsuite.commands.export import export, export_rows

pd = pytest.importorskip("pandas")
READERS = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory)


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
    assert count == len(frame) == len(stored) == 36  # 2 tracks x 3 mixers x (3 sweep + 3 eval)
    assert frame["key"].is_unique and set(frame["key"]) == set(stored)
    assert set(frame["status"]) == {"ok"}
    for name in ("track", "mixer", "stage", "config_index", "config.lr", "config.weight_decay",
                 "seed", "preset", "diverged", "metric.val.mse", "cost.params", "seconds",
                 "budget.steps", "track_option.series", "mixer_option.heads"):  # fmt: skip
        assert name in frame.columns, name
    for row in frame.to_dict("records"):
        record = stored[row["key"]]
        assert (row["track"], row["mixer"], row["stage"], row["seed"]) == tuple(
            record["job"][k] for k in ("track", "mixer", "stage", "seed")
        )
        assert row["config.lr"] == record["job"]["config"]["lr"]
        assert row["metric.val.mse"] == pytest.approx(record["metrics"]["val.mse"])
        assert bool(row["diverged"]) == record["diverged"]
    evaluation = frame[frame["stage"] == "eval"]
    assert evaluation["metric.test.mse"].notna().all()
    assert frame.loc[frame["stage"] == "sweep", "metric.test.mse"].isna().all()


def test_rows_match_the_report(out):
    """The test metric of the evaluation rows is the report's per-seed figure, seed by seed."""
    report = api.report(out)
    frame = pd.DataFrame(export_rows(out))
    for track, entry in report["tracks"].items():
        metric = f"metric.test.{entry['metric']}"
        for mixer, arm in entry["mixers"].items():
            rows = frame[(frame.track == track) & (frame.mixer == mixer) & (frame.stage == "eval")]
            assert set(rows["config_index"]) == {arm["best_index"]}
            values = rows.sort_values("seed")[metric].tolist()
            assert values == pytest.approx(arm["full"]["per_seed"])


def test_failures_only_when_asked(out, tmp_path):
    path, count = export(out, "csv", tmp_path / "all.csv", include_failures=True)
    frame = pd.read_csv(path)
    failed = frame[frame["status"] == "failed"]
    assert count == len(frame) == 36 + 6
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
    done = subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", "export", str(out), "--format", "csv",
         "--output", str(target)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(target)) == 36
