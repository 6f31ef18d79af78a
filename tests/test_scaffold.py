"""``new_mixer`` writes a plugin that installs, lists, runs and passes its own tests."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import uuid

import pytest

from benchsuite import UsageError
from benchsuite.registry.scaffold import new_mixer
from benchsuite.testing import check_mixer, collect_mixers


def unique_name() -> str:
    return f"scaffold{uuid.uuid4().hex[:8]}"


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    # subprocesses: pip (un)installs, the plugin's own pytest, and the CLI after an editable
    # install, whose .pth only a fresh interpreter reads
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSUITE_")}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.parametrize("name", ["Foo", "1mix", "my-mix", "", "dense"])
def test_new_mixer_refuses_bad_or_taken_names(tmp_path, name):
    with pytest.raises(UsageError, match=repr(name)):
        new_mixer(name, tmp_path)
    assert not any(tmp_path.iterdir())


def test_new_mixer_refuses_an_existing_folder(tmp_path):
    (tmp_path / "benchsuite-taken").mkdir()
    with pytest.raises(UsageError, match="already exists"):
        new_mixer("taken", tmp_path)


def test_new_mixer_writes_a_distribution_whose_mixer_passes_the_contract(tmp_path):
    name = unique_name()
    folder = new_mixer(name, tmp_path)
    assert folder == tmp_path / f"benchsuite-{name}"
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["benchsuite"] == {name: f"benchsuite_{name}"}
    assert any(dep.startswith("benchsuite") for dep in project["dependencies"])
    assert (folder / "tests" / f"test_{name}.py").is_file()
    assert f"--mixers dense,{name}" in (folder / "README.md").read_text()
    spec = importlib.util.spec_from_file_location("scaffolded", folder / f"benchsuite_{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (mixer,) = collect_mixers(module)
    assert mixer.name == name and mixer.build.__doc__
    check_mixer(mixer)


@pytest.fixture
def installed(tmp_path):
    """A scaffolded plugin, installed editable into this venv and uninstalled afterwards."""
    name = unique_name()
    folder = new_mixer(name, tmp_path)
    try:
        run(
            "-m",
            "pip",
            "install",
            "-q",
            "-e",
            str(folder),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
        )
        yield name, folder
    finally:
        run("-m", "pip", "uninstall", "-y", "-q", f"benchsuite-{name}")


@pytest.mark.slow
def test_scaffolded_plugin_installs_lists_runs_and_passes_its_tests(installed, tmp_path):
    name, folder = installed
    listed = json.loads(run("-m", "benchsuite.cli", "list", "--json").stdout)
    assert listed["mixers"][name]["distribution"].startswith(f"benchsuite-{name} ")

    out = tmp_path / "out"
    run(
        "-m",
        "benchsuite.cli",
        "run",
        "--tracks",
        "sequence",
        "--mixers",
        f"dense,{name}",
        "--seeds",
        "2",
        "--grid",
        "sequence.lr=0.01,0.03",
        "--budget",
        "steps=20",
        "--executor",
        "local",
        "--track-option",
        "sequence.series=24",
        "--out",
        str(out),
    )
    result = json.loads((out / "sequence" / f"{name}.json").read_text())
    assert result["idea"]["name"] == name and result["baseline"]["name"] == "dense"
    assert len(result["idea"]["per_seed"]) == 2

    tests = run("-m", "pytest", "-v", "-p", "no:cacheprovider", cwd=folder)
    assert "test_registered_through_the_entry_point PASSED" in tests.stdout
    assert "test_contract[gradients] PASSED" in tests.stdout
