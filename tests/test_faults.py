"""Faults that are not signals (docs/running.md, "Faults a run survives"): a mixer that eats the
memory stopped at the worker's cap, a full disk, and the fault campaign's short form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TINY, invoke

from benchsuite.execute.memory import GIB, SHARE, worker_limit

HUNGRY = '''
"""A mixer that allocates (and touches) 3 GiB in each forward pass from its 20th on."""

from benchsuite import Mixer, hookimpl
from benchsuite.mixers import dense


def build(tokens, dim):
    import torch
    from torch import nn

    class Hungry(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = dense.build(tokens, dim)

            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls < 20:  # the pre-flight's passes fit; training's later steps do not
                return self.inner(x)
            eaten = torch.ones(3 * 2**30 // 4)  # 3 GiB of float32, every page written
            return self.inner(x) + 0 * eaten[0]

    return Hungry()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="hungry", build=build, description="eats 3 GiB"))
'''


def test_the_default_cap_shares_four_fifths_of_the_machine_and_0_lifts_it():
    import os

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert worker_limit(None, 2) == int(SHARE * total / 2)
    assert worker_limit(1.5, 2) == int(1.5 * GIB) and worker_limit(0, 2) is None


def test_an_allocation_past_the_cap_fails_in_the_process_and_it_lives_on():
    """The cap is the process's own limit: an allocation past it raises, the next one fits."""
    program = (
        "from benchsuite.execute.memory import cap, out_of_memory\n"
        "cap(2**30)\n"
        "try:\n"
        "    eaten = bytearray(2 * 2**30)\n"
        "except MemoryError as error:\n"
        "    print('refused', out_of_memory(error))\n"
        "print('then', len(bytearray(2**20)))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.split() == ["refused", "True", "then", "1048576"], done.stderr


def test_the_cap_must_not_be_negative(tmp_path):
    result = invoke("run", "--memory-limit", "-1", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().endswith("--memory-limit must be GiB >= 0, got -1")


@pytest.mark.slow
def test_a_mixer_that_eats_the_memory_fails_at_the_cap_and_the_run_goes_on(tmp_path):
    """``hungry`` allocates 3 GiB in each forward pass under a 2 GiB cap: each of its jobs fails
    with one line naming it and the limit, the baseline's train, the report is written. Without
    the cap the allocation succeeds (this machine has the memory) and its jobs would not fail."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "hungry.py").write_text(HUNGRY)
    out = tmp_path / "out"
    result = invoke(
        "--plugins-dir",
        str(plugins),
        "run",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,hungry",
        "--seeds",
        "2",
        "--memory-limit",
        "2",
        "--no-batch-seeds",
        "--preflight-timeout",
        "120",
        *TINY,
        "--out",
        str(out),
    )
    report = json.loads((out / "report.json").read_text())
    failures = report["failures"]
    said = "mixer 'hungry' on sequence ran out of memory at the worker limit of 2 GiB"
    assert failures and all(f["mixer"] == "hungry" for f in failures), failures
    assert all(said in f["reason"] for f in failures), failures
    assert report["tracks"]["sequence"]["mixers"]["dense"]["full"]["n"] == 2  # the baseline ran
    assert result.returncode == 1 and "failed" in result.stdout + result.stderr
    assert Path(out / "report.html").exists()
