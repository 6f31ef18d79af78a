"""Mixer variants and tag selections, as ``--mixers`` and the config's ``mixers`` name them.

``attention[heads=2]`` is the mixer ``attention`` with ``heads=2``: after resolution it is a mixer
of its own (results, tables, plots, cache keys and the store know it by its canonical name, its
options sorted by name and spelled as parsed, e.g. ``attention[dropout=0.1,heads=2]``). Its
options are parsed like ``--mixer-option`` values and win over ``--mixer-option attention.KEY``,
which applies to every variant of ``attention``. ``tag:NAME`` selects every registered mixer that
declares the tag ``NAME`` (``Mixer.tags``). Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchsuite.errors import UsageError, check_names, did_you_mean
from benchsuite.specs import Mixer, resolve_options

TAG = "tag:"
SYNTAX = "NAME[KEY=VALUE,...]"


@dataclass(frozen=True)
class Variant:
    """A mixer as named in a run: its canonical name, the registered mixer it runs and the options
    given in its brackets (parsed; empty for a plain name)."""

    name: str
    base: str
    options: Mapping[str, Any] = field(default_factory=dict)


def base_of(name: str) -> str:
    """The registered mixer a variant name runs: ``attention[heads=2]`` -> ``attention``."""
    return name.partition("[")[0].strip()


def lookup(mixers: Mapping[str, Mixer], name: str) -> Mixer:
    """The mixer ``name`` runs: the registered one, or for a variant its base mixer under the
    variant's name (its options travel with each job)."""
    if name in mixers:
        return mixers[name]
    return dataclasses.replace(mixers[base_of(name)], name=name)


def spell(value: Any) -> str:
    """A parsed option value as its canonical name spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _malformed(text: str, detail: str) -> UsageError:
    return UsageError(f"mixer {text!r}: {detail}; expected {SYNTAX}, e.g. attention[heads=2]")


def _check_registered(
    name: str, mixers: Mapping[str, Mixer], unavailable: Mapping[str, Mixer]
) -> None:
    if name in unavailable:
        raise UsageError(f"mixer {name!r} is unavailable here: {unavailable[name].unavailable}")
    check_names("mixer", [name], list(mixers))


def parse(
    text: str, mixers: Mapping[str, Mixer], unavailable: Mapping[str, Mixer] | None = None
) -> Variant:
    """``text`` (a mixer name, or ``NAME[KEY=VALUE,...]``) checked against the registered mixers:
    unknown names, unknown options, bad values and malformed brackets are one-line errors."""
    text = text.strip()
    unavailable = unavailable or {}
    if "[" not in text and "]" not in text:
        _check_registered(text, mixers, unavailable)
        return Variant(text, text)
    base, given = bracketed(text, _malformed, "option")
    _check_registered(base, mixers, unavailable)
    try:
        parsed = resolve_options(mixers[base].options, given, base)
    except UsageError as error:
        raise UsageError(f"mixer {text!r}: {error}") from None
    options = {key: parsed[key] for key in sorted(given)}
    name = f"{base}[{','.join(f'{key}={spell(value)}' for key, value in options.items())}]"
    return Variant(name, base, options)


def bracketed(
    text: str, malformed: Callable[[str, str], UsageError], noun: str
) -> tuple[str, dict[str, str]]:
    """``NAME[KEY=VALUE,...]`` -> ``(NAME, {KEY: VALUE})`` (text values as given; a name without
    brackets has none): the one parser of mixer and track variants. ``malformed(text, detail)``
    makes the one-line error; ``noun`` names a key in it (a mixer's option, a track's key)."""
    if "[" not in text and "]" not in text:
        return text, {}
    base, _, inside = text.partition("[")
    base = base.strip()
    if not base or not inside.endswith("]") or "[" in inside or "]" in inside[:-1]:
        raise malformed(text, "malformed brackets")
    given: dict[str, str] = {}
    for assignment in inside[:-1].split(","):
        key, equals, value = (part.strip() for part in assignment.partition("="))
        if not key or not equals or not value:
            raise malformed(text, f"{assignment.strip()!r} is not KEY=VALUE")
        if key in given:
            raise malformed(text, f"{noun} {key!r} given twice")
        given[key] = value
    return base, given


def select(
    texts: Iterable[str],
    mixers: Mapping[str, Mixer],
    unavailable: Mapping[str, Mixer] | None = None,
) -> list[Variant]:
    """Every name of ``--mixers`` as a :class:`Variant`, ``tag:NAME`` expanded to the mixers
    declaring that tag (by name). A mixer named twice (in any spelling) is an error; one that a
    tag selects again counts once."""
    chosen: dict[str, Variant] = {}
    named: set[str] = set()
    for text in texts:
        if text.strip().startswith(TAG):
            found = expand_tag(text.strip()[len(TAG) :].strip(), mixers)
        else:
            found = [parse(text, mixers, unavailable)]
            if found[0].name in named:
                raise UsageError(f"mixer {found[0].name!r} is named twice")
            named.add(found[0].name)
        for variant in found:
            chosen.setdefault(variant.name, variant)
    return list(chosen.values())


def expand_tag(tag: str, mixers: Mapping[str, Mixer]) -> list[Variant]:
    """The mixers that declare ``tag``, by name; a tag no mixer declares is an error naming the
    declared ones."""
    names = sorted(name for name, mixer in mixers.items() if tag in mixer.tags)
    if not names:
        declared = sorted({t for mixer in mixers.values() for t in mixer.tags})
        raise UsageError(
            f"no mixer has the tag {tag!r}; declared tags: {', '.join(declared) or '(none)'}"
        )
    return [Variant(name, name) for name in names]


def variant_options(
    variants: Iterable[Variant], mixers: Mapping[str, Mixer], given: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each variant's resolved options (by canonical name): its base mixer's defaults, overlaid
    with ``--mixer-option BASE.KEY`` values, overlaid with the variant's own options."""
    for name in given:
        if "[" in name:
            raise UsageError(
                f"option given for variant {name!r}: give a variant's options "
                f"inside its brackets, or to its mixer {base_of(name)!r}"
            )
        if name not in mixers:
            hint = did_you_mean(name, mixers)
            raise UsageError(f"option given for unknown mixer {name!r}{hint}")
    return {
        v.name: resolve_options(
            mixers[v.base].options, {**given.get(v.base, {}), **v.options}, v.base
        )
        for v in variants
    }
