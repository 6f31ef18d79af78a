"""``benchsuite new-mixer``: write an installable mixer plugin distribution from templates.

The templates (``benchsuite/registry/templates/*.tmpl``, package data) use ``string.Template``
fields: ``$name`` (the mixer), ``$module`` (``benchsuite_<name>``), ``$distribution``
(``benchsuite-<name>``) and ``$benchsuite_version``.
"""

from __future__ import annotations

import re
import string
from importlib.resources import files
from pathlib import Path

from benchsuite.errors import UsageError
from benchsuite.specs import provenance

NAME = re.compile(r"[a-z][a-z0-9_]*")

FILES = {  # template -> path in the new folder (formatted with the template fields)
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "mixer.py.tmpl": "{module}.py",
    "test_mixer.py.tmpl": "tests/test_{name}.py",
}


def check_name(name: str) -> None:
    """Refuse a name that is not lowercase identifier-like or that a loaded plugin already uses."""
    if not NAME.fullmatch(name):
        raise UsageError(
            f"mixer name {name!r}: use lowercase letters, digits and underscores, "
            "starting with a letter (e.g. gated_mix)"
        )
    from benchsuite.registry import load_registry

    taken = load_registry().mixers.get(name)
    if taken is not None:
        raise UsageError(
            f"mixer {name!r} already exists (from {provenance(taken)}); choose another name"
        )


def new_mixer(name: str, path: Path | str = ".") -> Path:
    """Write the plugin distribution ``<path>/benchsuite-<name>/`` and return its folder.

    It holds ``pyproject.toml`` (entry point ``<name> = "benchsuite_<name>"``), the module
    ``benchsuite_<name>.py`` with a documented ``build`` and its hook, ``tests/test_<name>.py``
    running the contract kit, and a README with the next commands.
    """
    from benchsuite.version import __version__

    check_name(name)
    folder = Path(path) / f"benchsuite-{name}"
    if folder.exists():
        raise UsageError(f"{folder} already exists; choose another name or --path")
    fields = {
        "name": name,
        "module": f"benchsuite_{name}",
        "distribution": f"benchsuite-{name}",
        "benchsuite_version": __version__,
    }
    templates = files("benchsuite.registry") / "templates"
    for template, target in FILES.items():
        text = string.Template((templates / template).read_text()).substitute(fields)
        destination = folder / target.format(**fields)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text)
    return folder
