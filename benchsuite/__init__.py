"""benchsuite: a multi-track benchmark suite for neural token mixers.

This module is a plugin author's whole import surface, exactly what docs/writing-a-mixer.md and
docs/tracks.md point to: the hook marker, the mixer and track contracts and their parts,
``wrap`` for a third-party layer, the forecasting track base, the seed streams a track draws its
data from, the two errors a plugin raises, and the layers the built-in tracks share
(``embed_tokens``, ``PositionalTokens``, ``MeanPool``, ``LastToken``: torch modules, imported only
when one is asked for). ``import benchsuite`` never imports torch. Running benchmarks from
Python: :mod:`benchsuite.api`; testing a mixer: :mod:`benchsuite.testing`; a mixer in one call:
``create_mixer(name, tokens, dim, **options)`` and ``list_mixers(pattern)``
(:mod:`benchsuite.factory`, loaded on first use).
"""

from typing import Any

from benchsuite.budget import Budget, lr_grid
from benchsuite.errors import PluginError, UsageError
from benchsuite.hookspecs import hookimpl
from benchsuite.kit.forecasting import ForecastTrack
from benchsuite.seeds import Streams
from benchsuite.specs import (
    ISOMETRY,
    Metric,
    Mixer,
    Option,
    Signature,
    Track,
    TrackData,
    wrap,
)
from benchsuite.version import __version__

_LAYERS = ("LastToken", "MeanPool", "PositionalTokens", "embed_tokens")


_FACTORY = ("create_mixer", "list_mixers")


def __getattr__(name: str) -> Any:
    """A shared layer of :mod:`benchsuite.kit.layers`, imported (with torch) on first use, or
    a function of :mod:`benchsuite.factory` (which loads the plugins)."""
    if name in _LAYERS:
        from benchsuite.kit import layers

        return getattr(layers, name)
    if name in _FACTORY:
        from benchsuite import factory

        return getattr(factory, name)
    raise AttributeError(f"module 'benchsuite' has no attribute {name!r}")


__all__ = [
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
    "create_mixer",
    "embed_tokens",
    "hookimpl",
    "list_mixers",
    "lr_grid",
    "wrap",
]
