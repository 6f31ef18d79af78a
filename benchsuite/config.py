"""``--config FILE``: a TOML file holding what the ``run`` command's flags hold.

```toml
[run]                      # any of the run flags, with underscores
tracks = ["sequence", "vision"]
mixers = ["dense", "attention"]
seeds = 11
[budget]                   # as --budget
steps = 100
[tracks.vision]            # as --track-option vision.KEY=VALUE
verify = false
[mixers.attention]         # as --mixer-option attention.KEY=VALUE
heads = 2
```

Flags given on the command line win over the file. Every mistake is a one-line error naming the
file and the key (and the line and column of a syntax error).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from benchsuite.specs import UsageError

RUN_KEYS: dict[str, type | tuple[type, ...]] = {
    "tracks": list,
    "mixers": list,
    "baseline": str,
    "seeds": int,
    "sweep_seeds": int,
    "preset": str,
    "out": str,
    "data_dir": str,
    "executor": str,
    "jobs": int,
    "threads": int,
    "strict": bool,
    "device": str,
    "batch_seeds": bool,
    "address": str,
    "timeout": (float, int),
    "allow_failures": bool,
}
SECTIONS = ("run", "budget", "tracks", "mixers")


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {list: "a list of names", str: "text", int: "a whole number", float: "a number",
             bool: "true or false"}  # fmt: skip
    return names[kind if isinstance(kind, type) else kind[0]]


def _check_type(path: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    wrong = isinstance(value, bool) and kind is not bool
    if wrong or not isinstance(value, kind):
        raise UsageError(f"config {path}: {key} must be {_type_name(kind)}, got {value!r}")
    if kind is list and not all(isinstance(item, str) for item in value):
        raise UsageError(f"config {path}: {key} must be a list of names, got {value!r}")
    return value


def _table(path: Path, name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UsageError(f"config {path}: [{name}] must be a table, got {value!r}")
    return value


def load_config(path: Path | str) -> dict[str, Any]:
    """Read and check a config file: its ``run``, ``budget``, ``tracks`` and ``mixers`` tables."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as error:
        raise UsageError(f"config {path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise UsageError(f"config {path}: not a text file") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"config {path}: TOML syntax error: {error}") from None
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise UsageError(
            f"config {path}: unknown section [{unknown[0]}]; valid: {', '.join(SECTIONS)}"
        )
    run = _table(path, "run", raw.get("run", {}))
    for key, value in run.items():
        if key not in RUN_KEYS:
            raise UsageError(
                f"config {path}: unknown key run.{key}; valid: {', '.join(sorted(RUN_KEYS))}"
            )
        _check_type(path, f"run.{key}", value, RUN_KEYS[key])
    budget = _table(path, "budget", raw.get("budget", {}))
    options = {}
    for section in ("tracks", "mixers"):
        table = _table(path, section, raw.get(section, {}))
        for name, values in table.items():
            _table(path, f"{section}.{name}", values)
            for key, value in values.items():
                if isinstance(value, dict | list):
                    where = f"{section}.{name}.{key}"
                    raise UsageError(
                        f"config {path}: {where} must be a single value, got {value!r}"
                    )
        options[section] = table
    return {"run": run, "budget": budget, **options}
