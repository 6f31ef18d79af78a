"""Plugin discovery: entry points of a separately installed distribution, a plugins folder,
failures that are reported and not fatal, duplicates that are a clear error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from helpers import TINY, invoke

from benchsuite.errors import PluginError, RunError
from benchsuite.events import Events
from benchsuite.registry import load_registry

# also run at the lowest declared dependency versions (make test-min)
pytestmark = pytest.mark.floors

SHIFT_MIXER = """
from benchsuite import Mixer, Option, hookimpl


def build(tokens, dim, shift=1):
    import torch
    from torch import nn

    class Shift(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return torch.roll(x, shifts=shift, dims=1) * self.scale

    return Shift()


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="{name}", build=build, description="roll tokens by one",
                   options=(Option("shift", int, 1, "positions"),)))
"""


def write_plugin(folder: Path, stem: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_builtins_register_in_code_through_the_hooks():
    registry = load_registry()
    assert {"dense", "attention", "butterfly"} <= set(registry.mixers)
    assert "sequence" in registry.tracks
    dense = registry.mixers["dense"]
    assert dense.distribution == "benchsuite" and dense.version
    assert dense.module == "benchsuite.mixers.dense" and dense.plugin == "dense"
    assert dense.module_file.endswith("dense.py")
    origins = {p.name: p.origin for p in registry.plugins}
    assert origins["dense"] == "built-in module benchsuite.mixers.dense"
    assert not [ep for ep in entry_points(group="benchsuite") if ep.dist.name == "benchsuite"]


def test_a_source_checkout_that_is_not_installed_has_the_built_ins(tmp_path):
    """benchsuite, plugins/ and tracks/ copied out of the repository and run from there with no
    installed benchsuite in sight (``-S``: no site hooks, so no editable install's finder; the
    third-party packages come from PYTHONPATH): the built-ins load from the copy's folders."""
    root = Path(__file__).parent.parent
    for folder in ("benchsuite", "plugins", "tracks"):
        shutil.copytree(
            root / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    code = (
        "import sys, benchsuite; mixer = benchsuite.create_mixer('mamba', 64, 32); "
        "print(sys.modules[type(mixer).__module__].__file__); "
        "print(benchsuite.list_mixers('*delta*'))"
    )
    # This interpreter's own path minus the repository: -S skips .pth files, and CI's floors
    # environment finds torch through one (a second site-packages).
    third_party = [entry for entry in sys.path if entry and Path(entry).resolve() != root.resolve()]
    path = os.pathsep.join([str(tmp_path), *third_party])
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(tmp_path / "plugins" / "mamba.py"),
        "['deltanet', 'gated_deltanet']",
    ]


def test_plugins_dir_mixer_is_listed_and_runs(tmp_path):
    plugins = tmp_path / "plugins"
    write_plugin(plugins, "shift", SHIFT_MIXER.format(name="shift"))
    listed = invoke("--plugins-dir", str(plugins), "list", "--json")
    assert listed.returncode == 0, listed.stderr
    mixers = json.loads(listed.stdout)["mixers"]
    assert mixers["shift"]["distribution"] == "plugins-dir"
    assert mixers["shift"]["options"]["shift"]["default"] == 1

    out = tmp_path / "out"
    ran = invoke(
        "--plugins-dir",
        str(plugins),
        "run",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,shift",
        "--seeds",
        "2",
        "--out",
        str(out),
        *TINY,
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads((out / "sequence" / "shift.json").read_text())
    assert result["idea"]["name"] == "shift" and len(result["idea"]["per_seed"]) == 2


def test_a_plugin_that_grows_the_default_suite_is_announced(tmp_path):
    """Without ``--mixers`` the suite runs every mixer there is: one a plugin added is named in
    a note before the run, and a run that names its mixers gets no such note."""
    from benchsuite.api import prepare
    from benchsuite.events import Events
    from benchsuite.settings import RunSettings

    plugins = tmp_path / "plugins"
    write_plugin(plugins, "shift", SHIFT_MIXER.format(name="shift"))
    notes: list[str] = []
    events = Events(note=notes.append)
    base = {"tracks": ("sequence",), "plugins_dir": str(plugins), "out": str(tmp_path / "o")}
    resolved, _, _ = prepare(RunSettings(**base), events=events)
    assert "shift" in resolved.mixers and len(resolved.mixers) > 2
    (note,) = [n for n in notes if "installed plugins" in n]
    assert note.startswith("the default suite includes 1 mixer(s) from installed plugins: shift")
    notes.clear()
    prepare(RunSettings(**base, mixers=("dense", "shift")), events=events)
    assert not [n for n in notes if "installed plugins" in n]


def test_installed_distribution_entry_point_is_listed_and_runs(tmp_path, monkeypatch):
    project = tmp_path / "benchsuite-rollmix"
    write_plugin(project / "benchsuite_rollmix", "__init__", SHIFT_MIXER.format(name="rollmix"))
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "benchsuite-rollmix"
        version = "0.3.1"
        [project.entry-points.benchsuite]
        rollmix = "benchsuite_rollmix"
    """)
    )
    target = tmp_path / "site"
    # pip stays a subprocess: installing a distribution is what this test is about
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(project),
        ],
        check=True,
        capture_output=True,
    )
    # the folder is on this process's path (entry points are found there) and on the spawned
    # workers' (PYTHONPATH)
    monkeypatch.syspath_prepend(str(target))
    env = {"PYTHONPATH": str(target)}
    listed = invoke("list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["mixers"]["rollmix"]["distribution"] == (
        "benchsuite-rollmix 0.3.1"
    )
    out = tmp_path / "out"
    ran = invoke(
        "run",
        "--tracks",
        "sequence",
        "--mixers",
        "dense,rollmix",
        "--seeds",
        "2",
        "--out",
        str(out),
        *TINY,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    assert (out / "sequence" / "rollmix.json").exists()


def test_broken_plugins_are_reported_and_the_rest_loads(tmp_path):
    write_plugin(tmp_path, "broken_import", "import not_a_real_module_xyz\n")
    write_plugin(
        tmp_path,
        "raising_hook",
        """
        from benchsuite import hookimpl

        @hookimpl
        def benchsuite_register_mixers(register):
            raise RuntimeError("hook exploded")
    """,
    )
    write_plugin(
        tmp_path,
        "wrong_kind",
        """
        from benchsuite import hookimpl

        @hookimpl
        def benchsuite_register_mixers(register):
            register("not a mixer")
    """,
    )
    write_plugin(
        tmp_path,
        "typo_hook",
        """
        from benchsuite import hookimpl

        @hookimpl
        def benchsuite_register_mixer(register):
            pass
    """,
    )
    write_plugin(tmp_path, "good", SHIFT_MIXER.format(name="good"))
    registry = load_registry(str(tmp_path))
    reasons = {f.name: f.reason for f in registry.failures}
    assert "ModuleNotFoundError" in reasons["broken_import"]
    assert "hook exploded" in reasons["raising_hook"]
    assert "expected a Mixer" in reasons["wrong_kind"]
    assert "benchsuite_register_mixer" in reasons["typo_hook"]
    assert "good" in registry.mixers and "dense" in registry.mixers

    shown = invoke("--plugins-dir", str(tmp_path), "plugins")
    assert shown.returncode == 0
    assert "broken_import" in shown.stdout and "hook exploded" in shown.stdout


def test_duplicate_mixer_names_name_both_sources(tmp_path):
    write_plugin(tmp_path, "another_dense", SHIFT_MIXER.format(name="dense"))
    with pytest.raises(
        PluginError, match=r"'dense' is registered twice.*benchsuite.*another_dense"
    ):
        load_registry(str(tmp_path))
    listed = invoke("--plugins-dir", str(tmp_path), "list")
    assert listed.returncode == 2
    assert listed.stderr.count("\n") == 1 and "registered twice" in listed.stderr


def test_load_plugins_variable_restricts_entry_points(monkeypatch):
    monkeypatch.setenv("BENCHSUITE_LOAD_PLUGINS", "dense,sequence")
    registry = load_registry()
    # the entry point `sequence` registers both forecasting tracks of its module
    assert set(registry.mixers) == {"dense"}
    assert set(registry.tracks) == {"sequence", "sequence_long"}


def test_every_hook_has_a_section_in_the_plugin_docs():
    from benchsuite import hookspecs

    docs = (Path(__file__).parent.parent / "docs" / "plugins.md").read_text()
    hooks = [name for name in vars(hookspecs) if name.startswith("benchsuite_")]
    assert hooks
    for name in hooks:
        assert f"### `{name}(" in docs, f"docs/plugins.md has no section for {name}"


def test_trace_hooks_prints_every_hook_call():
    result = invoke("plugins", env={"BENCHSUITE_TRACE_HOOKS": "1"})
    assert result.returncode == 0, result.stderr
    calls = [line for line in result.stderr.splitlines() if "benchsuite_register_" in line]
    # every built-in plugin's hook is called once, through pluggy, and traced
    assert sum("benchsuite_register_mixers" in line for line in calls) >= 11
    assert sum("benchsuite_register_tracks" in line for line in calls) >= 4
    assert "dense" in result.stdout


def test_a_mixer_registered_from_python_trains_with_the_local_executor(tmp_path):
    """No plugin file: the registry given to api.run is the one that trains."""
    from benchsuite import Mixer, api
    from benchsuite.settings import RunSettings

    def build(tokens, dim):
        from torch import nn

        return nn.Linear(dim, dim)  # mixes features, not tokens

    registry = load_registry()
    registry.add(Mixer(name="in_memory", build=build, description="defined in a test"))
    settings = RunSettings(
        tracks=("sequence",),
        mixers=("dense", "in_memory"),
        seeds=2,
        executor="local",
        out=str(tmp_path / "out"),
        budget={"steps": 20},
        grids={"sequence": {"lr": (0.01, 0.03)}},
        track_options={"sequence": {"series": 24, "length": 64}},
    )
    summary = api.run(settings, registry=registry)
    assert summary.failed == 0 and summary.exit_code == 0
    assert summary.report.tracks["sequence"].comparisons["in_memory"].comparison.n == 2
    assert summary.trained == 2 * 2  # 2 mixers x 2 seeds, each tuning over the 2 grid points


def test_a_mixer_registered_from_python_is_named_by_a_process_workers_pre_flight(tmp_path):
    from benchsuite import Mixer, api
    from benchsuite.settings import RunSettings

    def build(tokens, dim):
        from torch import nn

        return nn.Identity()

    registry = load_registry()
    registry.add(Mixer(name="only_here", build=build))
    settings = RunSettings(
        tracks=("sequence",),
        mixers=("dense", "only_here"),
        seeds=2,
        jobs=1,
        out=str(tmp_path / "out"),
        budget={"steps": 10},
        track_options={"sequence": {"series": 24, "length": 64}},
    )
    warnings = []
    with pytest.raises(RunError, match="nothing to compare with the baseline") as raised:
        api.run(settings, registry=registry, events=Events(warning=warnings.append))
    # the pre-flight runs in the worker processes; with nothing left to compare, the error's one
    # line names the cell and its reason (no warning before it says "the rest runs")
    said = str(raised.value)
    assert "sequence/only_here: mixer 'only_here' is not registered in this worker process" in said
    assert "--executor local" in said and warnings == []
