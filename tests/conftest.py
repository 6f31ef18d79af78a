"""Shared fixtures: an isolated cache folder, one torch thread, the built-in registry, and running
the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Small enough that a whole run takes seconds, large enough that models really train.
TINY = [
    "--budget", "steps=30",
    "--grid", "sequence.lr=0.01,0.03",
    "--track-option", "sequence.series=24",
    "--track-option", "sequence.length=64",
]  # fmt: skip


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


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    """Run ``benchsuite ARGS`` as a user would; returns the CompletedProcess (text)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", *args],
        capture_output=True, text=True, env=full_env, cwd=cwd, timeout=600,
    )  # fmt: skip
