"""Shared fixtures: an isolated cache folder, one torch thread, the built-in registry, and
``finished_run``: one small real run that the report, HTML, export, schema, flag, table, verdict
and statistics tests read, trained once per test run. Helpers the test modules import live in
``tests/helpers.py``."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
from helpers import REPORT_MIXERS, REPORT_SHAPE, REPORT_TRACKS, invoke


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Keep generated data out of the home folder."""
    cache = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("BENCHSUITE_CACHE", str(cache))
    monkeypatch.delenv("BENCHSUITE_PLUGINS_DIR", raising=False)
    monkeypatch.delenv("BENCHSUITE_LOAD_PLUGINS", raising=False)
    return cache


@pytest.fixture
def one_thread():
    """Train on one torch thread (as every job does), restoring the count after the test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def registry():
    """The built-in plugins, loaded once per test module."""
    from benchsuite.registry import load_registry

    return load_registry()


REPORT_PLUGIN = """
from benchsuite import Mixer, hookimpl
from benchsuite.tracks.sequence import SequenceTrack


class OtherSequence(SequenceTrack):
    name = "sequence_b"
    description = "the sequence track under a second name"


def broken(tokens, dim):
    import torch

    class FailsInTraining(torch.nn.Module):
        def forward(self, x):
            if x.shape[0] > 3:  # passes the pre-flight's batch of 3, fails every training job
                raise RuntimeError("this mixer fails to train on purpose")
            return x

    return FailsInTraining()


def unbuildable(tokens, dim):
    raise RuntimeError("never built: the mixer is unsupported everywhere")


@hookimpl
def benchsuite_register_tracks(register):
    register(OtherSequence())


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="broken", build=broken, description="always fails"))
    register(Mixer(name="picky", build=unbuildable, description="never supported",
                   supports=lambda tokens, dim: f"needs more than {tokens} tokens"))
"""


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """OUT of a real tiny run, trained once per test run (the first xdist worker to ask trains it,
    the others wait on a file lock and read it): 2 tracks x 3 working mixers (a failing one and an
    unsupported one besides, from a plugins folder), 3 seeds. Readers copy the store to change
    it."""
    root = tmp_path_factory.getbasetemp()
    base = (root.parent if worker_id != "master" else root) / "finished-run"
    base.mkdir(exist_ok=True)
    with (base / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / "out" / "report.json").exists():
            _train_finished_run(base)
    return base / "out"


def _train_finished_run(base: Path) -> None:
    out = base / "out"
    plugins = base / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "extra.py").write_text(REPORT_PLUGIN)
    options = [f"--track-option={t}.{s}" for t in REPORT_TRACKS for s in REPORT_SHAPE]
    done = invoke(
        "--plugins-dir",
        str(plugins),
        "run",
        "--tracks",
        ",".join(REPORT_TRACKS),
        "--mixers",
        ",".join(REPORT_MIXERS),
        "--seeds",
        "3",
        *[f"--grid={t}.lr=0.01,0.03" for t in REPORT_TRACKS],
        "--budget",
        "steps=30",
        *options,
        "--executor",
        "local",
        "--match",
        "none",  # sizes as declared: param_mismatch can fire
        "--out",
        str(out),
        env={"BENCHSUITE_CACHE": str(base / "cache")},
    )
    assert (out / "report.json").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    (out / "html-written-by-run").write_text(str((out / "report.html").exists()))
