"""The house rules of benchsuite/, read from its source: stages import only the stages before
them (imports inside functions count), no import cycle, small folders, and a plugin author's
import surface that is exactly what the docs point to and never imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import benchsuite

PACKAGE = Path(benchsuite.__file__).parent
# Each stage may import the ones before it (and itself); the package's __init__ is the facade.
STAGES = (
    "base",
    "protocol",
    "kit",
    "registry",
    "plan",
    "train",
    "store",
    "execute",
    "results",
    "output",
    "commands",
    "top",
)
BASE = {
    "errors",
    "disk",
    "measures",
    "specs",
    "budget",
    "seeds",
    "paths",
    "hookspecs",
    "settings",
    "contract_settings",
    "vocabulary",
    "records",
    "version",
    "selection",
    "events",
    "serial",
}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """benchsuite modules ``name`` imports anywhere in its body (TYPE_CHECKING blocks too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
                elif base in known:
                    found.add(base)
    return found - {name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def stage(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) == 1:
        return None  # the facade
    if parts[1] in STAGES:
        return STAGES.index(parts[1])
    return 0 if parts[1] in BASE else STAGES.index("top")


def test_no_import_cycle():
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_stages_import_only_the_stages_before_them():
    wrong = [
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if stage(name) is not None and stage(target) is not None and stage(target) > stage(name)
    ]
    assert not wrong


def test_no_module_imports_the_facade_and_output_reaches_neither_execute_nor_plan():
    """The facade (``benchsuite``, the plugin author's surface) is imported by plugins and
    users, never by the package itself (an arrow back up); the output stage is fed plain data
    and events (benchsuite.events), not the run's machinery or its plan."""
    edges = graph()
    assert [name for name, targets in edges.items() if "benchsuite" in targets] == []
    reaching = [
        f"{name} -> {target}"
        for name, targets in edges.items()
        if name.startswith("benchsuite.output.")
        for target in targets
        if target.split(".")[1] in ("execute", "plan")
    ]
    assert reaching == []


def test_no_folder_holds_more_than_20_python_modules():
    """A smoke alarm, not the architect: folders are concepts (docs/architecture.md), and one
    that outgrows 20 modules probably holds two."""
    for folder in [PACKAGE, *[p for p in PACKAGE.rglob("*") if p.is_dir()]]:
        assert len(list(folder.glob("*.py"))) <= 20, folder


def test_the_plugin_author_surface_is_what_the_docs_name_and_imports_no_torch():
    assert set(benchsuite.__all__) == {
        "ISOMETRY",
        "Budget",
        "ForecastTrack",
        "LastToken",
        "MeanPool",
        "Metric",
        "Mixer",
        "Option",
        "PluginError",
        "PositionalTokens",
        "Signature",
        "Streams",
        "Track",
        "TrackData",
        "UsageError",
        "__version__",
        "embed_tokens",
        "hookimpl",
        "lr_grid",
        "wrap",
        "create_mixer",
        "list_mixers",
    }
    from benchsuite.kit import layers  # the shared layers: resolved on first use, with torch

    assert all(getattr(benchsuite, name) is getattr(layers, name) for name in benchsuite._LAYERS)
    built_in = [
        *(PACKAGE.parent / "tracks").glob("*.py"),
        *(PACKAGE.parent / "plugins").glob("*.py"),
    ]
    assert not [p.name for p in built_in if "benchsuite.train" in p.read_text()]  # the surface only
    docs = (PACKAGE.parent / "docs" / "writing-a-mixer.md").read_text()
    docs += (PACKAGE.parent / "docs" / "tracks.md").read_text()
    assert all(name in docs for name in benchsuite.__all__ if name != "__version__")
    # a fresh interpreter: this one has imported torch long ago
    code = "import sys, benchsuite; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# Modules of output/ and commands/ that read a document other than the report, by its keys.
OTHER_DOCUMENTS = {
    "benchsuite.output.scaling": "scaling.json, benchsuite scale's record",
    "benchsuite.output.listing": "the registry listing and list --costs rows",
    "benchsuite.output.progress": "the design check of plan/design.py and the run's events",
    "benchsuite.commands.scale": "scaling.json, benchsuite scale's record",
    "benchsuite.commands.scale_points": "a point of scaling.json, measured in the pool",
    "benchsuite.commands.scale_settings": "the settings block of scaling.json",
    "benchsuite.commands.costs": "list --costs rows",
    "benchsuite.commands.export": "the store's records, exported row by row",
}


def string_keys(path: Path) -> list[tuple[int, str]]:
    """(line, key) of every ``x["key"]`` and ``x.get("key", ...)`` in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            key = node.args[0].value
        else:
            continue
        if isinstance(key, str):
            found.append((node.lineno, key))
    return found


def test_output_and_commands_read_the_report_by_attribute():
    """output/ and commands/ read the typed report (results/schema.py): no report dict indexed
    by a string key; the modules that read another document say which."""
    checked = {
        name: path
        for name, path in modules().items()
        if name.split(".")[1:2] in (["output"], ["commands"])
    }
    assert set(OTHER_DOCUMENTS) <= set(checked)
    keyed = [
        f"{name}:{line} [{key!r}]"
        for name, path in checked.items()
        if name not in OTHER_DOCUMENTS
        for line, key in string_keys(path)
    ]
    assert not keyed


def test_the_check_sees_string_keys(tmp_path):
    """The check above can fail: both ways of reading a dict by its key are found."""
    sample = tmp_path / "sample.py"
    sample.write_text('v = report["tracks"]\nw = entry.get("comparisons", {})\nx = rows[key]\n')
    assert string_keys(sample) == [(1, "tracks"), (2, "comparisons")]


def test_no_module_is_over_500_lines():
    """A smoke alarm for a module holding two ideas, not the architect (500 formatter-style
    lines: the cap was 400 when a third of the lines were hand-packed under ``# fmt: skip``)."""
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text().splitlines())) > 500
    }
    assert not long


def test_every_package_folder_is_in_the_distribution():
    """pyproject.toml lists the packages explicitly (the built-ins are remapped from plugins/ and
    tracks/): a new folder of the package left out would be missing from a wheel."""
    import tomllib

    listed = set(
        tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"][
            "packages"
        ]
    )
    folders = {
        ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        for path in PACKAGE.rglob("__init__.py")
    }
    assert folders <= listed, folders - listed


def test_no_test_module_imports_another_or_conftest():
    """Test modules import what they share from ``helpers`` (or ``data_files``): never from
    ``conftest`` (pytest's plugin, whose fixtures they get by name) nor from another test
    module."""
    folder = Path(__file__).parent
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.name}: {name}"
                for name in names
                if name == "conftest" or name.startswith("test_")
            ]
    assert found == []
