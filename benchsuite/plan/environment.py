"""What a run records about where it ran: versions, machine, git revision, date."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_QUIET = {"capture_output": True, "text": True, "timeout": 5}
PACKAGES = ("benchsuite", "torch", "torchvision", "numpy", "scipy", "statsmodels", "scikit-learn")


@dataclass
class RunEnvironment:
    """Where a run's plan was made: the date, the versions results depend on, the machine, the
    device and threads each job gets, the git revision and the seconds of one reference step
    (:mod:`benchsuite.train.reference`; None: not measured), which job-seconds are divided by to
    give a cost that compares across machines."""

    date: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    python: str | None = None
    platform: str | None = None
    machine: str | None = None
    cpus: int | None = None
    device: str | None = None
    threads_per_job: int | None = None
    git_revision: str | None = None
    reference_step_seconds: float | None = None


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


def describe(device: str, threads: int, reference_step: float | None) -> RunEnvironment:
    """This machine, now (``reference_step``: measured by the caller)."""
    return RunEnvironment(
        date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        versions=package_versions(),
        python=platform.python_version(),
        platform=platform.platform(),
        machine=platform.machine(),
        cpus=os.cpu_count(),
        device=device,
        threads_per_job=threads,
        git_revision=git_revision(),
        reference_step_seconds=reference_step,
    )
