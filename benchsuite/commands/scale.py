"""``benchsuite scale``: what one training step of each mixer costs as the sequence grows.

For each mixer and each token count of a ladder, a separate process of the execute pool
(:class:`~benchsuite.execute.pool.ProcessExecutor`: torch imported once; a fresh one after any
point that was not measured) builds the shared encoder
(:func:`benchsuite.train.encoder.build_encoder`) with that mixer in every block, at a fixed width,
depth and batch, on a **synthetic input**: random tokens (batch x tokens x width, no tokenizer), a
mean-pooled linear regression head and an MSE loss against random targets. It measures, with the
counters of :mod:`benchsuite.train.measures`:

- ``seconds_per_step``: median wall time of an AdamW training step (forward, loss, backward,
  update) after warm-up steps, over ``steps`` steps or, when they are short, as many as take
  about 0.25 s (``timed_steps``, at most 50);
- ``activation_bytes``: the bytes autograd saves in one training-mode forward; on CUDA also
  ``peak_memory_bytes``, the peak allocated while the model is built, measured and trained
  (``memory`` names the one the memory figure and limit use);
- ``flops_per_example``: forward FLOPs of the batch over its size; ``params``, ``mixer_params``.

A point is ``"over budget"`` when its first training step or its median step takes longer than
``max_seconds``, when it is still running ``(warmup + steps + 3) x max_seconds + 5`` seconds after
it was handed to the process (the process is killed), when its memory figure exceeds
``max_memory``, or when it cannot allocate memory (on a CPU under Linux, the point's process may
allocate at most ``max_memory`` + 512 MiB beyond what importing torch took). An over-budget or
failed point ends its mixer's ladder; a length the mixer does not support (its ``supports``) is
recorded with the reason and the ladder goes on. Nothing a point does can crash or hang the command.

Each mixer's ``exponents`` are the least-squares slopes of log(quantity) against log(tokens) over
the upper half of its measured points (at least two): about 1 for a cost linear in the length,
2 for a quadratic one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchsuite import serial
from benchsuite.commands.scale_points import Point, PointWorker, deadline
from benchsuite.commands.scale_settings import ScaleSettings
from benchsuite.errors import UsageError
from benchsuite.measures import FIGURED, memory_on
from benchsuite.registry import variants
from benchsuite.vocabulary import PointStatus

if TYPE_CHECKING:
    from benchsuite.execute.pool import ProcessExecutor
    from benchsuite.registry import Registry

__all__ = ["ScaleSettings", "exponents", "scale"]

SYNTHETIC_INPUT = (
    "synthetic: random tokens (batch x tokens x width), mean-pooled linear regression head, "
    "MSE loss against random targets"
)


def scale(
    registry: Registry,
    settings: ScaleSettings,
    on_point: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Measure every mixer along the ladder in a killable process; the scaling record.

    The record has ``input`` (what the model sees), ``settings``, ``environment``, ``memory``
    (``activation_bytes`` or ``peak_memory_bytes``), ``baseline`` and per mixer its
    ``description``, ``points`` (``tokens``, ``status``, the measures or a ``reason``) and
    ``exponents`` (per quantity, None with fewer than two measured points). ``on_point`` is
    called with each point as it is finished.
    """
    from benchsuite.plan.environment import describe
    from benchsuite.train.reference import reference_step_seconds

    settings.check()
    chosen = variants.select(
        settings.mixers or sorted(registry.mixers), registry.mixers, registry.unavailable
    )
    base = variants.parse(settings.baseline, registry.mixers, registry.unavailable)
    chosen = [base, *(v for v in chosen if v.name != base.name)]
    names = [v.name for v in chosen]
    unknown = sorted(set(settings.mixer_options) - {v.base for v in chosen})
    if unknown:
        raise UsageError(f"--mixer-option {unknown[0]}: not among the mixers measured")
    options = variants.variant_options(chosen, registry.mixers, settings.mixer_options)
    settings = dataclasses.replace(settings, mixer_options=options, baseline=base.name)
    from benchsuite.execute.pool import ProcessExecutor

    mixers = {}
    measuring = ProcessExecutor(PointWorker(settings), 1, timeout=deadline(settings), retries=0)
    try:
        for name in names:
            mixer = variants.lookup(registry.mixers, name)
            points = []
            for tokens in settings.tokens:
                reason = mixer.reason_unsupported(tokens, settings.width, options[name])
                if reason:
                    point = {"tokens": tokens, "status": PointStatus.UNSUPPORTED, "reason": reason}
                else:
                    point = {"tokens": tokens, **_measure(measuring, Point(name, tokens))}
                points.append(point)
                if on_point:
                    on_point(name, point)
                if point["status"] in (PointStatus.OVER_BUDGET, PointStatus.FAILED):
                    break
            mixers[name] = {
                "description": mixer.description,
                "points": points,
                "exponents": exponents(points),
            }
    finally:
        measuring.close()
    cuda = settings.device.startswith("cuda")
    return {
        "kind": "scaling",
        "input": SYNTHETIC_INPUT,
        "settings": settings.record(),
        "environment": serial.to_plain(
            describe(settings.device, settings.threads, reference_step_seconds())
        ),
        "memory": memory_on(cuda),
        "baseline": settings.baseline,
        "mixers": mixers,
    }


def _measure(measuring: ProcessExecutor, point: Point) -> dict[str, Any]:
    """One point's record from the pool; a measuring process that cannot start is an error."""
    try:
        (record,) = measuring.map([point])  # unpacking runs the pool's loop to its end
    except RuntimeError as error:  # the pool's one-line account of a death at start-up
        raise UsageError(f"benchsuite scale: {error}") from None
    return record


def exponents(points: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per quantity, the log-log slope over the upper half of the measured points (>= 2)."""
    import numpy as np

    done = [p for p in points if p["status"] == PointStatus.OK]
    upper = done[min(len(done) // 2, max(len(done) - 2, 0)) :]
    slopes: dict[str, float | None] = {}
    for key in FIGURED:
        pairs = [(p["tokens"], p[key]) for p in upper if (p.get(key) or 0) > 0]
        if len(pairs) < 2:
            slopes[key] = None
            continue
        x, y = np.log(np.array(pairs, dtype=float)).T
        slopes[key] = float(np.polyfit(x, y, 1)[0])
    return slopes
