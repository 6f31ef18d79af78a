"""A job stopped in flight resumes from its last save and ends bit for bit as if never
stopped: a real run killed with SIGKILL once a job has saved, then resumed, against the same run
uninterrupted; the saves are gone once every record is stored."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import exact_steps, interruptible, invoke

# every config trains exactly 800 steps, saved every 0.2 s (the default is every 2 minutes)
RUN = [
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,identity",
    "--seeds",
    "2",
    "--executor",
    "local",
    *exact_steps(800),
    "--no-config",
    "-q",
]


def records(out: Path) -> dict[str, dict]:
    with sqlite3.connect(out / "benchsuite.sqlite") as db:
        rows = [json.loads(text) for (text,) in db.execute("SELECT record FROM results")]
    return {row["key"]: row for row in rows}


def test_a_job_killed_in_flight_resumes_from_its_save_bit_for_bit(tmp_path):
    env = {**os.environ, "BENCHSUITE_CACHE": str(tmp_path / "cache")}
    whole = invoke(*RUN, "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "benchsuite.cli", *RUN, "--save-every", "0.2"]
    process = subprocess.Popen(
        [*command, "--out", str(out)], env=env, preexec_fn=interruptible, start_new_session=True
    )
    saves = out / "checkpoints"
    deadline = time.monotonic() + 120
    while not list(saves.glob("*/*.pt")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # a few saves later
    assert process.poll() is None, "the run ended before it was killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert list(saves.glob("*/*.pt")), "no save left by the killed run"
    resumed = invoke(*RUN, "--save-every", "0.2", "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    said = re.search(r"failed \((\d+) of those trained went on from their saves\)", resumed.stdout)
    assert said, resumed.stdout  # a resumed job is not silent
    expected, got = records(tmp_path / "whole"), records(out)
    assert set(got) == set(expected)
    for key, record in got.items():
        want = expected[key]
        assert record["metrics"] == want["metrics"] and record["chosen"] == want["chosen"]
        assert [row["metrics"] for row in record["sweep"]] == [
            row["metrics"] for row in want["sweep"]
        ]
    went_on = sum(r["costs"].get("resumed_at_step", 0) > 0 for r in got.values())
    assert went_on > 0 and int(said.group(1)) == went_on  # it did resume, and says how many
    assert not list(saves.glob("*/*.pt"))  # every record stored: nothing left to resume


def test_one_model_stopped_mid_loop_goes_on_from_its_save_bit_for_bit(tmp_path):
    """The loop of a lone model (the path of a model vmap cannot run): stopped by an interrupt at
    step 50 of 100 with a save at every step, then run again from the save, it ends with the
    parameters and losses of the loop that never stopped."""
    import torch

    from benchsuite.train.checkpoint import Checkpoint
    from benchsuite.train.fit import Schedule, train_loop
    from benchsuite.train.optimizers import FusedAdamW

    def train(stop_at: int | None, saved: Checkpoint | None) -> tuple[torch.nn.Module, list]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1)
        )
        x, y = torch.randn(64, 4), torch.randn(64, 1)

        def loss_at(step: int) -> torch.Tensor:
            if step == stop_at:
                raise KeyboardInterrupt
            return torch.nn.functional.mse_loss(model(x), y)

        optimizer = FusedAdamW(model.parameters(), 1e-2, 0.01)
        trace = train_loop(optimizer, loss_at, 100, Schedule(10), x.device, checkpoint=saved)
        return model, trace.losses.tolist()

    whole, losses = train(None, None)
    saved = Checkpoint(tmp_path / "loop.pt", every=0.0)
    with pytest.raises(KeyboardInterrupt):
        train(50, saved)
    assert torch.load(saved.path, weights_only=False)["done"] == 50
    resumed, resumed_losses = train(None, Checkpoint(saved.path, every=1e9))
    assert resumed_losses == losses  # the dropout draws too: the generator's state is saved
    for a, b in zip(whole.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
