"""The parameter count of a job's model, built on the ``meta`` device: no memory, no init cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite.specs import Mixer, Track, TrackData

if TYPE_CHECKING:
    from benchsuite.records import Job


def parameter_count(track: Track, mixer: Mixer, data: TrackData, job: Job) -> int:
    """Every parameter of the model ``job`` trains on ``data`` (as
    :func:`benchsuite.train.job.build_model` builds it); built on the CPU when a module cannot be
    built on ``meta`` (one that computes values from its weights while it is built)."""
    import torch

    from benchsuite.train.job import build_model

    try:
        with torch.device("meta"):
            model = build_model(track, mixer, data, job)
    except (NotImplementedError, RuntimeError):
        model = build_model(track, mixer, data, job)
    return sum(p.numel() for p in model.parameters())
