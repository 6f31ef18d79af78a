"""Why a write to disk failed, in words a person can act on (docs/running.md, "Faults a run
survives"): the store and the checkpoints name the path and this cause in one line.

SQLite says "disk I/O error" or "database or disk is full" and torch's writer "iostream error",
whatever the cause; the file system and the process's limits tell which it is.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

LOW = 1 << 20  # free bytes below which a failed write is put down to a full disk


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} GB"


def file_limit() -> int | None:
    """The largest file this process may write (``ulimit -f``), None where there is no limit."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def cause(path: Path, error: BaseException) -> str:
    """Why writing ``path`` failed with ``error``: a full disk (with its free bytes), a file
    past the process's size limit, else the error's own words."""
    code = getattr(error, "errno", None)
    folder = path if path.is_dir() else path.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if code == errno.ENOSPC or (free is not None and free < LOW):
        return f"no space left on the device ({_size(free or 0)} free)"
    limit = file_limit()
    if code == errno.EFBIG or limit is not None:
        most = f"{_size(limit)}" if limit is not None else "a limit"
        return f"file too large: this process may write files of at most {most} (ulimit -f)"
    return str(error)
