"""The argparse adapter of the CLI: a verb's flags derived from a settings dataclass, and what
every verb's help shares (the examples epilog, the status console).

A settings dataclass (:class:`benchsuite.settings.RunSettings`, or a verb's own such as
:class:`benchsuite.commands.scale.ScaleSettings`) declares each field with
:func:`benchsuite.settings.setting`: type, default and help are written there once, and
:func:`add_settings` and :func:`read` are the only code that turns them into flags and back. A
field declared without :func:`~benchsuite.settings.setting` has no flag of its own (it is read
from the namespace when a shared flag, such as ``--plugins-dir``, sets it).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from benchsuite import settings as schema
from benchsuite.settings import (
    flag_of,
    parse_assignments,
    parse_axes,
    parse_grids,
    parse_pairs,
    split_names,
)

FORMATTER = argparse.RawDescriptionHelpFormatter
Settings = TypeVar("Settings")
Examples = Sequence[tuple[str, str]]
_REPEATED = (schema.OPTIONS, schema.PAIRS, schema.GRID, schema.AXES)
_TYPES = {schema.NAMES: split_names, schema.WHOLE: int, schema.NUMBER: float}
_READERS = {
    schema.OPTIONS: parse_assignments,
    schema.PAIRS: parse_pairs,
    schema.GRID: parse_grids,
    schema.AXES: parse_axes,
}


def _flagged(
    settings: type, names: Collection[str] | None, skip: Collection[str]
) -> list[dataclasses.Field]:
    """The fields of ``settings`` that have a flag (those in ``names`` when given, none of
    ``skip``), in order."""
    return [
        f
        for f in dataclasses.fields(settings)
        if "kind" in f.metadata and (names is None or f.name in names) and f.name not in skip
    ]


def _default_text(spec: dataclasses.Field) -> str:
    """`` (default X)`` for the help of a one-value flag with a default, else empty."""
    default = spec.default
    if default in (None, (), dataclasses.MISSING):
        return ""
    if spec.metadata["show"]:
        default = spec.metadata["show"](default)
    elif isinstance(default, tuple):
        default = ",".join(map(str, default))
    return f" (default {default})"


def add_settings(
    parser: argparse.ArgumentParser,
    settings: type,
    names: Collection[str] | None = None,
    skip: Collection[str] = (),
) -> None:
    """One flag per field of the dataclass ``settings`` (only ``names`` when given, none of
    ``skip``: a flag every verb shares, such as ``--plugins-dir``). A flag not
    given leaves no attribute, so the dataclass's default (or a config file) holds, and a value
    given before the verb's name (``--plugins-dir``) is kept."""
    for spec in _flagged(settings, names, skip):
        kind, help = spec.metadata["kind"], spec.metadata["help"]
        common = {"dest": spec.name, "default": argparse.SUPPRESS}
        if kind in _REPEATED:
            parser.add_argument(
                flag_of(spec),
                action="append",
                metavar=spec.metadata["metavar"],
                help=help,
                **common,
            )
        elif kind == schema.SWITCH:  # --strict / --no-strict: a config file's value can be undone
            parser.add_argument(
                flag_of(spec), action=argparse.BooleanOptionalAction, help=help, **common
            )
        else:
            kind_type = _TYPES.get(kind, str) if spec.metadata["parse"] is None else str
            parser.add_argument(
                flag_of(spec),
                metavar=spec.metadata["metavar"],
                help=help + _default_text(spec),
                type=kind_type,
                **common,
            )


def given(
    settings: type, args: argparse.Namespace, names: Collection[str] | None = None
) -> dict[str, Any]:
    """The fields of ``settings`` given on the command line, read and checked (None: not given;
    a mistake is a one-line :class:`~benchsuite.errors.UsageError` naming the flag)."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(settings):
        if names is not None and spec.name not in names:
            continue
        value = getattr(args, spec.name, None)
        if "kind" not in spec.metadata:
            values[spec.name] = value
        elif spec.metadata["kind"] in _READERS:
            reader = _READERS[spec.metadata["kind"]]
            values[spec.name] = reader(value or [], flag_of(spec)) or None
        elif value is not None and spec.metadata["parse"]:
            values[spec.name] = spec.metadata["parse"](value)
        else:
            values[spec.name] = value
    return values


def read(settings: type[Settings], args: argparse.Namespace) -> Settings:
    """An instance of the dataclass ``settings`` from the flags given, its defaults for the rest."""
    values = given(settings, args)
    return settings(**{name: value for name, value in values.items() if value is not None})


def add_json(parser: argparse.ArgumentParser, instead_of: str = "tables") -> None:
    """The ``--json`` switch of a verb that prints data."""
    parser.add_argument("--json", action="store_true", help=f"print JSON instead of {instead_of}")


def examples(pairs: Examples) -> str:
    """The ``examples:`` epilog of a command's help."""
    width = max(len(command) for command, _ in pairs)
    lines = [f"  {command:<{width}}  # {why}" for command, why in pairs]
    return "examples:\n" + "\n".join(lines)


def status(args: argparse.Namespace) -> Any:
    """The console for progress, warnings and notes: standard error, silent under ``--quiet``."""
    from benchsuite.output.progress import console

    return console(quiet=getattr(args, "quiet", False), stderr=True)
