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


# file systems whose files other hosts write too: SQLite's write-ahead log needs shared memory
# between the processes of one host (https://www.sqlite.org/wal.html), so a store there can be
# corrupted by runs on two machines
NETWORK = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "lustre", "glusterfs", "ceph", "gpfs")


def mount_of(path: Path, mounts: str) -> tuple[str, str] | None:
    """The mount point and file-system type holding ``path``, from the text of /proc/mounts."""
    best: tuple[str, str] | None = None
    resolved = str(path.resolve())
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best[0])):
            best = (point, fields[2])
    return best


def network_warning(path: Path, mounts: str | None = None) -> str | None:
    """A one-line warning when the store at ``path`` is on a network file system (Linux: read
    from /proc/mounts; elsewhere none)."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text()
        except OSError:
            return None
    found = mount_of(path.parent if not path.exists() else path, mounts)
    if found is None:
        return None
    point, kind = found
    if kind not in NETWORK and not kind.startswith("fuse.sshfs"):
        return None
    return (
        f"the store {path} is on a network file system ({kind} at {point}): SQLite's "
        "write-ahead log needs every run of the folder on one host; run them on one machine, "
        "or give --out a local disk"
    )
