"""benchsuite: a multi-track benchmark suite for neural token mixers.

This module is a plugin author's whole import surface, exactly what docs/writing-a-mixer.md and
docs/tracks.md point to: the hook marker, the mixer and track contracts and their parts,
``wrap`` for a third-party layer, the forecasting track base, the seed streams a track draws its
data from, and the two errors a plugin raises. It never imports torch. Running benchmarks from
Python: :mod:`benchsuite.api`; testing a mixer: :mod:`benchsuite.testing`.
"""

from benchsuite.errors import PluginError, UsageError
from benchsuite.hookspecs import hookimpl
from benchsuite.seeds import Streams
from benchsuite.specs import (
    ISOMETRY,
    Budget,
    Metric,
    Mixer,
    Option,
    Signature,
    Track,
    TrackData,
    lr_grid,
    wrap,
)
from benchsuite.train.forecasting import ForecastTrack

__version__ = "0.1.0"

__all__ = [
    "ISOMETRY",
    "Budget",
    "ForecastTrack",
    "Metric",
    "Mixer",
    "Option",
    "PluginError",
    "Signature",
    "Streams",
    "Track",
    "TrackData",
    "UsageError",
    "__version__",
    "hookimpl",
    "lr_grid",
    "wrap",
]
