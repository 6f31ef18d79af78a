"""Every setting of a run, defined once in :class:`RunSettings`.

The ``run`` command's flags, the TOML config file and the Python API are all derived from it: a
field's type, default and help are written here and nowhere else (the other verbs' settings are
declared with the same :func:`setting`; :mod:`benchsuite.commands.arguments` turns any of them
into argparse flags). A config file holds what the flags hold::

    [run]                      # any run setting, with underscores
    tracks = ["sequence", "vision"]
    seeds = 12
    [budget]                   # as --budget KEY=VALUE
    steps = 100
    [tracks.vision]            # as --track-option vision.KEY=VALUE
    verify = false
    [mixers.attention]         # as --mixer-option attention.KEY=VALUE
    heads = 2

Flags win over the file, the file over the defaults. Without ``--config`` the file is found in the
working folder: ``benchsuite.toml``, else the ``[tool.benchsuite]`` table of ``pyproject.toml``
(the same sections under ``tool.benchsuite``). Every key: docs/configuration.md. Every mistake is
a one-line error naming the file and the key (and the line and column of a TOML syntax error).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsuite import serial
from benchsuite.budget import overrides_help, read_overrides
from benchsuite.errors import UsageError
from benchsuite.seeds import DEFAULT_SALT
from benchsuite.vocabulary import Match

# How a setting is written on the command line and in the config file.
NAMES = "names"  # "a,b" on the command line, a list of names in the file
TEXT, WHOLE, NUMBER, SWITCH = "text", "whole number", "number", "true or false"
OPTIONS = "options"  # NAME.KEY=VALUE flags (repeatable), [section.NAME] tables in the file
PAIRS = "pairs"  # KEY=VALUE flags (repeatable), a [section] table in the file
GRID = "grid"  # TRACK.AXIS=V1,V2 flags (repeatable), [tracks.NAME.grid] tables in the file
AXES = "axes"  # KEY=V1,V2 flags (repeatable), an [axes] table of value lists in the file

EXECUTORS = ("local", "process", "ray")


def setting(
    default: Any,
    help: str,
    kind: str,
    *,
    metavar: str | None = None,
    flag: str | None = None,
    section: str | None = None,
    parse: Callable[[str], Any] | None = None,
    show: Callable[[Any], str] | None = None,
) -> Any:
    """A settings field with what its flag and the config file need to know: ``parse`` reads the
    flag's text (default: by ``kind``), ``show`` writes the default in the help."""
    metadata = {
        "help": help,
        "kind": kind,
        "metavar": metavar,
        "flag": flag,
        "section": section,
        "parse": parse,
        "show": show,
    }
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class RunSettings:
    """What a run is asked to do; ``None`` means "decide for me" (see each help)."""

    tracks: tuple[str, ...] | None = setting(
        None, "comma-separated tracks, or variants TRACK[KEY=VALUE,...] (default: all)", NAMES
    )
    mixers: tuple[str, ...] | None = setting(
        None,
        "comma-separated mixers, variants NAME[KEY=VALUE,...] or tag:NAME (default: all)",
        NAMES,
    )
    baseline: str = setting("dense", "the mixer every other one is compared with", TEXT)
    seeds: int | None = setting(
        None,
        "paired evaluation seeds (default: the fewest with which the design's claims can pass "
        "Holm)",
        WHOLE,
    )
    design: str | None = setting(
        None,
        "the claims the seeds are planned for: suite (each mixer across the tracks; 3 seeds "
        "for the default run) or per-track (each mixer on each track; 13 seeds for the default "
        "run: run into the same --out, it trains only the new seeds). Default: suite with "
        "several tracks, per-track with one track or with --seeds enough for it",
        TEXT,
    )
    futility: bool = setting(
        True,
        "the per-track design's pre-registered futility look: once half the seeds are in, a "
        "comparison that can no longer reach Holm's first step (as a difference or an "
        "equivalence) stops there, reported with p = 1 (docs/protocol.md, The futility look); "
        "--no-futility trains every seed",
        SWITCH,
    )
    preset: str = setting("quick", "quick (CPU, offline) or full (GPU, real datasets)", TEXT)
    out: str = setting("benchsuite-results", "output folder", TEXT)
    data_dir: str | None = setting(
        None, "folder with real datasets (e.g. cifar-10-batches-py/)", TEXT
    )
    plugins_dir: str | None = setting(
        None, "folder of *.py plugins (or $BENCHSUITE_PLUGINS_DIR)", TEXT
    )
    track_options: Mapping[str, Mapping[str, Any]] = setting(
        {},
        "a track option",
        OPTIONS,
        metavar="TRACK.KEY=VALUE",
        flag="--track-option",
        section="tracks",
    )
    mixer_options: Mapping[str, Mapping[str, Any]] = setting(
        {},
        "a mixer option",
        OPTIONS,
        metavar="MIXER.KEY=VALUE",
        flag="--mixer-option",
        section="mixers",
    )
    grids: Mapping[str, Mapping[str, tuple[float, ...]]] = setting(
        {},
        "a track's tuning grid along one axis (lr or weight_decay), e.g. sequence.lr=1e-3,3e-3",
        GRID,
        metavar="TRACK.AXIS=V1,V2,...",
        flag="--grid",
        section="tracks.*.grid",
    )
    budget: Mapping[str, Any] = setting(
        {},
        overrides_help(),
        PAIRS,
        metavar="KEY=VALUE",
        section="budget",
    )
    axes: Mapping[str, tuple[Any, ...]] = setting(
        {},
        "every track once per value of KEY (a track option or budget key: track variants), "
        "e.g. dim=32,64,128",
        AXES,
        metavar="KEY=V1,V2,...",
        flag="--axis",
        section="axes",
    )
    executor: str = setting("process", "process (worker processes), local or ray", TEXT)
    address: str | None = setting(
        None, "Ray cluster HOST:PORT for --executor ray (default: a local Ray)", TEXT
    )
    jobs: int | None = setting(None, "parallel jobs (default: one per free core)", WHOLE)
    timeout: float | None = setting(
        None,
        "hard limit per job in seconds: a job still running then is killed and recorded as failed",
        NUMBER,
        metavar="SECONDS",
    )
    memory_limit: float | None = setting(
        None,
        "GiB of memory each worker process may allocate: a job past it fails with one line "
        "naming its mixer and the run goes on (default: four fifths of the machine's memory "
        "shared by the workers; 0: no limit; the process and ray executors)",
        NUMBER,
        metavar="GIB",
    )
    preflight_timeout: float = setting(
        60.0,
        "seconds the pre-flight may take on one mixer × track pair (build, forward and backward "
        "at the track's shapes, in a worker process); a pair still running then is skipped "
        "with its reason and the rest of the run trains",
        NUMBER,
        metavar="SECONDS",
    )
    save_every: float = setting(
        120.0,
        "seconds between saves of a job's training, so that a job stopped in flight resumes "
        "where it was (docs/running.md, Ctrl-C and SIGTERM)",
        NUMBER,
        metavar="SECONDS",
    )
    allow_failures: bool = setting(False, "exit 0 even when some jobs failed", SWITCH)
    threads: int = setting(1, "torch threads per job", WHOLE)
    device: str = setting("cpu", "cpu or cuda[:N]", TEXT)
    batch_seeds: bool | None = setting(
        None, "train a cell's evaluation seeds as one vmapped model (default: on cuda)", SWITCH
    )
    strict: bool = setting(False, "refuse a design whose seeds cannot reach significance", SWITCH)
    match: str = setting(
        Match.PARAMS,
        "equal size: params (each model within 10 percent of the baseline's parameters: its "
        "size_option, else the channel-MLP width; docs/protocol.md) or none (as declared)",
        TEXT,
    )
    margin: float = setting(
        0.05, "equivalence margin, relative to the baseline's mean (TOST)", NUMBER
    )
    salt: str = setting(DEFAULT_SALT, "suite salt every seed stream derives from", TEXT)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (tuples as lists, mappings as dicts)."""
        return serial.to_plain(self)

    @classmethod
    def from_dict(cls, saved: Mapping[str, Any]) -> RunSettings:
        """Settings read back from :meth:`to_dict`'s values (a saved plan or report): lists
        become tuples again; a key this version does not know is ignored, one it added takes its
        default."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: _frozen(value) for key, value in saved.items() if key in known})

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (names are checked)."""
        return dataclasses.replace(self, **changes)


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _frozen(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def fields() -> list[dataclasses.Field]:
    """The run settings in declaration order."""
    return list(dataclasses.fields(RunSettings))


def merge(*layers: Mapping[str, Any]) -> RunSettings:
    """Settings from layers of given values (later layers win; ``None`` means not given).

    Option and budget mappings merge key by key, so a flag overrides one key of the file.
    """
    values: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.items():
            if value is None:
                continue
            if isinstance(value, Mapping) and isinstance(values.get(name), Mapping):
                values[name] = _merge_maps(values[name], value)
            else:
                values[name] = value
    return RunSettings(**values)


def _merge_maps(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in base.items()}
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    return merged


# ----------------------------------------------------------------------------- the config file

_TYPES = {TEXT: (str,), WHOLE: (int,), NUMBER: (int, float), SWITCH: (bool,)}


def _check_value(path: Path | str, key: str, value: Any, kind: str) -> Any:
    if kind == NAMES:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"config {path}: {key} must be a list of names, got {value!r}")
        return tuple(value)
    wrong = isinstance(value, bool) and kind != SWITCH
    if wrong or not isinstance(value, _TYPES[kind]):
        article = "a " if kind in (WHOLE, NUMBER) else ""
        raise UsageError(f"config {path}: {key} must be {article}{kind}, got {value!r}")
    return float(value) if kind == NUMBER else value


def _table(path: Path | str, name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UsageError(f"config {path}: [{name}] must be a table, got {value!r}")
    return value


def _single_values(path: Path | str, section: str, table: dict[str, Any]) -> None:
    for key, value in table.items():
        if isinstance(value, dict | list):
            raise UsageError(
                f"config {path}: {section}.{key} must be a single value, got {value!r}"
            )


CONFIG_FILE = "benchsuite.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = "tool.benchsuite"


def find_config(folder: Path | str) -> Path | None:
    """The config file a run in ``folder`` uses without ``--config``: ``benchsuite.toml``, else a
    ``pyproject.toml`` with a ``[tool.benchsuite]`` table, else None."""
    folder = Path(folder)
    if (folder / CONFIG_FILE).is_file():
        return folder / CONFIG_FILE
    pyproject = folder / PYPROJECT
    try:
        text = pyproject.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    return pyproject if f"[{PYPROJECT_TABLE}" in text else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except OSError as error:
        raise UsageError(f"config {path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise UsageError(f"config {path}: not a text file") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"config {path}: TOML syntax error: {error}") from None


def load_config(path: Path | str) -> dict[str, Any]:
    """Read and check a config file; returns the run settings it gives (by field name).

    A ``pyproject.toml`` gives the settings of its ``[tool.benchsuite]`` table (named in errors).
    """
    path = Path(path)
    raw = _read_toml(path)
    where: Path | str = path
    if path.name == PYPROJECT:
        where = f"{path} [{PYPROJECT_TABLE}]"
        tool = _table(where, "tool", raw.get("tool", {}))
        raw = _table(where, PYPROJECT_TABLE, tool.get("benchsuite", {}))
    by_section = {
        f.metadata["section"]: f for f in fields() if f.metadata["kind"] in (OPTIONS, PAIRS, AXES)
    }
    scalars = {f.name: f for f in fields() if not f.metadata["section"]}
    sections = ("run", *by_section)
    unknown = sorted(set(raw) - set(sections))
    if unknown:
        name = unknown[0]
        if name in scalars and not isinstance(raw[name], dict):  # a run key written at the top
            raise UsageError(f"config {where}: {name} is a run setting: put it under [run]")
        raise UsageError(f"config {where}: unknown section [{name}]; valid: {', '.join(sections)}")
    given: dict[str, Any] = {}
    for key, value in _table(where, "run", raw.get("run", {})).items():
        if key not in scalars:
            valid = ", ".join(sorted(scalars))
            raise UsageError(f"config {where}: unknown key run.{key}; valid: {valid}")
        given[key] = _check_value(where, f"run.{key}", value, scalars[key].metadata["kind"])
    for section, spec in by_section.items():
        table = dict(_table(where, section, raw.get(section, {})))
        if spec.metadata["kind"] == AXES:
            table = {key: _axis(where, key, values) for key, values in table.items()}
        elif spec.metadata["kind"] == PAIRS:
            _single_values(where, section, table)
            if spec.name == "budget":  # its keys and values are the knobs' to check
                try:
                    read_overrides(table)
                except ValueError as error:
                    raise UsageError(f"config {where}: {error}") from None
        else:
            for name, values in table.items():
                values = dict(_table(where, f"{section}.{name}", values))
                if section == "tracks" and "grid" in values:
                    grid = _table(where, f"{section}.{name}.grid", values.pop("grid"))
                    given.setdefault("grids", {})[name] = _grid(where, f"{section}.{name}", grid)
                _single_values(where, f"{section}.{name}", values)
                table[name] = values
        if any(table.values()):
            given[spec.name] = {name: values for name, values in table.items() if values}
    return given


def _grid(path: Path | str, where: str, table: dict[str, Any]) -> dict[str, tuple[float, ...]]:
    axes = {}
    for axis, values in table.items():
        numbers = values if isinstance(values, list) else [values]
        if not numbers or not all(_is_number(v) for v in numbers):
            raise UsageError(
                f"config {path}: {where}.grid.{axis} must be a list of numbers, got {values!r}"
            )
        axes[axis] = tuple(float(v) for v in numbers)
    return axes


def _axis(path: Path | str, key: str, values: Any) -> tuple[Any, ...]:
    if not isinstance(values, list) or not values or any(isinstance(v, dict) for v in values):
        raise UsageError(f"config {path}: axes.{key} must be a list of values, got {values!r}")
    return tuple(values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ----------------------------------------------------------------------------- the text of flags


def split_names(text: str) -> tuple[str, ...]:
    """``"a, b,"`` -> ``("a", "b")``; a comma inside brackets does not split (mixer variants):
    ``"dense,attention[heads=2,x=1]"`` -> ``("dense", "attention[heads=2,x=1]")``."""
    return tuple(part.strip() for part in re.split(r",(?![^\[]*\])", text) if part.strip())


def parse_assignments(items: Sequence[str], flag: str) -> dict[str, dict[str, str]]:
    """``["vision.verify=false", ...]`` -> ``{"vision": {"verify": "false"}}``."""
    result: dict[str, dict[str, str]] = {}
    for item in items:
        for assignment in split_names(item):
            name, dot, rest = assignment.partition(".")
            key, equals, value = rest.partition("=")
            if not (name and dot and key and equals):
                raise UsageError(f"{flag} {assignment!r}: expected NAME.KEY=VALUE")
            result.setdefault(name, {})[key.strip()] = value.strip()
    return result


def parse_pairs(items: Sequence[str], flag: str) -> dict[str, str]:
    """``["steps=20,dim=16"]`` -> ``{"steps": "20", "dim": "16"}``; a part without ``=``
    continues the value before it (a list): ``"halve_at=120,240"`` -> ``{"halve_at":
    "120,240"}``."""
    result: dict[str, str] = {}
    for item in items:
        key = None
        for assignment in split_names(item):
            name, equals, value = assignment.partition("=")
            if not equals and key is not None:
                result[key] += f",{assignment}"
                continue
            if not (name.strip() and equals):
                raise UsageError(f"{flag} {assignment!r}: expected KEY=VALUE")
            key = name.strip()
            result[key] = value.strip()
    return result


def help_of(name: str) -> str:
    """The help text of the run setting ``name``."""
    return next(f.metadata["help"] for f in fields() if f.name == name)


def parse_grids(items: Sequence[str], flag: str) -> dict[str, dict[str, tuple[float, ...]]]:
    """``["sequence.lr=1e-3,3e-3"]`` -> ``{"sequence": {"lr": (0.001, 0.003)}}``."""
    result: dict[str, dict[str, tuple[float, ...]]] = {}
    for item in items:
        name, dot, rest = item.strip().partition(".")
        axis, equals, values = rest.partition("=")
        try:
            numbers = tuple(float(v) for v in split_names(values))
        except ValueError:
            numbers = ()
        if not (name and dot and axis.strip() and equals and numbers):
            raise UsageError(f"{flag} {item!r}: expected TRACK.AXIS=V1,V2,... with numbers")
        result.setdefault(name, {})[axis.strip()] = numbers
    return result


def parse_axes(items: Sequence[str], flag: str) -> dict[str, tuple[str, ...]]:
    """``["dim=32,64"]`` -> ``{"dim": ("32", "64")}``."""
    pairs = [item.strip().partition("=") for item in items]
    if bad := next((k + e + v for k, e, v in pairs if not (k and e and split_names(v))), None):
        raise UsageError(f"{flag} {bad!r}: expected KEY=V1,V2,...")
    return {key.strip(): split_names(values) for key, _, values in pairs}


def flag_of(spec: dataclasses.Field) -> str:
    """The command-line flag of a setting."""
    return spec.metadata["flag"] or "--" + spec.name.replace("_", "-")
