"""Bad input and hostile conditions, as a user meets them: one line, the right exit code, and
every result stored before still intact."""

from __future__ import annotations

import json
import pickle
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from helpers import TINY, copy_run, invoke

from benchsuite.store.store import SCHEMA_VERSION

BASE = ["run", "--tracks", "sequence", "--seeds", "2", "--executor", "local", *TINY]

BAD_MIXERS = """
from benchsuite import Mixer, hookimpl


def _module(make):
    def build(tokens, dim):
        import torch

        class Bad(torch.nn.Module):
            def forward(self, x):
                return make(torch, x)

        return Bad()

    return build


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="wrongshape", build=_module(lambda t, x: x[:, :-1])))
    register(Mixer(name="wrongdtype", build=_module(lambda t, x: x.double())))
    register(Mixer(name="batchchanger", build=_module(lambda t, x: x[:1])))
"""


def stored_rows(out) -> list[tuple]:
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        return db.execute("SELECT key, record FROM results ORDER BY key").fetchall()


@pytest.fixture
def finished(tmp_path_factory):
    """A finished tiny run whose store every test checks afterwards (a fresh copy per test)."""
    template = tmp_path_factory.getbasetemp() / "errors-template"
    if not template.exists():
        done = invoke(*BASE, "--mixers", "dense,identity", "--out", str(template))
        assert done.returncode == 0, done.stderr
    out = tmp_path_factory.mktemp("errors") / "out"
    shutil.copytree(template, out)
    return out, stored_rows(out)


def one_line(result, code: int, needle: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert needle in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[run]\nseeds = 3\n[budget\n", "TOML syntax error"),
        ("[run]\nseeds = 'eight'\n", "run.seeds must be a whole number"),
        ("[run]\nseedz = 8\n", "unknown key run.seedz"),
        ("[runn]\n", "unknown section [runn]"),
        ("seeds = 3\n[run]\n", "seeds is a run setting: put it under [run]"),
        ("[tracks.sequence]\nlookbak = 4\n", "unknown option sequence.lookbak"),
        ("[tracks.sequence]\nlookback = 'long'\n", "option sequence.lookback: expected int"),
        ("[budget]\nbatch_size = -3\n", "bench.toml: budget batch_size: must be at least 1"),
        ("[budget]\nsteps = 'many'\n", "bench.toml: budget steps: expected a whole number"),
        ("[budget]\nstepz = 3\n", "bench.toml: unknown budget key 'stepz' (did you mean"),
    ],
)
def test_config_file_mistakes(finished, tmp_path, text, needle):
    out, before = finished
    config = tmp_path / "bench.toml"
    config.write_text(text)
    result = invoke(*BASE, "--config", str(config), "--out", str(out))
    one_line(result, 2, needle)
    if "syntax" in needle:
        assert "line 3, column" in result.stderr
    assert stored_rows(out) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--mixers", "dense,atention"], "did you mean 'attention'?"),
        (["--mixers", "dense,identity,dense"], "mixer 'dense' is named twice"),
        (
            ["--mixer-option", "attention.head=2", "--mixers", "dense,attention"],
            "unknown option attention.head (did you mean 'heads'?)",
        ),
        (["--seeds", "-4"], "--seeds must be at least 2"),
        (["--grid", "sequence.lr=0,0.1"], "--grid sequence.lr: values must be > 0"),
        (["--grid", "sequence.momentum=0.9"], "--grid sequence.momentum: unknown axis"),
        (["--grid", "sequense.lr=0.1"], "--grid given for unknown track 'sequense'"),
        (["--grid", "sequence.lr=fast"], "--grid 'sequence.lr=fast': expected TRACK.AXIS=V1,V2"),
        (["--budget", "stepz=3"], "unknown budget key 'stepz' (did you mean 'steps'?)"),
        (["--preset", "huge"], "has no preset 'huge'"),
        (["--executor", "slurm"], "unknown executor 'slurm'; valid: local, process, ray"),
        (["--timeout", "-1"], "--timeout must be a positive number of seconds"),
        (["--preflight-timeout", "0"], "--preflight-timeout must be a positive number"),
        (["--seeds", "abc"], "benchsuite run: argument --seeds: invalid int value: 'abc'"),
        (["--seedz", "4"], "unrecognized arguments: --seedz 4"),
    ],
)
def test_command_line_mistakes(finished, args, needle):
    out, before = finished
    one_line(invoke(*BASE, "--mixers", "dense,identity", *args, "--out", str(out)), 2, needle)
    assert stored_rows(out) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["--mixers", "dense,attention[heads=3]"],
            "mixer 'attention[heads=3]' cannot take track 'sequence' (width 16, depth 2): "
            "mixer attention: dim 16 is not divisible by heads=3",
        ),
        (
            ["--mixers", "dense,gla", "--budget", "dim=12"],
            "mixer 'gla' cannot take track 'sequence' (width 12, depth 2): "
            "mixer gla: key width 6 is not divisible by heads=4",
        ),
    ],
)
def test_a_width_a_mixer_refuses_stops_the_run_at_planning(finished, args, needle):
    """Bad input (issue 49): the pre-flight finds that the mixer refuses the track's width with
    its options, and the run stops there in one line naming the mixer, the option and its value;
    nothing trains and nothing stored changes."""
    out, before = finished
    result = invoke(*BASE, "--mixers", "dense,identity", *args, "--out", str(out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("planning: ") and len(lines) == 2, lines
    assert lines[1] == f"error: {needle}"
    assert "Traceback" not in result.stderr + result.stdout and "train" not in result.stdout
    assert stored_rows(out) == before


def test_broken_mixers_fail_the_pre_flight_together_before_any_training(finished, tmp_path):
    """Mixers that break the contract on a track (a wrong shape, dtype or batch size) fail the
    pre-flight before the first job: every failing pair in one warning, each cell skipped with its
    reason, and the rest of the run goes on. (A mixer whose options the track's width refuses,
    e.g. attention with 3 heads at width 16, stops the run at planning instead: bad input.)"""
    out, before = finished
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "bad.py").write_text(BAD_MIXERS)
    mixers = "dense,identity,wrongshape,wrongdtype,batchchanger"
    result = invoke("--plugins-dir", str(plugins), *BASE, "--out", str(out), "--mixers", mixers)
    assert result.returncode == 1, result.stderr
    stderr = " ".join(result.stderr.split())  # the terminal folds the warning's long line
    assert stderr.count("pre-flight:") == 1  # one warning names every pair
    warning = stderr[stderr.index("pre-flight:") :]
    assert "3 mixer × track pair(s) fail before training" in warning
    for needle in (
        "returned shape (3, 15, 16) for input (3, 16, 16)",
        "returned torch.float64 for torch.float32 input",
        "changed the batch size from 3 to 1",
        "plugin 'bad'",
    ):
        assert needle in warning, needle
    assert stderr.index("pre-flight:") < stderr.index("train")  # before any job
    # the family's note says why, with the design on standard output (docs/troubleshooting.md)
    assert "batchchanger failed before training)" in " ".join(result.stdout.split())
    skipped = json.loads((out / "report.json").read_text())["skipped"]
    assert {(s["mixer"], s["kind"]) for s in skipped} >= {
        ("wrongshape", "pre-flight"),
        ("wrongdtype", "pre-flight"),
        ("batchchanger", "pre-flight"),
    }
    assert "jobs: 0 trained, 4 reused, 0 failed" in result.stdout  # no job of theirs ran
    assert stored_rows(out) == before


SLEEPER = """
import time

from benchsuite import Mixer, hookimpl


def build(tokens, dim):
    time.sleep(3600)


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="sleeper", build=build))
"""


@pytest.mark.parametrize("executor", ["process", "local"])
def test_a_mixer_whose_build_hangs_is_skipped_at_the_pre_flight_limit(tmp_path, executor):
    """A plugin whose ``build`` never returns costs the run the pre-flight's limit: the pair is
    skipped with one line naming the mixer and the limit, the other mixers train. With the
    process executor the hung worker is killed and replaced; with local its thread is left."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "sleeper.py").write_text(SLEEPER)
    out = tmp_path / "out"
    args = [*BASE, "--executor", executor, "--mixers", "dense,identity,sleeper"]
    result = invoke(
        "--plugins-dir", str(plugins), *args, "--preflight-timeout", "2", "--out", str(out)
    )
    assert result.returncode == 1, result.stderr  # a skipped error cell fails the run's exit
    stderr = " ".join(result.stderr.split())
    assert stderr.count("pre-flight:") == 1
    assert (
        "sequence/sleeper: mixer 'sleeper': build, forward and backward did not finish within "
        "2 s (--preflight-timeout)"
    ) in stderr
    assert ("its thread keeps running" in stderr) == (executor == "local")
    assert "jobs: 4 trained, 0 reused, 0 failed" in result.stdout
    skipped = json.loads((out / "report.json").read_text())["skipped"]
    assert [(s["mixer"], s["kind"]) for s in skipped] == [("sleeper", "pre-flight")]


@pytest.mark.parametrize("quiet", [True, False])
def test_a_pre_flight_that_leaves_nothing_to_compare_trains_nothing(tmp_path, quiet):
    """The only mixer besides the baseline fails the pre-flight: nothing is trained (not even
    the baseline), and the error line says why the exit code is 1, naming the cell and its
    reason. Under -q it is the one line printed (issue 50: it pointed at warnings -q had not
    printed); without -q no warning before it says "the rest runs" (issue 50: "(the rest runs)"
    was followed by "nothing was trained")."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "bad.py").write_text(BAD_MIXERS)
    out = tmp_path / "out"
    args = ["--plugins-dir", str(plugins), *BASE, "--mixers", "dense,wrongshape"]
    result = invoke(*args, *(["-q"] if quiet else []), "--out", str(out))
    assert result.returncode == 1
    said = result.stdout + result.stderr
    assert "the rest runs" not in said and "warning: pre-flight" not in said
    error = result.stderr.splitlines()[-1]
    assert error.startswith(
        "error: nothing to compare with the baseline (1 cell(s) failed before training: "
        "sequence/wrongshape: mixer 'wrongshape'"
    )
    assert error.endswith("; nothing was trained")
    if quiet:  # the only line
        assert result.stdout == "" and result.stderr.count("\n") == 1
    else:  # the design block said what was planned; nothing says what -q would hide
        assert result.stdout.startswith("design: ")
    assert stored_rows(out) == []


def write_cifar(folder, corrupt: str | None = None) -> None:
    """A folder in the CIFAR-10 python layout (tiny batches: not the published files)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        batch = {
            "data": rng.integers(0, 255, (20, 3072), dtype=np.uint8),
            "labels": rng.integers(0, 10, 20).tolist(),
        }
        (folder / name).write_bytes(pickle.dumps(batch))
    meta = {"label_names": [f"c{i}" for i in range(10)]}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta))
    if corrupt:
        (folder / corrupt).write_bytes(b"\x00garbage")


def test_corrupt_dataset_names_the_file_and_other_tracks_still_run(finished, tmp_path):
    out, before = finished
    data = tmp_path / "data"
    write_cifar(data / "cifar-10-batches-py", corrupt="data_batch_3")
    result = invoke(
        *BASE,
        "--tracks",
        "sequence,vision",
        "--mixers",
        "dense,identity",
        "--data-dir",
        str(data),
        "--track-option",
        "vision.verify=false",
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stderr
    assert "data_batch_3" in result.stdout
    assert "sequence —" in result.stdout  # the other track ran and printed its table
    assert stored_rows(out) == before


@pytest.mark.parametrize("kind", ["newer", "corrupt"])
def test_unusable_store_is_reported_and_never_overwritten(tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    store = out / "benchsuite.sqlite"
    if kind == "newer":
        with sqlite3.connect(store) as db:
            db.execute("PRAGMA user_version = 99")
        needle = "has schema 99, newer than this benchsuite's"
    else:
        store.write_bytes(b"this is not a database" * 100)
        needle = "not a usable benchsuite store"
    content = store.read_bytes()
    one_line(invoke(*BASE, "--mixers", "dense,identity", "--out", str(out)), 2, needle)
    assert store.read_bytes() == content
    one_line(invoke("report", str(out)), 2, needle)


def test_output_folder_that_cannot_be_written(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke(*BASE, "--mixers", "dense,identity", "--out", str(blocker / "out"))
    one_line(result, 2, f"store {blocker / 'out' / 'benchsuite.sqlite'}: cannot open")


def test_out_naming_a_file_is_one_line_and_the_file_is_untouched(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    one_line(
        invoke(*BASE, "--mixers", "dense,identity", "--out", str(blocker)),
        2,
        f"--out {blocker}: is a file, not a folder",
    )
    assert blocker.read_text() == "not a folder"


def test_a_mixer_whose_plugin_file_has_a_syntax_error_names_the_file_and_line(tmp_path):
    (tmp_path / "mymix.py").write_text("from benchsuite import hookimpl\n\ndef oops(:\n")
    done = invoke("--plugins-dir", str(tmp_path), *BASE, "--mixers", "dense,mymix", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    *warnings, last = done.stderr.strip().splitlines()
    assert last == (
        f"error: unknown mixer 'mymix' — the plugin file {tmp_path / 'mymix.py'} "
        "failed to load: SyntaxError: invalid syntax (mymix.py, line 3)"
    )
    assert len(warnings) == 1 and "not loaded" in warnings[0]
    assert done.stdout == "" and not (tmp_path / "benchsuite-results").exists()
    typo = invoke("--plugins-dir", str(tmp_path), *BASE, "--mixers", "dense,identiy", cwd=tmp_path)
    assert (
        "did you mean 'identity'?" in typo.stderr and "mymix.py" not in typo.stderr.splitlines()[-1]
    )


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (70_000, 70_000))


def test_disk_full_while_writing_keeps_the_store_intact(finished):
    out, before = finished
    args = [*BASE, "--mixers", "dense,identity,attention,mlp", "--out", str(out), "-q"]
    # a subprocess: the file-size limit (and its SIGXFSZ) must bind that process, not pytest;
    # -q: errors only (the planning line would come first), so the error is all of stderr
    full = subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", *args],
        capture_output=True,
        text=True,
        preexec_fn=_limit_file_size,
        timeout=600,
    )
    one_line(full, 1, "cannot save")
    assert "every result saved before is intact" in full.stderr
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    after = dict(stored_rows(out))
    assert all(after[key] == record for key, record in before)
    resumed = invoke(*args)
    assert resumed.returncode == 0, resumed.stderr


def test_determinism_every_stored_metric_bit_for_bit(finished, tmp_path):
    _, before = finished
    again = tmp_path / "again"
    done = invoke(*BASE, "--mixers", "dense,identity", "--out", str(again))
    assert done.returncode == 0, done.stderr

    def metrics(rows):  # the chosen config's, and every config's validation metrics
        records = {key: json.loads(record) for key, record in rows}
        return {
            key: (r["metrics"], [run["metrics"] for run in r["sweep"]])
            for key, r in records.items()
        }

    first, second = metrics(before), metrics(stored_rows(again))
    assert first.keys() == second.keys() and len(first) == 4  # 2 mixers x 2 seeds
    assert first == second


BROKEN_PLUGINS = {
    "broken_import": "import not_a_module_anywhere\n",
    "raising_hook": (
        "from benchsuite import hookimpl\n\n@hookimpl\n"
        "def benchsuite_register_mixers(register):\n    raise RuntimeError('hook exploded')\n"
    ),
    "wrong_kind": (
        "from benchsuite import hookimpl\n\n@hookimpl\n"
        "def benchsuite_register_mixers(register):\n    register(42)\n"
    ),
}


def test_broken_plugins_are_one_line_warnings_and_the_run_goes_on(finished, tmp_path):
    out, before = finished
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for name, text in BROKEN_PLUGINS.items():
        (plugins / f"{name}.py").write_text(text)
    result = invoke(
        "--plugins-dir", str(plugins), *BASE, "--mixers", "dense,identity", "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "not loaded:" in line]  # warnings
    assert len(lines) == 3
    assert any("broken_import" in line and "ModuleNotFoundError" in line for line in lines)
    assert any("raising_hook" in line and "hook exploded" in line for line in lines)
    assert any("wrong_kind" in line and "expected a Mixer" in line for line in lines)
    assert "jobs: 0 trained, 4 reused, 0 failed" in result.stdout
    assert stored_rows(out) == before


def test_missing_data_file_names_it_and_other_tracks_still_run(finished, tmp_path):
    out, before = finished
    missing = tmp_path / "no-such-table.csv"
    result = invoke(
        *BASE,
        "--tracks",
        "sequence,tabular",
        "--mixers",
        "dense,identity",
        "--track-option",
        f"tabular.csv={missing},tabular.target=y",
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stderr
    assert "no-such-table.csv" in result.stdout
    assert "sequence —" in result.stdout
    assert stored_rows(out) == before


def test_an_unverified_cifar_folder_is_used_and_announced(tmp_path):
    data = tmp_path / "data"
    write_cifar(data / "cifar-10-batches-py")
    out = tmp_path / "out"
    result = invoke(
        *BASE,
        "--tracks",
        "vision",
        "--mixers",
        "dense,identity",
        "--data-dir",
        str(data),
        "--track-option",
        "vision.verify=false",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    dataset = json.loads((out / "report.json").read_text())["tracks"]["vision"]["dataset"]
    assert "CIFAR-10" in dataset and "unverified" in dataset
    assert json.loads((out / "report.json").read_text())["tracks"]["vision"]["verified"] is False


def test_an_older_store_is_backed_up_then_migrated_keeping_every_row(finished):
    out, before = finished
    path = out / "benchsuite.sqlite"
    with sqlite3.connect(path) as db:  # make it a schema-1 store, as benchsuite 0.1.0 wrote it
        db.execute("DROP INDEX IF EXISTS results_by_cell")
        db.execute("PRAGMA user_version = 1")
    result = invoke(*BASE, "--mixers", "dense,identity", "--out", str(out))
    assert result.returncode == 0, result.stderr
    backup = out / "benchsuite.sqlite.v1.bak"
    with sqlite3.connect(backup) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        assert db.execute("SELECT key, record FROM results ORDER BY key").fetchall() == before
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        indexes = {row[1] for row in db.execute("PRAGMA index_list(results)")}
    assert "results_by_cell" in indexes
    assert stored_rows(out) == before


def _legacy_store(path) -> None:
    """A store as benchsuite 0.1 wrote it: sweep and evaluation rows, and the run's manifest."""
    grid = [{"lr": 0.01, "weight_decay": 0.0}, {"lr": 0.03, "weight_decay": 0.0}]
    rng = np.random.default_rng(0)
    rows, cells = [], {}
    for mixer, level in (("dense", 0.5), ("identity", 0.8)):
        cell = cells.setdefault(mixer, {"sweep": [], "eval": []})
        for stage, seeds in (("sweep", [1_000_000]), ("eval", range(6))):
            for index in range(len(grid)) if stage == "sweep" else [1]:
                for seed in seeds:
                    key = f"{mixer}-{stage}-{index}-{seed}"
                    val = level + 0.1 * (index == 0) + rng.normal(0, 0.01)
                    job = {
                        "track": "sequence",
                        "mixer": mixer,
                        "stage": stage,
                        "seed": seed,
                        "config_index": index,
                        "config": grid[index],
                        "measure": False,
                    }
                    metrics = {"val.mse": val, "test.mse": level + rng.normal(0, 0.01)}
                    record = {
                        "key": key,
                        "job": job,
                        "status": "ok",
                        "metrics": metrics,
                        "cap": 1.0,
                        "costs": {},
                        "probes": {},
                    }
                    rows.append((key, "sequence", mixer, stage, index, seed, json.dumps(record)))
                    cell[stage].append(key)
    manifest = {
        "request": {
            "tracks": ["sequence"],
            "mixers": ["dense", "identity"],
            "baseline": "dense",
            "seeds": 6,
            "sweep_seeds": 1,
            "preset": "quick",
            "margin_rel": 0.05,
            "budget_overrides": {},
            "salt": "benchsuite-v1",
        },
        "tracks": {
            "sequence": {
                "metric": "mse",
                "higher_is_better": False,
                "direction": "lower is better",
                "dataset": "legacy",
                "verified": True,
                "tokens": 16,
                "grid": grid,
                "budget": {
                    "steps": 200,
                    "batch_size": 32,
                    "dim": 32,
                    "depth": 2,
                    "checkpoint": "last",
                },
                "budget_signature": "old",
                "data_key": "old",
                "plugin": "",
            }
        },
        "mixers": {
            m: {"description": "", "plugin": "", "causal": False, "signature": None}
            for m in ("dense", "identity")
        },
        "cells": {"sequence": cells},
        "skipped": [],
        "environment": {},
    }
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE results (key TEXT PRIMARY KEY, track TEXT, mixer TEXT, stage TEXT,"
            " config_index INTEGER, seed INTEGER, record TEXT, created REAL);"
            "CREATE TABLE failures (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, track TEXT,"
            " mixer TEXT, stage TEXT, seed INTEGER, record TEXT, created REAL);"
            "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL, request TEXT);"
        )
        db.executemany("INSERT INTO results VALUES (?,?,?,?,?,?,?,0)", rows)
        db.execute("INSERT INTO runs (started, request) VALUES (0, ?)", (json.dumps(manifest),))
        db.execute("PRAGMA user_version = 2")


def test_a_store_of_benchsuite_0_1_is_migrated_and_still_reports(tmp_path):
    """0.1 kept a run manifest (without the chosen config) where a plan is kept now: migrating
    converts it once, deriving the config the shared sweep chose, and `report` works."""
    out = tmp_path / "old"
    out.mkdir()
    _legacy_store(out / "benchsuite.sqlite")
    result = invoke("report", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "benchsuite.sqlite.v2.bak").exists()
    report = json.loads((out / "report.json").read_text())
    entry = report["tracks"]["sequence"]
    assert entry["mixers"]["dense"]["best_cfg"]["lr"] == 0.03  # the lower sweep validation mse
    comparison = entry["comparisons"]["identity"]["comparison"]
    assert comparison["n"] == 6 and comparison["improvement"] < 0


def test_a_schema_3_store_moves_the_plan_s_choices_into_the_records(finished_run, tmp_path):
    """Schema 3 kept each seed's chosen config in the saved plan as well as in the record (and
    only in the plan for stores converted from 0.1); schema 4 keeps it in the record alone. A
    real run's store, put back in schema-3 form with its records' choices only in the plan,
    reports the same tracks after the migration, every record holding its choice again."""
    out = tmp_path / "out"
    copy_run(finished_run, out)
    before = json.loads((out / "report.json").read_text())["tracks"]
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        records = {
            key: json.loads(text) for key, text in db.execute("SELECT key, record FROM results")
        }
        row_id, text = db.execute("SELECT id, request FROM runs ORDER BY id DESC").fetchone()
        plan = json.loads(text)
        for cell in (cell for cells in plan["cells"].values() for cell in cells.values()):
            mine = [records[key] for key in cell["jobs"] if key in records]
            cell["chosen"] = {str(r["job"]["seed"]): r["chosen"] for r in mine}
            for record in mine:
                record["chosen"] = None
        db.execute("UPDATE runs SET request = ? WHERE id = ?", (json.dumps(plan), row_id))
        for key, record in records.items():
            db.execute("UPDATE results SET record = ? WHERE key = ?", (json.dumps(record), key))
        db.execute("PRAGMA user_version = 3")
    assert any(r["chosen"] is None for r in records.values())

    result = invoke("report", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "benchsuite.sqlite.v3.bak").exists()
    assert json.loads((out / "report.json").read_text())["tracks"] == before
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        stored = [json.loads(text) for (text,) in db.execute("SELECT record FROM results")]
        saved = [json.loads(text) for (text,) in db.execute("SELECT request FROM runs")]
    assert all(record["chosen"] is not None for record in stored)
    assert not any(
        "chosen" in cell for p in saved for c in p["cells"].values() for cell in c.values()
    )
