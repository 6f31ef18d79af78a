"""What a run records about where it ran: versions, machine, git revision, date."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_QUIET = {"capture_output": True, "text": True, "timeout": 5}
PACKAGES = ("benchsuite", "torch", "torchvision", "numpy", "scipy", "statsmodels", "scikit-learn")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages results depend on (read without importing them)."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def git_revision(folder: Path | None = None) -> str | None:
    """The git commit of the project checkout, when it is one (with ``+dirty`` if modified)."""
    where = folder or Path(__file__).resolve().parent.parent
    try:
        git = ["git", "-C", str(where)]
        head = subprocess.run([*git, "rev-parse", "HEAD"], **_QUIET, check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "-uno"], **_QUIET).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def describe(device: str, threads: int, reference_step: float | None) -> dict[str, object]:
    """The environment block of a run's report, with the seconds of one reference step
    (:mod:`benchsuite.train.reference`, measured by the caller; None: not measured) that
    job-seconds are divided by to give a cost that compares across machines."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "device": device,
        "threads_per_job": threads,
        "git_revision": git_revision(),
        "reference_step_seconds": reference_step,
    }
