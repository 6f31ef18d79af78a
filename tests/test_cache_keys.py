"""Cache keys follow the code a job runs: in a temporary copy of benchsuite (tracks and mixers
included), editing a helper module that one built-in track imports re-runs exactly that track's
jobs; editing a module that only formats output, or only a comment, re-runs nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from helpers import run_cli

import benchsuite

SOURCE = Path(benchsuite.__file__).parent
TRAINED = re.compile(r"jobs: (\d+) trained, (\d+) reused, (\d+) failed")
RUN = [
    "run",
    "--tracks",
    "sequence,vision",
    "--mixers",
    "dense,identity",
    "--seeds",
    "2",
    "--grid",
    "sequence.lr=0.01,0.03",
    "--grid",
    "vision.lr=0.01,0.03",
    "--budget",
    "steps=10",
    "--executor",
    "local",
    "--track-option",
    "sequence.series=24",
    "--track-option",
    "sequence.length=64",
]
PER_TRACK = 2 * 2  # 2 mixers x 2 seeds (each tuning over its 2 grid points)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """benchsuite, its tracks and its mixers copied into one importable tree."""
    root = tmp_path_factory.mktemp("copy")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOURCE, root / "benchsuite", ignore=ignore)
    shutil.copytree(SOURCE.parent / "tracks", root / "benchsuite" / "tracks", ignore=ignore)
    shutil.copytree(SOURCE.parent / "plugins", root / "benchsuite" / "mixers", ignore=ignore)
    return root


def run(copy: Path, out: Path) -> tuple[int, int, str]:
    # a subprocess: only a fresh interpreter imports the copy (PYTHONPATH) instead of benchsuite
    done = run_cli(*RUN, "--out", str(out), env={"PYTHONPATH": str(copy)}, cwd=copy)
    assert done.returncode == 0, done.stderr
    trained, reused, _ = map(int, TRAINED.search(done.stdout).groups())
    return trained, reused, done.stdout + done.stderr


def edit(path: Path, addition: str) -> None:
    path.write_text(path.read_text() + addition)


@pytest.mark.slow  # four end-to-end runs of a copied package, each in a fresh interpreter
def test_editing_code_reruns_exactly_the_jobs_that_import_it(copy, tmp_path):
    out = tmp_path / "out"
    assert run(copy, out)[:2] == (2 * PER_TRACK, 0)
    # the vision track's helper module (not the plugin module itself)
    edit(copy / "benchsuite" / "tracks" / "cifar.py", "\n\ndef _edited() -> int:\n    return 1\n")
    trained, reused, text = run(copy, out)
    assert (trained, reused) == (PER_TRACK, PER_TRACK)  # vision again, sequence reused
    assert "code of track vision changed" in text and "benchsuite.tracks.cifar" in text
    # a mixer's module: that mixer's jobs on every track, nothing else
    edit(copy / "benchsuite" / "mixers" / "identity.py", "\n\nEDITED = 1\n")
    per_mixer = 2 * 2  # 2 tracks x 2 seeds
    assert run(copy, out)[:2] == (per_mixer, 2 * PER_TRACK - per_mixer)
    # a module that only formats output, and a comment in a track, re-run nothing
    edit(copy / "benchsuite" / "output" / "tables.py", "\n\nEDITED = 'formatting only'\n")
    edit(copy / "benchsuite" / "tracks" / "sequence.py", "\n# a comment changes no code\n")
    assert run(copy, out)[:2] == (0, 2 * PER_TRACK)
