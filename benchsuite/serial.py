"""Plain data to and from the typed results: a dataclass tree becomes JSON-able dicts and lists
(``to_plain``) and is rebuilt from them (``from_plain``), by the fields' type hints.

``report.json`` writes NaN as ``null``; read back, a ``null`` in a field typed ``float`` is NaN
again, so a report from the store and one from its file are the same objects. A dataclass may
name ``DERIVED`` properties and give ``extra_keys()``: they are written (the schema has them) and
ignored when read; a field with ``metadata={"omit_none": True}`` is not written while None; a
field with ``metadata={"flatten": True}`` (a dataclass) writes its fields beside its owner's, as
if they were the owner's own, and is read back from them; a dataclass with a ``to_plain``
method writes itself (a ``Job``: the budget a job trains with; ``Scores``: the flat form every
store has), and one with a ``from_dict`` classmethod reads itself (a ``Budget``, the
``RunSettings``, a ``Skip``, ``Scores``: each knows its older forms).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")
OMIT_NONE = {"omit_none": True}  # a field's metadata: not written while None
FLATTEN = {"flatten": True}  # a field's metadata: its fields written beside its owner's


def to_plain(value: Any) -> Any:
    """Dataclasses as dicts (fields in order, then their ``DERIVED`` properties), tuples as
    lists, numbers as Python ``int`` / ``float``: nothing but JSON's types (NaN kept)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if (writes := getattr(value, "to_plain", None)) is not None:
            return writes()
        plain = {}
        for f in dataclasses.fields(value):
            own = getattr(value, f.name)
            if f.metadata.get("flatten"):
                plain.update(to_plain(own))
            elif f.repr and not (f.metadata.get("omit_none") and own is None):
                plain[f.name] = to_plain(own)
        for name in getattr(value, "DERIVED", ()):
            plain[name] = to_plain(getattr(value, name))
        if extra := getattr(value, "extra_keys", None):
            plain.update(to_plain(extra()))
        return plain
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def strict(value: Any) -> Any:
    """Plain data for strict JSON: NaN and infinities become None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_plain(kind: Any, value: Any) -> Any:
    """``value`` (plain data, as :func:`to_plain` or ``json.loads`` gives it) as type ``kind``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any or kind is object:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return from_plain(inner[0], value) if len(inner) == 1 else value
    if value is None:
        return math.nan if kind is float else None
    if dataclasses.is_dataclass(kind):
        reader = getattr(kind, "from_dict", None)  # a class that reads itself back
        return reader(value) if reader is not None else build(kind, value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    if origin is list:
        return [from_plain(args[0] if args else Any, v) for v in value]
    if origin is tuple:
        kinds = [args[0]] * len(value) if args[-1:] == (Ellipsis,) else args
        return tuple(from_plain(k, v) for k, v in zip(kinds, value, strict=False))
    if origin is dict:
        key, item = args or (Any, Any)
        return {from_plain(key, k): from_plain(item, v) for k, v in value.items()}
    return float(value) if kind is float else value


def build(cls: type[T], raw: dict[str, Any]) -> T:
    """An instance of dataclass ``cls`` from a dict: known fields converted by their hints,
    missing ones at their defaults, anything else (derived keys) left out."""
    hints = _hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    known = {f.name for f in fields if not f.metadata.get("flatten")}
    values = {k: from_plain(hints[k], v) for k, v in raw.items() if k in known}
    for f in fields:
        if f.metadata.get("flatten"):
            values[f.name] = from_plain(hints[f.name], raw)
    return cls(**values)
