"""benchsuite: a multi-track benchmark suite for neural token mixers.

This module is a plugin author's whole import surface; it never imports torch.
"""

from benchsuite.forecasting import ForecastTrack
from benchsuite.hookspecs import hookimpl
from benchsuite.specs import (
    ISOMETRY,
    Budget,
    Job,
    Metric,
    Mixer,
    Option,
    PluginError,
    RunRecord,
    Signature,
    Track,
    TrackData,
    UsageError,
    lr_grid,
)

__version__ = "0.1.0"

__all__ = [
    "ISOMETRY",
    "Budget",
    "ForecastTrack",
    "Job",
    "Metric",
    "Mixer",
    "Option",
    "PluginError",
    "RunRecord",
    "Signature",
    "Track",
    "TrackData",
    "UsageError",
    "__version__",
    "hookimpl",
    "lr_grid",
]
