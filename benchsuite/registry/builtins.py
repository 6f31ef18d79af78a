"""The mixers and tracks that ship with benchsuite, registered in code through the same hooks as
any plugin (as llm registers its default plugins): they need no entry point, so a source
checkout that is not installed has them too.

Their modules are ``benchsuite.mixers.*`` and ``benchsuite.tracks.*``. An installed benchsuite
(a wheel or ``pip install -e``) maps the repository's ``plugins/`` and ``tracks/`` folders there
(pyproject's package-dir); a source checkout that is only on ``sys.path`` gets the same mapping
from :func:`load` on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

MIXERS = (
    "dense",
    "attention",
    "butterfly",
    "mlp",
    "fnet",
    "monarch",
    "pooling",
    "longconv",
    "ssm",
    "identity",
    "random",
    "mamba",
    "gla",
    "deltanet",
    "gated_deltanet",
    "retnet",
    "sliding_window",
    "based",
    "fla",
)
TRACKS = ("sequence", "vision", "tabular", "dynamics", "mad")
# each built-in package and the repository folder it is made from
FOLDERS = {"benchsuite.mixers": "plugins", "benchsuite.tracks": "tracks"}


def modules() -> dict[str, str]:
    """Every built-in plugin's name and module, by name (the order plugins load in, as when
    they were entry points: the default suite's order follows from it)."""
    found = {name: f"benchsuite.mixers.{name}" for name in MIXERS}
    found.update({name: f"benchsuite.tracks.{name}" for name in TRACKS})
    return dict(sorted(found.items()))


def load(module: str) -> ModuleType:
    """Import the built-in plugin ``module``, first mapping its package to the repository's
    folder when benchsuite runs from a source checkout that is not installed."""
    package = module.rpartition(".")[0]
    if package not in sys.modules and importlib.util.find_spec(package) is None:
        _from_checkout(package)
    return importlib.import_module(module)


def _from_checkout(package: str) -> None:
    """Make ``package`` the checkout's folder for it (``plugins/`` or ``tracks/`` beside the
    ``benchsuite/`` folder); without such a folder the import that follows fails as usual."""
    folder = Path(__file__).resolve().parents[2] / FOLDERS[package]
    spec = importlib.util.spec_from_file_location(
        package, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None or not (folder / "__init__.py").is_file():
        return
    sys.modules[package] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
