"""The lowest declared versions of pyproject.toml's dependencies, for ``make test-min``.

``python .ci/floors.py`` prints pip requirements pinning every dependency and the ``parquet``
extra to their lower bounds (``name>=X`` -> ``name==X``; torch and torchvision left out: the floor
venv shares the main venv's), then the test extra as declared. ``--check`` exits 1 unless the
running environment has exactly those floor versions installed, so the floor tests cannot silently
run on newer ones.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.version import Version

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"
SHARED = {"torch", "torchvision"}  # taken from the main venv, not installed at their floor


def floors() -> dict[str, str]:
    """Each dependency's lowest declared version, by distribution name."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    found = {}
    for requirement in project["dependencies"] + project["optional-dependencies"]["parquet"]:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
        if name.lower() in SHARED:
            continue
        low = re.search(r">=\s*([^,;\s]+)", requirement)
        if low is None:
            sys.exit(f"{PYPROJECT}: dependency {requirement!r} declares no lower bound (>=)")
        found[name] = low.group(1)
    return found


def check() -> int:
    """0 when every floor is what is installed, else 1 with one line per difference."""
    wrong = []
    for name, low in floors().items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = "not installed"
        if installed == "not installed" or Version(installed) != Version(low):
            wrong.append(f"{name}: floor {low}, installed {installed}")
    print("\n".join(wrong) or f"every dependency at its floor: {', '.join(floors())}")
    return 1 if wrong else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(check())
    test = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["test"]
    print("\n".join([f"{name}=={low}" for name, low in floors().items()] + test))
