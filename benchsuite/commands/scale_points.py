"""The points of ``benchsuite scale``, measured in a process of the execute pool: a
:class:`Point` is one length of one mixer's ladder, :class:`PointWorker` the pool's worker (the
process caps its address space, and ends after any point that was not measured), and
:func:`measure_point` what one point measures (see :mod:`benchsuite.commands.scale`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchsuite.commands.scale_settings import ScaleSettings, size_text
from benchsuite.errors import one_line
from benchsuite.measures import Costs
from benchsuite.registry import variants
from benchsuite.seeds import DEFAULT_SALT, Streams
from benchsuite.specs import Mixer, Track
from benchsuite.vocabulary import PointStatus

if TYPE_CHECKING:
    from torch import Tensor

GRACE_SECONDS = 5.0  # added to a point's deadline, for building the model
TIMED_SECONDS = 0.25  # short steps are timed this long in all (at most MAX_STEPS), for stability
MAX_STEPS = 50
HEADROOM_BYTES = 2**29  # address space a point may use beyond --max-memory (Python, allocator)


@dataclass(frozen=True)
class Point:
    """One length of one mixer's ladder, as the measuring pool's task."""

    mixer: str
    tokens: int

    @property
    def key(self) -> str:
        return f"{self.mixer}@{self.tokens}"

    @property
    def label(self) -> str:
        return f"{self.mixer} at {self.tokens} tokens"


class PointWorker:
    """Measures points in a process of the execute pool (torch imported and the plugins loaded
    once, the address space capped); a point that was not measured ends its process, so the next
    one starts in a fresh process."""

    def __init__(self, settings: ScaleSettings) -> None:
        self.settings = settings
        self.mixers: dict[str, Mixer] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings, "mixers": None}

    def setup(self) -> None:
        """In the fresh process: threads, plugins, the memory cap (CPU only)."""
        import torch

        from benchsuite.registry import load_registry

        torch.set_num_threads(self.settings.threads)
        self.mixers = load_registry(self.settings.plugins_dir).mixers
        if not self.settings.device.startswith("cuda"):
            _cap_memory(self.settings.max_memory + HEADROOM_BYTES)

    def __call__(self, point: Point) -> dict[str, Any]:
        mixers = self.mixers or {}
        known = point.mixer in mixers or variants.base_of(point.mixer) in mixers
        mixer = variants.lookup(mixers, point.mixer) if known else None
        return _point(mixer, point.mixer, self.settings, point.tokens)

    def failure(
        self, point: Point, reason: str, details: str, seconds: float, timed_out: bool
    ) -> dict[str, Any]:
        """A point whose process overran its deadline (over budget) or died (failed)."""
        if timed_out:
            return {
                "status": PointStatus.OVER_BUDGET,
                "reason": f"killed after {deadline(self.settings):.3g} "
                f"s, still measuring (--max-seconds {self.settings.max_seconds:g} per step)",
            }
        return {"status": PointStatus.FAILED, "reason": f"the measuring process died: {reason}"}

    def retried(self, record: dict[str, Any], reason: str) -> dict[str, Any]:
        return {**record, "retried_after": reason}

    def retire(self, record: dict[str, Any]) -> bool:
        return record["status"] != PointStatus.OK


def deadline(settings: ScaleSettings) -> float:
    """Seconds a point may run in all before its process is killed."""
    return (settings.warmup + settings.steps + 3) * settings.max_seconds + GRACE_SECONDS


def _point(mixer: Mixer | None, name: str, settings: ScaleSettings, tokens: int) -> dict:
    """:func:`measure_point`, with any error as a failed or over-budget record."""
    if mixer is None:
        return {
            "status": PointStatus.FAILED,
            "reason": f"mixer {name!r} is not registered in a fresh "
            "process (scale loads entry points and --plugins-dir)",
        }
    try:
        return measure_point(mixer, settings, tokens)
    except Exception as error:  # a broken or too large point is a record, never a crash
        if _out_of_memory(error):
            asked = re.search(r"allocate (\d+) bytes", str(error))
            what = f"{size_text(int(asked[1]))} more" if asked else one_line(error)
            return _over(
                {},
                Costs(),
                f"out of memory under --max-memory {size_text(settings.max_memory)} "
                f"(could not allocate {what})",
            )
        return {"status": PointStatus.FAILED, "reason": one_line(error)}


def _cap_memory(limit: int) -> None:
    """Let this process allocate at most ``limit`` more bytes of address space (Linux only)."""
    try:
        import os
        import resource

        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = used + limit if hard == resource.RLIM_INFINITY else min(used + limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):  # not Linux: the measured figure is the only limit
        pass


def _out_of_memory(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError)
        and ("can't allocate memory" in text or "out of memory" in text)
    )


class _Regression(Track):
    """The synthetic task's loss (all :func:`benchsuite.train.measures.step_seconds` needs)."""

    name = "synthetic"

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        from torch.nn import functional

        return functional.mse_loss(prediction, target)


def measure_point(mixer: Mixer, settings: ScaleSettings, tokens: int) -> dict[str, Any]:
    """The measures of ``mixer`` at ``tokens`` in this process (see the module docstring):
    ``status`` ok or over budget, with a ``reason`` when over budget."""
    import torch
    from torch import nn

    from benchsuite.train.encoder import build_encoder
    from benchsuite.train.measures import (
        activation_bytes,
        forward_flops,
        parameter_counts,
        step_seconds,
    )

    device = torch.device(settings.device)
    cuda = device.type == "cuda"
    before = torch.cuda.memory_allocated(device) if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    width, streams = settings.width, Streams(DEFAULT_SALT, "scale", 0)

    class MeanHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(width, 1)

        def forward(self, encoded: Tensor) -> Tensor:
            return self.linear(encoded.mean(dim=1))

    build = mixer.builder()
    options = dict(settings.mixer_options.get(mixer.name, {}))
    model = build_encoder(
        make={"tokenizer": nn.Identity, "head": MeanHead},
        make_mixer=lambda: build(tokens, width, **options),
        dim=width,
        depth=settings.depth,
        mlp_ratio=settings.mlp_ratio,
        seed_of=lambda part: streams.int_seed(f"init/{part}"),
    ).to(device)
    generator = torch.Generator().manual_seed(streams.int_seed("data"))
    x = torch.randn(settings.batch, tokens, width, generator=generator).to(device)
    y = torch.randn(settings.batch, 1, generator=generator).to(device)
    costs = parameter_counts(model, model.mixers())
    costs.activation_bytes = activation_bytes(model, x)
    costs.flops_per_example = forward_flops(model, x) / settings.batch
    point: dict[str, Any] = {"status": PointStatus.OK}
    if not cuda and costs.activation_bytes > settings.max_memory:
        taken, cap = size_text(costs.activation_bytes), size_text(settings.max_memory)
        return _over(point, costs, f"activations take {taken} > --max-memory {cap}")
    task, limit = _Regression(), settings.max_seconds
    first = step_seconds(model, task, x, y, settings.lr, warmup=0, steps=1)
    if first > limit:
        return _over(point, costs, f"a training step took {first:.3g} s > --max-seconds {limit:g}")
    timed = max(settings.steps, min(MAX_STEPS, math.ceil(TIMED_SECONDS / max(first, 1e-6))))
    point["timed_steps"] = timed
    costs.seconds_per_step = step_seconds(
        model, task, x, y, settings.lr, settings.warmup - 1, timed
    )
    if cuda:
        costs.peak_memory_bytes = float(torch.cuda.max_memory_allocated(device) - before)
        if costs.peak_memory_bytes > settings.max_memory:
            return _over(
                point,
                costs,
                f"peak allocated {size_text(costs.peak_memory_bytes)} > --max-memory "
                f"{size_text(settings.max_memory)}",
            )
    if costs.seconds_per_step > limit:
        return _over(
            point, costs, f"median step {costs.seconds_per_step:.3g} s > --max-seconds {limit:g}"
        )
    return {**point, **dict(costs.items())}


def _over(point: dict[str, Any], costs: Costs, reason: str) -> dict[str, Any]:
    return {**point, **dict(costs.items()), "status": PointStatus.OVER_BUDGET, "reason": reason}
