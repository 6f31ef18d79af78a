"""Track variants and axes, as ``--tracks``, ``--axis`` and the config's ``tracks``/``[axes]`` name
them.

``recall[dim=64,seq_len=256]`` is the track ``recall`` with its option ``seq_len`` set to 256 and
its budget's width ``dim`` set to 64 (on every preset); a bracket key is one of the track's
options or a budget key (``steps``, ``batch_size``, ``dim``, ``depth``). After resolution a
variant is a track of its own: the plan, results, tables, store, cache keys and statistics (the
baseline comparison, Holm, MDE) know it by its canonical name, keys sorted and values spelled as
parsed. The name says everything the variant changes, so any process that has the base track
rebuilds it from the name alone (:class:`TrackPool`); a worker process needs nothing else.

An axis (``--axis dim=32,64,128``, ``[axes] dim = [32, 64, 128]``) expands every asked track into
one variant per value (several axes: every combination), so ``tracks = ["recall"]`` with axes
``dim`` and ``seq_len`` asks for the grid of quality against width at each length. Nothing here
imports torch.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from benchsuite.budget import knobs, variant_keys
from benchsuite.errors import UsageError, check_names
from benchsuite.registry.variants import bracketed, spell
from benchsuite.specs import Track, resolve_options

BUDGET_KEYS = variant_keys()  # what a variant may set in the budget (its size)
SYNTAX = "TRACK[KEY=VALUE,...]"


def _malformed(text: str, detail: str) -> UsageError:
    return UsageError(f"track {text!r}: {detail}; expected {SYNTAX}, e.g. recall[dim=64]")


def assignments(text: str) -> tuple[str, dict[str, str]]:
    """``recall[dim=64, seq_len=256]`` -> ``("recall", {"dim": "64", "seq_len": "256"})`` (text
    values, as given); a plain name has no assignments. Malformed brackets are one-line errors."""
    return bracketed(text.strip(), _malformed, "key")


def _budget_value(text: str, key: str, value: str) -> Any:
    """A budget key's value in a variant, read by its knob."""
    try:
        return knobs()[key].read(key, value)
    except ValueError as error:
        raise UsageError(f"track {text!r}: {error}") from None


def build(base: Track, text: str, given: Mapping[str, str]) -> Track:
    """The variant of ``base`` that ``given`` (text values by key) asks for, named canonically:
    a copy whose declared options default to the given ones and whose budgets (every preset) have
    the given budget keys. Unknown keys and bad values are one-line errors."""
    declared = {option.name for option in base.options}
    clash = sorted(declared & set(BUDGET_KEYS) & set(given))
    if clash:
        raise UsageError(f"track {text!r}: {clash[0]!r} is both an option and a budget key")
    options = {k: v for k, v in given.items() if k in declared}
    unknown = sorted(set(given) - declared - set(BUDGET_KEYS))
    if unknown:
        valid = ", ".join(sorted(declared | set(BUDGET_KEYS)))
        raise UsageError(f"track {text!r}: unknown key {unknown[0]!r}; valid: {valid}")
    try:
        parsed = resolve_options(base.options, options, base.name)
    except UsageError as error:
        raise UsageError(f"track {text!r}: {error}") from None
    budget = {k: _budget_value(text, k, v) for k, v in given.items() if k in BUDGET_KEYS}
    values = {k: parsed[k] for k in options} | budget
    variant = copy.copy(base)
    variant.name = f"{base.name}[{','.join(f'{k}={spell(values[k])}' for k in sorted(values))}]"
    variant.options = tuple(
        dataclasses.replace(o, default=parsed[o.name]) if o.name in options else o
        for o in base.options
    )
    variant.budgets = {key: dataclasses.replace(b, **budget) for key, b in base.budgets.items()}
    variant.variant_of = base.name  # type: ignore[attr-defined]
    variant.variant_keys = {k: values[k] for k in sorted(values)}  # type: ignore[attr-defined]
    variant.variant_budget = budget  # type: ignore[attr-defined]
    return variant


class TrackPool(dict):
    """The registered tracks by name; a variant name of a registered track (``recall[dim=64]``)
    is found too, built from its name on each lookup (it is not listed among the keys)."""

    def __missing__(self, name: str) -> Track:
        base, given = assignments(name)
        if not given or not dict.__contains__(self, base):
            raise KeyError(name)
        return build(dict.__getitem__(self, base), name, given)

    def __contains__(self, name: object) -> bool:
        if dict.__contains__(self, name):
            return True
        try:
            self[name]
        except (KeyError, UsageError, TypeError, AttributeError):
            return False
        return True


def expand(texts: Iterable[str], axes: Mapping[str, Iterable[Any]]) -> list[str]:
    """Each track text once per combination of the axes' values (in the order given), the axis
    keys appended to its brackets; a track that sets an axis key itself is an error."""
    texts = list(texts)
    if not axes:
        return texts
    keys = list(axes)
    combos = list(itertools.product(*([spell(v) for v in axes[k]] for k in keys)))
    expanded = []
    for text in texts:
        base, given = assignments(text)
        both = sorted(set(given) & set(keys))
        if both:
            raise UsageError(f"track {text!r} sets {both[0]!r}, which an axis also varies")
        for combo in combos:
            pairs = {**given, **dict(zip(keys, combo, strict=True))}
            expanded.append(f"{base}[{','.join(f'{k}={v}' for k, v in pairs.items())}]")
    return expanded


def select(texts: Iterable[str], tracks: Mapping[str, Track]) -> list[Track]:
    """Every asked track (a name or a variant) as a track, variants in their canonical names; a
    track named twice (in any spelling) is an error."""
    chosen: dict[str, Track] = {}
    for text in texts:
        base, given = assignments(text)
        check_names("track", [base], [name for name in tracks if "[" not in name])
        track = build(tracks[base], text, given) if given else tracks[base]
        if track.name in chosen:
            raise UsageError(f"track {track.name!r} is named twice")
        chosen[track.name] = track
    return list(chosen.values())


def base_name(track: Track) -> str:
    """The registered track a track runs (itself, unless it is a variant)."""
    return getattr(track, "variant_of", track.name)
