"""Where benchsuite keeps data and caches on disk."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Cache folder for generated data: ``$BENCHSUITE_CACHE`` or ``~/.cache/benchsuite``."""
    return Path(os.environ.get("BENCHSUITE_CACHE", Path.home() / ".cache" / "benchsuite"))


def data_dir(explicit: str | None = None) -> Path:
    """Real datasets: ``--data-dir``, else ``$BENCHSUITE_DATA``, else ``cache_dir()/data``."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("BENCHSUITE_DATA", cache_dir() / "data"))
