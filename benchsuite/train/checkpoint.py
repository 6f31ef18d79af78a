"""A job's training saved as it goes, so that a job stopped in flight (Ctrl-C, SIGTERM, a killed
worker) resumes where its last save left it and ends with the same metrics, bit for bit.

The training loop (:func:`benchsuite.train.fit.train_loop`) saves its whole state every
``every`` seconds of wall time and, if it saved before, once more when it ends (so the configs of
a grid trained one after the other are not trained again): the step reached, the losses so far,
which members stopped and why, the stopping rule's watches and halvings, the optimiser (its
parameters and moments), the random generator, and what its caller keeps (a stack's members
frozen or at their best check, a lone model's halving marks). A job's saves live in
``OUT/checkpoints/<job key>/`` (a key covers the job's code, settings and seed, so a save is never
read by another job) and are removed once its record is stored. Saving goes through a temporary
file and a rename, so a process killed mid-save leaves the previous save whole.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchsuite import disk

SAVE_SECONDS = 120.0  # wall seconds between saves of a training loop

log = logging.getLogger(__name__)


class Resumable(Protocol):
    """What a training loop's caller keeps beside the loop, saved and restored with it."""

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Saves:
    """Where a run keeps its jobs' saves, and how often a loop saves."""

    folder: Path
    every: float = SAVE_SECONDS

    def job(self, name: str) -> Path:
        """The folder of one job's saves (a batched cell's: its own name)."""
        return self.folder / name

    def clear(self, name: str) -> None:
        """Remove one job's saves (its record is stored: nothing to resume)."""
        shutil.rmtree(self.job(name), ignore_errors=True)

    def held(self) -> int:
        """How many jobs have saves waiting to be resumed."""
        return sum(1 for _ in self.folder.iterdir()) if self.folder.is_dir() else 0


@dataclass
class Checkpoint:
    """One training loop's save file: loaded when it starts, written every ``every`` seconds, and
    when it ends if it was written before (a loop shorter than ``every`` never writes one)."""

    path: Path
    every: float = SAVE_SECONDS
    _last: float = field(default_factory=time.monotonic)
    written: bool = False  # a save of this loop is on disk

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none."""
        import torch

        if not self.path.is_file():
            return None
        self.written = True
        return torch.load(self.path, map_location="cpu", weights_only=False)

    def due(self) -> bool:
        """Whether ``every`` seconds have passed since the last save (or the start)."""
        return time.monotonic() - self._last >= self.every

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` (whole or not at all: a temporary file, then a rename). A folder that
        cannot be written (a Ray worker on a machine without the run's folder, a full disk)
        ends the saving, not the job, with one warning naming the path and the cause."""
        import torch

        partial = self.path.with_suffix(".partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(state, partial)
            os.replace(partial, self.path)
        except (OSError, RuntimeError) as error:  # torch's writer: "iostream error"
            partial.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # a folder left empty would be an orphan
                self.path.parent.rmdir()
            why = disk.cause(self.path, error)
            log.warning("training not saved to %s (no more saves of it): %s", self.path, why)
            self.every = math.inf
            return
        self._last, self.written = time.monotonic(), True


def checkpoint(saves: Saves | None, job: str, name: str) -> Checkpoint | None:
    """The checkpoint ``name`` of job ``job`` under ``saves`` (None: the run keeps none)."""
    if saves is None:
        return None
    return Checkpoint(saves.job(job) / f"{name}.pt", saves.every)
