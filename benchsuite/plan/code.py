"""Which code a job runs, as digests: a cached result is reused only while that code is unchanged.

A job runs benchsuite's training path, its track's plugin module and its mixer's plugin module, and
every module those import — at module level or inside functions — from benchsuite, from the
plugin's own top-level package, or from the plugin's own folder (a ``--plugins-dir`` file). The
closure is found by reading import statements (``ast``) without importing anything new; imports
under ``if TYPE_CHECKING:`` are not followed. Each module is hashed by its syntax tree, so comments
and formatting never re-run a job, while any change to code or docstrings does. Third-party
packages are covered by their versions in the job's fingerprint, not by their source. Modules
imported by computed names (``importlib.import_module(variable)``) cannot be seen: import helpers
by name, or give ``Mixer.build`` as a ``"module:attribute"`` string (that module is followed).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib.machinery import ModuleSpec
from pathlib import Path

from benchsuite.registry.plugins import syntax_digest

TRAINING_PATH = "benchsuite.train.job"


@lru_cache(maxsize=4096)
def _spec(name: str) -> ModuleSpec | None:
    """The import spec of module ``name``, or None when it is no module (an attribute named in
    ``from module import name``, or not found).

    ``find_spec`` imports the parent of a dotted name, so a name is looked up only under a parent
    that is a package: a parent that is a plain module (``benchsuite.train.fit``, which imports
    torch) is never imported here.
    """
    parent = name.rpartition(".")[0]
    if parent:
        parent_spec = _spec(parent)
        if parent_spec is None or parent_spec.submodule_search_locations is None:
            return None
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None


def _spec_origin(name: str) -> Path | None:
    """The source file of module ``name``, or None (not found, not Python source)."""
    spec = _spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


@lru_cache(maxsize=4096)
def _folder(path: Path) -> Path:
    """The resolved folder of a file."""
    return path.resolve().parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imported_names(name: str, path: Path, tree: ast.AST) -> set[str]:
    """Module names a module may import at run time (candidates; unresolvable ones are dropped)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            module, colon, attribute = node.value.partition(":")
            if colon and attribute.isidentifier() and module.replace(".", "").isidentifier():
                found.add(module)  # a "module:attribute" build string
    # a dotted import also runs its parent packages
    parents = {".".join(n.split(".")[:i]) for n in found for i in range(1, n.count(".") + 1)}
    return {n for n in found | parents if n}


@lru_cache(maxsize=4096)
def _read(name: str, path: Path, mtime_ns: int) -> tuple[str, frozenset[str]]:
    """A module's digest (of its syntax tree) and the names it may import; cached per file
    version, since a plan asks for the same modules once per cell."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    return syntax_digest(tree), frozenset(_imported_names(name, path, tree))


def closure(roots: Mapping[str, Path], follow: Iterable[str] = ()) -> dict[str, str]:
    """``{module: digest}`` of ``roots`` and every module they import, transitively, that lies
    under a followed top-level package (``benchsuite``, the roots' own, and ``follow``) or in the
    folder of a root's file."""
    tops = {"benchsuite", *follow, *(name.split(".")[0] for name in roots)}
    folders = {path.parent.resolve() for path in roots.values()}
    todo = dict(roots)
    digests: dict[str, str] = {}
    while todo:
        name, path = todo.popitem()
        if name in digests:
            continue
        digest, imports = _read(name, path, path.stat().st_mtime_ns)
        digests[name] = digest
        for imported in imports:
            if imported in digests or imported in todo:
                continue
            top = imported.split(".")[0]
            local = _spec_origin(top) if top not in tops else None
            if top not in tops and (local is None or _folder(local) not in folders):
                continue
            origin = _spec_origin(imported)
            if origin is not None:
                todo[imported] = origin
    return dict(sorted(digests.items()))


def module_source(name: str, file: str | None = None) -> dict[str, Path]:
    """``{name: file}`` for a module (found by name unless its ``file`` is given); empty when it
    has no Python source."""
    origin = Path(file) if file else _spec_origin(name)
    return {name: origin} if origin and origin.suffix == ".py" and origin.is_file() else {}


def combined_digest(*closures: Mapping[str, str]) -> str:
    """One digest of the union of several closures."""
    union: dict[str, str] = {}
    for found in closures:
        union.update(found)
    payload = "\n".join(f"{name} {digest}" for name, digest in sorted(union.items()))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def changed_modules(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Modules added, removed or edited between two closures."""
    return sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
