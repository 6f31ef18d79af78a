"""Shared fixtures and helpers: an isolated cache folder, one torch thread, the built-in registry
and its mixers, the real CLI in this process (``invoke``) or, where the process itself is the
subject, in a subprocess (``run_cli``), and ``finished_run``: one small real run that the report,
HTML, export, schema, flag, table, verdict and statistics tests read, trained once per test run."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

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
REPORT_TRACKS = ("sequence", "sequence_b")
REPORT_MIXERS = ("dense", "butterfly", "attention", "broken", "picky")
REPORT_SHAPE = ("series=24", "length=64", "horizon=2")


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
