"""What the test modules share besides fixtures: the real CLI in this process (``invoke``) or in
a subprocess (``run_cli``), the tiny budget (``TINY``), the built-in mixers and tracks, a stored
run read back (``stored_run``), an HTML page's parts (``Page``), the stopping rule's settings and
jobs. Test modules import these from here, never from ``conftest`` or from one another
(docs/testing.md)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchsuite.records import Job
    from benchsuite.registry import Registry

# Small enough that a whole run takes seconds, large enough that models really train.
TINY = [
    "--budget",
    "steps=30",
    "--grid",
    "sequence.lr=0.01,0.03",
    "--track-option",
    "sequence.series=24",
    "--track-option",
    "sequence.length=64",
]


def built_in_mixers() -> list[str]:
    """The names of the mixers the package itself registers (read at collection: no torch)."""
    from benchsuite.registry import load_registry

    mixers = load_registry().mixers.values()
    return sorted(m.name for m in mixers if m.module.startswith("benchsuite."))


def default_tracks() -> list[str]:
    """The tracks a run takes by default: those with a quick budget (read at collection)."""
    from benchsuite.registry import load_registry

    return sorted(n for n, t in load_registry().tracks.items() if "quick" in t.budgets)


def built_in(name: str):
    """The built-in Mixer ``name``, from its own module's hook."""
    from benchsuite.testing import collect_mixers

    (mixer,) = collect_mixers(importlib.import_module(f"benchsuite.mixers.{name}"))
    assert mixer.name == name
    return mixer


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    """Run ``benchsuite ARGS`` as a user would; returns the CompletedProcess (text)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=600,
    )


class _Stream(io.TextIOWrapper):
    """A captured standard stream with a ``buffer`` (export writes bytes) that is no terminal."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8")


@contextlib.contextmanager
def _environment(changes: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``changes``, restored afterwards (with whatever the command set)."""
    saved = dict(os.environ)
    os.environ.update(changes)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def invoke(*args: str, env: dict | None = None, cwd: Path | None = None):
    """Run ``benchsuite ARGS`` in this process through ``main(argv)``, as ``run_cli`` does in a
    subprocess: returns a CompletedProcess with the exit code and the captured text. The torch
    thread count a run sets for its jobs is restored afterwards."""
    from benchsuite.cli import main

    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch else None
    stdout, stderr = _Stream(), _Stream()
    with (
        _environment({"COLUMNS": "200", **(env or {})}),
        contextlib.chdir(cwd or Path.cwd()),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse: --help, --version, usage errors
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
            if isinstance(exit_.code, str):  # as the interpreter prints sys.exit("message")
                print(exit_.code, file=sys.stderr)
    if torch is not None:
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess(list(args), code, stdout.text(), stderr.text())


def interruptible() -> None:
    """In a child process, before exec: Ctrl-C at its default, so Python turns it into
    KeyboardInterrupt even when this test run inherited SIGINT ignored (a background job of a
    non-interactive shell does; Python then keeps ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


REPORT_TRACKS = ("sequence", "sequence_b")
REPORT_MIXERS = ("dense", "butterfly", "attention", "broken", "picky")
REPORT_SHAPE = ("series=24", "length=64", "horizon=2")


def copy_run(out: Path, target: Path) -> Path:
    """A copy of the output folder ``out`` at ``target``, to change without touching a shared
    run: its SQLite's transient ``-wal``/``-shm`` files are left out (another test reading the
    shared run opens and removes them while the copy walks the folder)."""
    shutil.copytree(out, target, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    return target


def stored_run(out: Path) -> tuple:
    """A finished run's plan and its stored records, read back from its store (to change and
    re-analyse)."""
    from benchsuite.plan.plan import Plan
    from benchsuite.store.store import Store

    store = Store(out / "benchsuite.sqlite")
    try:
        plan = Plan.from_dict(store.last_plan())
        return plan, store.results(plan.keys())
    finally:
        store.close()


class Page(HTMLParser):
    """The parts of a page the tests look at: tags, attributes, table cells, heading ids."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.headings: dict[str, str] = {}
        self.cells: list[str] = []
        self._heading: str | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v or "") for k, v in attrs]
        if tag == "h2":
            self._heading = dict(attrs).get("id", "")
            self.headings[self._heading] = ""
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "h2":
            self._heading = None
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._heading is not None:
            self.headings[self._heading] += data
        if self._cell is not None:
            self._cell.append(data)


# the stopping rule's settings and jobs (tests/test_stopping.py, tests/test_schedule.py)
RULE = {"eval_every": 10, "patience": 2, "min_delta": 0.01, "checkpoint": "best"}
# not the preset's (which also halves the grid: halvings need validation checks)
NO_RULE = {"eval_every": 0, "patience": 0, "min_steps": 0, "checkpoint": "last", "halve_at": "none"}
SEQUENCE = {"series": 24, "length": 64}


def a_job(track: str = "sequence", mixer: str = "dense", seed: int = 0) -> Job:
    """A job that names a cell and a seed (for records whose training does not matter)."""
    from benchsuite.budget import Budget
    from benchsuite.records import Job

    budget = Budget(steps=1, batch_size=1, dim=1, depth=1, grid=())
    return Job(track, mixer, seed, (), "quick", budget, {}, {}, None, 1, "cpu", "test")


def jobs_of(registry: Registry, mixer: str, budget: dict, seeds: int = 2) -> list[Job]:
    """The jobs of ``mixer`` on a small sequence track under ``budget`` (fnet the baseline)."""
    from benchsuite.plan.jobs import cell_jobs, grid_of
    from benchsuite.plan.resolve import resolve
    from benchsuite.settings import RunSettings

    settings = resolve(
        RunSettings(
            tracks=("sequence",),
            mixers=(mixer,),
            baseline="fnet",
            seeds=seeds,
            budget={"steps": 200, **NO_RULE, **budget},
            track_options={"sequence": SEQUENCE},
            grids={"sequence": {"lr": (0.001, 0.01, 0.1)}},
        ),
        registry,
    )
    track, mixer_ = registry.tracks["sequence"], registry.mixers[mixer]
    return cell_jobs(settings, track, mixer_, grid_of(track, settings), "test-data")


def exact_steps(n: int) -> list[str]:
    """``TINY`` with every config training exactly ``n`` steps (no early stop, no halving)."""
    return [*TINY, *[f"--budget={b}" for b in (f"steps={n}", f"min_steps={n}", "halve_at=none")]]


def stored_rows(out: Path, table: str = "results") -> int:
    """Rows committed to a table of the run's store in ``out`` (0 while it has none): its
    results, or its plans (``runs``: one is saved as training starts). Read-only, so a run
    writing it is not disturbed."""
    path = out / "benchsuite.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


# Track options small enough for jobs trained in a test (stacked or alone) to take seconds.
STACK_DATA = {"sequence": {"series": 24, "length": 64}, "dynamics": {}}


def seed_jobs(
    registry: Registry, track: str, mixer: str, seeds: int = 3, steps: int = 30
) -> list[Job]:
    """A cell's jobs on small data (the baseline dense, or fnet when the mixer is dense), two
    configs of the learning rate, ``steps`` steps each."""
    from benchsuite.plan.jobs import cell_jobs, grid_of
    from benchsuite.plan.resolve import resolve
    from benchsuite.settings import RunSettings

    settings = RunSettings(
        tracks=(track,),
        mixers=(mixer,),
        baseline="dense" if mixer != "dense" else "fnet",
        seeds=seeds,
        budget={"steps": steps},
        track_options={track: STACK_DATA[track]},
        grids={track: {"lr": (0.003, 0.03)}},
    )
    settings = resolve(settings, registry)
    track_, mixer_ = registry.tracks[track], registry.mixers[mixer]
    return cell_jobs(settings, track_, mixer_, grid_of(track_, settings), "test-data")


def parts(registry: Registry, jobs: list[Job]) -> tuple:
    """The track and mixer objects of a cell's jobs."""
    return registry.tracks[jobs[0].track], registry.mixers[jobs[0].mixer]
