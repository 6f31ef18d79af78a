"""Mixers from Python in one call, as ``timm.create_model`` and ``timm.list_models`` do for
models: :func:`list_mixers` names the registered mixers (built-in, installed and ``plugins_dir``
ones) matching a wildcard or a tag, and :func:`create_mixer` builds one at a shape with its
options checked as ``benchsuite run`` checks them. Both are re-exported by ``benchsuite``; only
:func:`create_mixer` imports torch (through the mixer it builds).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from benchsuite.errors import UsageError
from benchsuite.registry import load_registry, variants
from benchsuite.specs import resolve_options

if TYPE_CHECKING:
    from torch import nn


def list_mixers(pattern: str = "*", plugins_dir: str | None = None) -> list[str]:
    """The registered mixers' names matching ``pattern``, sorted: a shell wildcard on the name
    (``*delta*``) or ``tag:NAME`` (the mixers declaring that tag, e.g. ``tag:recurrent``)."""
    mixers = load_registry(plugins_dir).mixers
    if pattern.startswith(variants.TAG):
        tag = pattern.removeprefix(variants.TAG)
        return sorted(name for name, mixer in mixers.items() if tag in mixer.tags)
    return sorted(name for name in mixers if fnmatch.fnmatchcase(name, pattern))


def create_mixer(
    name: str, tokens: int, dim: int, plugins_dir: str | None = None, **options: Any
) -> nn.Module:
    """The mixer ``name`` (or a variant, ``attention[heads=2]``) built for ``tokens`` tokens of
    width ``dim``: a module mapping (batch, tokens, dim) to the same shape. Unknown names and
    options, bad values and a shape the mixer does not support are one-line ``UsageError``s."""
    registry = load_registry(plugins_dir)
    variant = variants.parse(name, registry.mixers, registry.unavailable)
    mixer = registry.mixers[variant.base]
    given = {**variant.options, **options}
    resolved = resolve_options(mixer.options, given, mixer.name)
    reason = mixer.reason_unsupported(tokens, dim, resolved)
    if reason:
        raise UsageError(f"mixer {name}: {reason}")
    return mixer.builder()(tokens, dim, **resolved)
