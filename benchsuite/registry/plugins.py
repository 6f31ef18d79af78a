"""Plugin discovery through pluggy: the built-ins (:mod:`benchsuite.registry.builtins`), the
``benchsuite`` entry-point group and a plugins folder.

Every hook is called through pluggy's hook caller, one plugin at a time
(``PluginManager.subset_hook_caller``), so a plugin that fails to import, whose hook raises, or that
registers the wrong kind of object is recorded as a :class:`PluginFailure` (name and one-line
reason) while everything else still loads, and pluggy's tracing sees every call.
Environment:
  ``BENCHSUITE_PLUGINS_DIR``   a folder of ``*.py`` plugins (as ``--plugins-dir``)
  ``BENCHSUITE_LOAD_PLUGINS``  comma-separated built-in or entry-point names to load (empty: none);
                               unset: all
  ``BENCHSUITE_TRACE_HOOKS``   set to 1 to print every hook call (on standard error)
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from benchsuite import hookspecs
from benchsuite.errors import PluginError, UsageError, did_you_mean, one_line
from benchsuite.registry import builtins
from benchsuite.registry.track_variants import TrackPool
from benchsuite.specs import Mixer, Track, provenance
from benchsuite.version import __version__

GROUP = "benchsuite"
HOOKS = {"benchsuite_register_mixers": Mixer, "benchsuite_register_tracks": Track}


@dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin: its name, where it came from, its module and that module's source hash."""

    name: str
    distribution: str
    version: str
    origin: str
    module: str
    file: str
    source_hash: str


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be used, with a one-line reason and the distribution it came from
    (``plugins-dir`` for a file of the plugins folder)."""

    name: str
    origin: str
    reason: str
    distribution: str = ""
    version: str = ""


@dataclass
class Registry:
    """Everything the loaded plugins registered.

    ``add`` registers a mixer or track from Python (for example in a notebook); such an item runs
    with the ``local`` executor, since a fresh worker process only loads installed plugins and the
    plugins folder. A mixer registered with ``unavailable`` set (a missing package or device) is
    kept apart in ``unavailable``: listed with its reason, never run.
    """

    mixers: dict[str, Mixer] = field(default_factory=dict)
    unavailable: dict[str, Mixer] = field(default_factory=dict)
    tracks: dict[str, Track] = field(default_factory=TrackPool)  # variants by name too
    plugins: list[PluginInfo] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tracks = TrackPool(self.tracks)

    def add(self, item: Mixer | Track) -> Mixer | Track:
        """Register ``item`` from Python under plugin ``python``; returns the stamped item."""
        _check_kind(item, Mixer if isinstance(item, Mixer) else Track)
        defined_in = item.build if isinstance(item, Mixer) and callable(item.build) else item
        module = inspect.getmodule(defined_in)
        info = PluginInfo(
            "python",
            "python",
            "",
            "registered from Python",
            getattr(module, "__name__", ""),
            _file_of(module),
            "",
        )
        return _add(self, item, info)

    def check_loaded(self, kind: str, names: Iterable[str]) -> None:
        """A one-line error for an asked ``kind`` ("mixer" or "track") name that is missing while
        a plugin failed to load: the failure that most likely holds it (the plugin of that name,
        else the only failure, unless the name looks like a typo of a loaded one), with its
        reason. Other names pass (the usual "unknown name" check reports them)."""
        pool = self.mixers if kind == "mixer" else self.tracks
        for name in names:
            base = name.partition("[")[0]
            if base in pool or not self.failures:
                continue
            named = [f for f in self.failures if f.name == base]
            alone = len(self.failures) == 1 and not did_you_mean(base, pool)
            failure = named[0] if named else self.failures[0] if alone else None
            if failure is not None:
                if failure.distribution == "plugins-dir":
                    where, origin = "file", failure.origin
                else:  # "entry point MODULE" or "built-in module MODULE"
                    where, _, origin = failure.origin.rpartition(" ")
                raise UsageError(
                    f"unknown {kind} {base!r} — the plugin {where} {origin} failed "
                    f"to load: {failure.reason}"
                )


def _file_of(module: ModuleType | None) -> str:
    try:
        return inspect.getsourcefile(module) or "" if module else ""
    except TypeError:  # a built-in or C module
        return ""


def syntax_digest(tree: ast.AST) -> str:
    """The digest of a module's syntax tree: comments and formatting do not count, code and
    docstrings do. The one code-hashing scheme: a plugin's ``source_hash`` and every module digest
    of a plan's code closures (:mod:`benchsuite.plan.code`)."""
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def _source_hash(path: str) -> str:
    try:
        return syntax_digest(ast.parse(Path(path).read_bytes(), filename=path))
    except (OSError, SyntaxError, ValueError):
        return ""


def _load_file(path: Path) -> ModuleType:
    module_name = f"benchsuite_plugins_dir.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _candidates(plugins_dir: str | None) -> list[tuple[str, str, str, str, Callable[[], Any]]]:
    """(name, distribution, version, origin, loader) for every plugin to try, in a stable order:
    the built-ins, the entry points of installed distributions, the plugins folder."""
    allowed = os.environ.get("BENCHSUITE_LOAD_PLUGINS")
    names = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
    found = []
    own = builtins.modules()
    for name, module in own.items():
        if names is None or name in names:
            load = partial(builtins.load, module)
            found.append((name, "benchsuite", __version__, f"built-in module {module}", load))
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        if names is not None and ep.name not in names:
            continue
        if ep.value in own.values():  # a built-in, as benchsuite 0.1 declared them
            continue
        dist = ep.dist.name if ep.dist else "?"
        version = ep.dist.version if ep.dist else "?"
        found.append((ep.name, dist, version, f"entry point {ep.value}", ep.load))
    folder = plugins_dir or os.environ.get("BENCHSUITE_PLUGINS_DIR")
    if folder:
        directory = Path(folder)
        if not directory.is_dir():
            raise PluginError(f"plugins folder {directory} does not exist")
        for path in sorted(directory.glob("*.py")):
            found.append((path.stem, "plugins-dir", "", str(path), lambda p=path: _load_file(p)))
    return found


def _unknown_hooks(module: ModuleType) -> list[str]:
    return [n for n in vars(module) if n.startswith("benchsuite_") and n not in HOOKS]


def _trace(message: str) -> None:
    sys.stderr.write(message)


def load_registry(plugins_dir: str | None = None) -> Registry:
    """Load every plugin and collect the mixers and tracks they register."""
    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(hookspecs)
    if os.environ.get("BENCHSUITE_TRACE_HOOKS"):
        manager.trace.root.setwriter(_trace)
        manager.enable_tracing()
    registry = Registry()
    loaded: dict[str, PluginInfo] = {}
    for name, dist, version, origin, loader in _candidates(plugins_dir):
        try:
            module = loader()
            unknown = _unknown_hooks(module)
            if unknown:
                hooks = ", ".join(HOOKS)
                raise PluginError(f"unknown hook {unknown[0]!r}; valid hooks: {hooks}")
            manager.register(module, name=name)
            manager.check_pending()
        except Exception as error:
            if manager.get_plugin(name) is not None:
                manager.unregister(name=name)
            registry.failures.append(PluginFailure(name, origin, one_line(error), dist, version))
            continue
        file = _file_of(module)
        info = PluginInfo(name, dist, version, origin, module.__name__, file, _source_hash(file))
        loaded[name] = info
        registry.plugins.append(info)
    _collect(manager, registry, loaded)
    return registry


def _collect(
    manager: pluggy.PluginManager, registry: Registry, loaded: dict[str, PluginInfo]
) -> None:
    """Call each hook once per plugin through pluggy, keeping one plugin's failure to itself."""
    for hook_name, kind in HOOKS.items():
        for impl in getattr(manager.hook, hook_name).get_hookimpls():
            info = loaded[impl.plugin_name]
            others = [p for n, p in manager.list_name_plugin() if n != impl.plugin_name]
            caller = manager.subset_hook_caller(hook_name, remove_plugins=others)
            collected: list[Any] = []
            try:
                caller(register=collected.append)
                for item in collected:
                    _check_kind(item, kind)
            except Exception as error:
                failure = PluginFailure(
                    info.name, info.origin, one_line(error), info.distribution, info.version
                )
                registry.failures.append(failure)
                continue
            for item in collected:
                _add(registry, item, info)


def _check_kind(item: Any, kind: type) -> None:
    if not isinstance(item, kind):
        raise PluginError(
            f"registered {type(item).__name__} {item!r:.60}, expected a {kind.__name__}"
        )
    if not getattr(item, "name", ""):
        raise PluginError(f"registered a {kind.__name__} without a name")


def _describe(info: PluginInfo) -> str:
    return f"plugin {info.name!r} ({provenance(info)}, {info.origin})"


def _add(registry: Registry, item: Any, info: PluginInfo) -> Any:
    """Stamp ``item`` with its plugin and register it; a second item of one name is an error
    naming both plugins."""
    kind = "mixer" if isinstance(item, Mixer) else "track"
    pool = registry.mixers if isinstance(item, Mixer) else registry.tracks
    if isinstance(item, Mixer) and item.unavailable:
        pool = registry.unavailable
    if item.name in pool:
        owner = pool[item.name].plugin
        previous = next((p for p in registry.plugins if p.name == owner), None)
        first = _describe(previous) if previous else f"plugin {owner!r}"
        raise PluginError(
            f"{kind} {item.name!r} is registered twice: by {first} and by {_describe(info)}"
        )
    stamp = {
        "plugin": info.name,
        "distribution": info.distribution,
        "version": info.version,
        "module": info.module,
        "module_file": info.file,
    }
    if isinstance(item, Mixer):
        item = dataclasses.replace(item, **stamp)
    else:
        for key, value in stamp.items():
            setattr(item, key, value)
    pool[item.name] = item
    return item
