"""Start-up stays light: the bare CLI and every verb's help import neither torch nor numpy,
and ``benchsuite list`` does not import torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchsuite.cli import COMMANDS

PROBE = (
    "import contextlib, io, json, sys\n"
    "import benchsuite.cli as cli\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try:\n"
    "        cli.main({args!r})\n"
    "    except SystemExit:\n"
    "        pass\n"
    "print(json.dumps(sorted(m for m in ('torch', 'numpy') if m in sys.modules)))\n"
)


LIGHT = [
    ["--help"],
    [],
    ["--version"],
    *([verb, "--help"] for verb in COMMANDS),
    ["data", "fetch", "--help"],
]


@pytest.mark.parametrize("args", LIGHT)
def test_light_commands_import_neither_torch_nor_numpy(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr


def test_plugin_surface_imports_neither_torch_nor_numpy() -> None:
    code = "import sys, benchsuite; print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_list_does_not_import_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=["list"])], capture_output=True, text=True
    )
    assert "torch" not in json.loads(done.stdout.strip().splitlines()[-1]), done.stderr
