"""Executors: failure isolation, hard timeouts, retries and bit-identical results across executors.

The misbehaving mixers live in a real plugins folder written by the tests; every job trains a real
(tiny) model on the ``sequence`` track.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from benchsuite import UsageError
from benchsuite.execute.executors import make_executor
from benchsuite.execute.worker import Cell, Worker
from benchsuite.measures import Scores
from benchsuite.plan.jobs import cell_jobs
from benchsuite.plan.resolve import check_executor, resolve
from benchsuite.records import Job, RunRecord
from benchsuite.registry import Registry, load_registry
from benchsuite.settings import RunSettings

DRIVER = """
import pickle

from benchsuite.execute.executors import make_executor
from benchsuite.execute.worker import Worker

if __name__ == "__main__":
    job = pickle.loads(open({job!r}, "rb").read())
    with make_executor("process", Worker({plugins!r}), jobs=1) as executor:
        list(executor.map([job]))
"""
TIMEOUT = 12.0  # seconds; a healthy job here takes under one (a few on a crowded machine)

PLUGIN = '''
"""Mixers that misbehave on purpose: the executor tests run them."""

import os
import time
from dataclasses import replace
from pathlib import Path

from benchsuite import Mixer, hookimpl

MARKER = Path({marker!r})


def _mixer(act):
    def build(tokens, dim):
        import torch
        from torch import nn

        class Misbehaving(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.eye(tokens))
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                return act(self.calls, torch.einsum("st,btd->bsd", self.weight, x))

        return Misbehaving()

    return build


def raises_third(calls, y):
    if calls == 3:
        raise RuntimeError("third forward call")
    return y


def nan(calls, y):
    return y * float("nan")


def sleeps(calls, y):
    MARKER.with_name("sleeping.marker").touch()
    time.sleep(600)
    return y


def kills_itself(calls, y):
    os.kill(os.getpid(), 9)
    return y


def tells_allocator(calls, y):
    raise RuntimeError(os.environ.get("MALLOC_MMAP_THRESHOLD_", "unset"))


def killed_once(calls, y):
    if not MARKER.exists():
        MARKER.touch()
        os.kill(os.getpid(), 9)
    return y


@hookimpl
def benchsuite_register_mixers(register):
    for act in (raises_third, nan, sleeps, kills_itself, killed_once, tells_allocator):
        register(Mixer(name=act.__name__, build=_mixer(act), description="misbehaves"))
'''


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHSUITE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("plugins")
    marker = folder.parent / "killed-once.marker"
    (folder / "misbehaving.py").write_text(PLUGIN.format(marker=str(marker)))
    return str(folder)


@pytest.fixture(scope="module")
def registry(plugins: str) -> Registry:
    registry = load_registry(plugins)
    assert not registry.failures, registry.failures
    return registry


def sweep(registry: Registry, mixers: list[str]) -> list[Job]:
    """Tiny jobs (20 steps, one config) on ``sequence``, three seeds of each of ``mixers``."""
    settings = RunSettings(
        tracks=("sequence",),
        mixers=tuple(mixers),
        seeds=3,
        track_options={"sequence": {"series": "24"}},
        budget={"steps": 20},
    )
    settings = resolve(settings, registry)
    track = registry.tracks["sequence"]
    return [
        job
        for name in settings.mixers or ()
        for job in cell_jobs(settings, track, registry.mixers[name], [{"lr": 0.01}], "t")
    ]


def executor(name: str, jobs: int | None, plugins: str, **options):
    """The executor ``name`` running a worker that loads ``plugins``."""
    return make_executor(name, Worker(plugins), jobs=jobs, **options)


def same(ours: Scores, theirs: Scores) -> bool:
    """Equal metrics, bit for bit (NaN equals NaN)."""
    a, b = ours.to_plain(), theirs.to_plain()
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def by_mixer(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    grouped: dict[str, list[RunRecord]] = {}
    for record in records:
        grouped.setdefault(record.job.mixer, []).append(record)
    return grouped


def test_each_failure_is_isolated(registry: Registry, plugins: str) -> None:
    bad = ["raises_third", "nan", "sleeps", "kills_itself"]
    jobs = [
        job for job in sweep(registry, ["dense", *bad]) if job.mixer == "dense" or job.seed == 0
    ]
    start = time.monotonic()
    with executor("process", 2, plugins, timeout=TIMEOUT) as pool:
        records = list(pool.map(jobs))
    elapsed = time.monotonic() - start

    assert sorted(r.key for r in records) == sorted(j.key for j in jobs)  # one record per job
    result = by_mixer(records)
    healthy = [(r.status, r.error, r.result.divergence) for r in result["dense"]]
    assert all(h[:2] == ("ok", "") and h[2] != "non_finite" for h in healthy) and len(healthy) == 3
    [raised] = result["raises_third"]
    assert (raised.status, raised.error) == ("failed", "RuntimeError: third forward call")
    assert "raises_third" in raised.traceback
    [diverged] = result["nan"]
    assert diverged.status == "ok" and diverged.result.divergence == "non_finite"  # not a failure
    [slept] = result["sleeps"]
    assert (slept.status, slept.error) == ("failed", f"timed out after {TIMEOUT:g} s")
    assert TIMEOUT <= slept.seconds < TIMEOUT + 5
    [killed] = result["kills_itself"]
    assert (killed.status, killed.error) == ("failed", "killed by signal 9 (SIGKILL)")
    assert "attempt 2" in killed.traceback  # retried once before it counted as failed
    assert elapsed < 60


def test_killed_job_is_retried_with_the_same_seed(registry: Registry, plugins: str) -> None:
    [job] = [job for job in sweep(registry, ["dense", "killed_once"]) if job.mixer != "dense"][:1]
    with executor("process", 1, plugins) as pool:
        [retried] = list(pool.map([job]))
    assert retried.status == "ok"
    assert retried.environment["retried_after"] == "killed by signal 9 (SIGKILL)"
    with executor("local", None, plugins) as pool:
        [local] = list(pool.map([job]))
    assert same(retried.result.metrics, local.result.metrics)


STARTUP_PLUGIN = """
import multiprocessing
import os
from pathlib import Path

MARKER = Path({marker!r})
if multiprocessing.parent_process() is not None and MARKER.exists():  # a worker, starting up
    deaths = int(MARKER.read_text() or 0)
    if deaths < {deaths}:
        MARKER.write_text(str(deaths + 1))
        os.kill(os.getpid(), 9)
"""


@pytest.mark.parametrize("deaths", [2, 3])
def test_a_worker_killed_while_starting_up_is_replaced_up_to_a_limit(
    registry: Registry, plugins: str, tmp_path: Path, deaths: int
) -> None:
    """Workers SIGKILLed while loading the plugins (before they are ready): two in a row are
    replaced and the job runs; a third in a row ends the run with one line saying so."""
    from benchsuite.execute.pool import STARTUP_DEATHS

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "misbehaving.py").write_text(Path(plugins, "misbehaving.py").read_text())
    marker = tmp_path / "startup.marker"
    (folder / "dies_starting.py").write_text(
        STARTUP_PLUGIN.format(marker=str(marker), deaths=deaths)
    )
    marker.write_text("0")  # armed only now: the driver loaded the plugins above without it
    [job] = sweep(registry, ["dense", "nan"])[:1]
    with executor("process", 1, str(folder)) as pool:
        if deaths < STARTUP_DEATHS:
            [record] = list(pool.map([job]))
            assert record.status == "ok" and marker.read_text() == str(deaths)
            return
        with pytest.raises(RuntimeError) as raised:
            list(pool.map([job]))
    assert str(raised.value) == (
        "a benchsuite worker process died while starting up 3 times in a row "
        "(the last: killed by signal 9 (SIGKILL))"
    )


def test_workers_start_with_the_allocator_keeping_freed_memory(
    registry: Registry, plugins: str
) -> None:
    """The driver's environment is left as it was; its workers see ALLOCATOR."""
    from benchsuite.execute.pool import ALLOCATOR

    [job] = [job for job in sweep(registry, ["dense", "tells_allocator"]) if job.seed == 0][1:]
    with executor("process", 1, plugins) as pool:
        [record] = list(pool.map([job]))
    assert record.error.endswith(f"RuntimeError: {ALLOCATOR['MALLOC_MMAP_THRESHOLD_']}")
    assert "MALLOC_MMAP_THRESHOLD_" not in os.environ


def test_process_gives_the_same_metrics_as_local(registry: Registry, plugins: str) -> None:
    jobs = sweep(registry, ["dense", "attention", "nan"])
    with executor("local", None, plugins) as pool:
        local = {r.key: r for r in pool.map(jobs)}
    with executor("process", 2, plugins) as pool:
        pooled = {r.key: r for r in pool.map(jobs)}
        assert {r.key for r in pool.map(jobs[:2])} == {j.key for j in jobs[:2]}  # reusable
    assert local.keys() == pooled.keys() == {job.key for job in jobs}
    assert len({r.environment["pid"] for r in pooled.values()}) == 2  # two persistent workers
    for key, record in local.items():
        assert record.status == pooled[key].status == "ok"
        assert same(record.result.metrics, pooled[key].result.metrics)  # bit-identical
        assert record.result.diverged == pooled[key].result.diverged


def test_a_cell_of_seeds_trains_on_a_worker_as_in_the_driver(
    registry: Registry, plugins: str
) -> None:
    """A batched cell handed to the pool trains in a worker process, a record per seed,
    bit-identical to the same cell trained in the driver; a cell whose process dies twice gets
    a failure record for each of its seeds."""
    jobs = [
        replace(job, batched=True)
        for job in sweep(registry, ["dense", "attention", "kills_itself"])
    ]
    cells = {
        name: Cell(tuple(job for job in jobs if job.mixer == name))
        for name in ("dense", "attention", "kills_itself")
    }
    driver = Worker(plugins, registry=registry)
    here = {r.key: r for name in ("dense", "attention") for r in driver.batch(cells[name].jobs)}
    with executor("process", 2, plugins) as pool:
        outputs = list(pool.map(list(cells.values())))
    assert all(isinstance(output, list) for output in outputs)
    pooled = {r.key: r for output in outputs for r in output}
    assert pooled.keys() == {job.key for job in jobs}
    for key, record in here.items():
        assert record.status == pooled[key].status == "ok" and pooled[key].environment["batched"]
        assert pooled[key].environment["pid"] != os.getpid()
        assert same(record.result.metrics, pooled[key].result.metrics)  # bit-identical
    killed = [pooled[job.key] for job in cells["kills_itself"].jobs]
    assert [(r.status, r.error) for r in killed] == [("failed", "killed by signal 9 (SIGKILL)")] * 3
    assert all("3 seeds batched" in r.traceback and "attempt 2" in r.traceback for r in killed)


def test_workers_end_with_their_driver(registry: Registry, plugins: str, tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads worker processes from /proc (Linux)")
    [job] = [job for job in sweep(registry, ["dense", "sleeps"]) if job.mixer == "sleeps"][:1]
    (tmp_path / "job.pickle").write_bytes(pickle.dumps(job))
    driver = DRIVER.format(job=str(tmp_path / "job.pickle"), plugins=plugins)
    (tmp_path / "driver.py").write_text(driver)
    sleeping = Path(plugins).parent / "sleeping.marker"
    sleeping.unlink(missing_ok=True)
    # a driver process of its own: killing it is what this test is about
    process = subprocess.Popen([sys.executable, str(tmp_path / "driver.py")])
    try:
        assert wait_for(sleeping.exists, 60), "the worker never started the sleeping job"
        workers = [pid for pid in children(process.pid) if b"spawn_main" in cmdline(pid)]
    finally:
        process.kill()  # the driver alone: its worker is in another job's sleep(600)
        process.wait()
    assert len(workers) == 1
    try:
        assert wait_for(lambda: not alive(workers[0]), 10), "the worker outlived its driver"
    finally:
        if alive(workers[0]):
            os.kill(workers[0], signal.SIGKILL)


def test_bad_requests_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--timeout needs a job process"):
        check_executor(RunSettings(executor="local", timeout=5))
    with pytest.raises(UsageError, match="valid: local, process, ray"):
        check_executor(RunSettings(executor="threads", jobs=2))
    with pytest.raises(UsageError, match="--address is for --executor ray"):
        check_executor(RunSettings(executor="process", jobs=2, address="127.0.0.1:6379"))


def wait_for(condition, seconds: float):
    """Poll ``condition`` until it returns something true or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return condition()


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_exit_reasons() -> None:
    from benchsuite.execute.pool import exit_reason

    assert exit_reason(-signal.SIGKILL) == "killed by signal 9 (SIGKILL)"
    assert exit_reason(3) == "worker exited with code 3"
