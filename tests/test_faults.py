"""Faults that are not signals (docs/running.md, "Faults a run survives"): a mixer that eats the
memory stopped at the worker's cap, a full disk, and the fault campaign's short form."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
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


FULL_DISK_RUN = [
    "run",
    "--tracks",
    "sequence",
    "--mixers",
    "dense,identity,attention",
    "--seeds",
    "4",
    "--save-every",
    "0.05",
    *TINY,
    "--no-config",
    "-q",
]


def _per_seed(out: Path) -> dict[str, list[float]]:
    report = json.loads((out / "report.json").read_text())
    return {
        mixer: cell["mixer_values"] + cell["baseline_values"]
        for mixer, cell in report["tracks"]["sequence"]["comparisons"].items()
    }


@pytest.mark.slow
def test_a_full_disk_is_one_line_keeps_every_record_and_the_same_command_resumes(tmp_path):
    """The run's processes may write files of at most 250 kB (a file-size limit, as a full disk
    or a quota does): the store's write fails once its log reaches it, with one line naming the
    store and the cause; the records stored before are read back whole; the same command without
    the limit then finishes with every per-seed figure of an uninterrupted run."""
    env = {"BENCHSUITE_CACHE": str(tmp_path / "cache")}
    whole = invoke(*FULL_DISK_RUN, "--out", str(tmp_path / "whole"), env=env)
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "full"

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (250_000, 250_000))

    command = [sys.executable, "-m", "benchsuite.cli", *FULL_DISK_RUN, "--out", str(out)]
    full = subprocess.run(
        command, capture_output=True, text=True, preexec_fn=limited, env={**os.environ, **env}
    )
    assert full.returncode == 1
    [said] = [line for line in full.stderr.splitlines() if line.startswith("error:")]
    assert said.startswith(f"error: store {out / 'benchsuite.sqlite'}: cannot save a result (")
    assert "file too large: this process may write files of at most 250 kB (ulimit -f)" in said
    with sqlite3.connect(f"file:{out / 'benchsuite.sqlite'}?mode=ro", uri=True) as db:
        kept = [json.loads(text) for (text,) in db.execute("SELECT record FROM results")]
    assert 0 < len(kept) < 12 and all(r["status"] == "ok" for r in kept)

    resumed = invoke(*FULL_DISK_RUN, "--out", str(out), env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(kept)} reused" in resumed.stdout + resumed.stderr
    assert _per_seed(out) == _per_seed(tmp_path / "whole")
    assert (
        not [p for p in (out / "checkpoints").rglob("*")]
        if (out / "checkpoints").exists()
        else True
    )


def test_a_write_refused_for_want_of_space_says_so_with_the_free_bytes(tmp_path):
    import errno

    from benchsuite import disk

    full = OSError(errno.ENOSPC, "No space left on device")
    assert disk.cause(tmp_path / "x.pt", full).startswith("no space left on the device (")
    assert disk.cause(tmp_path / "x.pt", full).endswith(" free)")
    other = OSError(errno.EACCES, "Permission denied")
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:  # no file-size limit here: the error's own words
        assert disk.cause(tmp_path / "x.pt", other) == str(other)


MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev 0 0
server:/export/runs /mnt/runs nfs4 rw,relatime,vers=4.2 0 0
"""


def test_a_store_on_a_network_file_system_gets_a_warning_and_a_local_one_none(tmp_path):
    from benchsuite.disk import network_warning

    said = network_warning(Path("/mnt/runs/study/benchsuite.sqlite"), MOUNTS)
    assert said is not None and "\n" not in said
    assert said.startswith("the store /mnt/runs/study/benchsuite.sqlite is on a network file ")
    assert "(nfs4 at /mnt/runs)" in said
    assert network_warning(Path("/tmp/study/benchsuite.sqlite"), MOUNTS) is None
    assert network_warning(tmp_path / "benchsuite.sqlite") is None  # this machine's own disk


@pytest.mark.slow
def test_the_fault_campaign_in_short_form(tmp_path):
    """``benchmarks/faults.py`` with a few kills of the driver and of its workers: each campaign
    ends with the reference's figures, no duplicate, no leftover lease, no checkpoint left."""
    script = Path(__file__).parents[1] / "benchmarks" / "faults.py"
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            str(tmp_path / "faults"),
            *("--driver-kills", "2", "--worker-kills", "2", "--ray-kills", "0"),
            *("--steps", "60"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHSUITE_CACHE": str(tmp_path / "cache")},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split(":")[0]: line for line in done.stdout.splitlines()}
    for name in ("driver", "worker"):
        said = lines[name]
        assert f"{name}: kills 2," in said
        for clean in ("duplicates 0", "leftover leases 0", "orphaned checkpoints 0"):
            assert clean in said, said
        assert "figures differing 0 of 34" in said, said
