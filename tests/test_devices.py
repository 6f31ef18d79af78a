"""Device placement: every tensor a job creates lives on the job's device.

No GPU is here, so jobs run on torch's ``meta`` device (shapes, no data) under a dispatch mode
that fails any operation mixing CPU tensors with the job's device, as CUDA would (a CPU scalar
is allowed, as on CUDA). Values the job reads back (``float(t)``, copies to the CPU for numpy
metrics) are answered with ones or random numbers, so the whole job path runs: data, model,
stacked training, evaluation and scoring.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from benchsuite.plan.jobs import cell_jobs, grid_of
from benchsuite.plan.resolve import resolve
from benchsuite.records import Job
from benchsuite.registry import load_registry
from benchsuite.settings import RunSettings
from benchsuite.specs import Mixer, Track
from benchsuite.train.job import run_job, run_jobs_batched

aten = torch.ops.aten
CPU = torch.device("cpu")
COPIES = {
    aten._to_copy.default,
    aten.copy_.default,
    aten._copy_from.default,
    aten._copy_from_and_resize.default,
}


class OnMeta(TorchDispatchMode):
    """Fails an op that mixes devices; reads of meta values give ones or random numbers."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if func is aten._local_scalar_dense.default:
            return True if tensors[0].dtype == torch.bool else 1
        to_cpu = func.overloadpacket in (aten._to_copy, aten.to) and kwargs.get("device") == CPU
        if to_cpu and tensors[0].device.type == "meta":
            dtype = kwargs.get("dtype") or tensors[0].dtype
            values = torch.rand(tensors[0].shape) if dtype.is_floating_point else torch.ones(1)
            return values.to(dtype).expand(tensors[0].shape).clone()
        devices = {t.device.type for t in tensors if t.dim() > 0}
        if len(devices) > 1 and func not in COPIES:
            raise RuntimeError(f"{func} mixes devices {sorted(devices)}")
        return func(*args, **kwargs)


REGISTRY = load_registry()
QUICK = sorted(name for name, track in REGISTRY.tracks.items() if "quick" in track.budgets)


def meta_jobs(track: str, mixer: str = "dense") -> tuple[list[Job], tuple[Track, Mixer]]:
    """The track's first two jobs, moved to the meta device and cut to 3 steps."""
    asked = RunSettings(tracks=(track,), mixers=("dense", "identity"), seeds=2)
    settings = resolve(asked, REGISTRY)
    found = REGISTRY.tracks[track], REGISTRY.mixers[mixer]
    jobs = cell_jobs(settings, *found, grid_of(found[0], settings), "test")
    steps = dataclasses.replace(jobs[0].budget, steps=3)
    return [dataclasses.replace(job, device="meta", budget=steps) for job in jobs], found


def test_the_check_catches_a_cpu_tensor_indexed_by_a_device_tensor() -> None:
    with OnMeta(), pytest.raises(RuntimeError, match="mixes devices"):
        torch.ones(4)[torch.zeros(3, dtype=torch.long, device="meta")]


@pytest.mark.parametrize("track", QUICK)
def test_a_job_keeps_every_tensor_on_its_device(track: str) -> None:
    jobs, (found_track, mixer) = meta_jobs(track)
    with OnMeta():
        result = run_job(jobs[1], found_track, mixer)
    assert result.costs.members == len(jobs[1].grid)  # the configs trained as one stack


def test_seeds_trained_as_one_stack_keep_every_tensor_on_their_device() -> None:
    jobs, (found_track, mixer) = meta_jobs("tabular")
    with OnMeta():
        results = run_jobs_batched(jobs, found_track, mixer)
    assert [r.costs.batched_seeds for r in results] == [2.0, 2.0]
