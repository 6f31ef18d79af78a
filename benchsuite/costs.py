"""What a mixer costs on a track: parameters, forward FLOPs, training step time and memory.

Every figure is measured on the real model, built by :func:`benchsuite.train.build_model` with the
track's budget, on one batch of the track's training data:

- ``params``: every parameter of the model; ``mixer_params``: the trainable parameters of the
  mixers of all blocks (the same counts a training run records).
- ``flops_per_example``: forward FLOPs of one batch over its size, counted by
  ``torch.utils.flop_counter.FlopCounterMode``. It counts matrix products (mm, addmm, bmm, baddbmm,
  so ``nn.Linear`` and ``einsum``), convolutions and fused attention kernels, at 2 FLOPs per
  multiply-add; benchsuite adds the CPU kernel of ``scaled_dot_product_attention`` and FFTs, at
  5 N log2(n) for complex and 2.5 N log2(n) for real transforms (N elements, n points in the
  transformed axes). Elementwise ops, softmax, normalisation, activations and reductions are not
  counted, and complex products count as real ones.
- ``seconds_per_step``: median wall time of an AdamW training step (forward, loss, backward,
  update) after warm-up steps, with one torch thread unless told otherwise.
- ``activation_bytes``: the bytes of the distinct tensors autograd saves for backward during one
  training-mode forward of the batch, parameters excluded (``saved_tensors_hooks``): the activation
  memory a training step holds at its peak, on any device.
- ``peak_memory_bytes`` (CUDA only): ``torch.cuda.max_memory_allocated`` while the model is built,
  measured and trained, less what was allocated before (model, data, optimizer state, gradients
  and activations).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from benchsuite.plan import OVERRIDABLE, RunRequest, sweep_jobs
from benchsuite.seeds import DEFAULT_SALT, Streams, sweep_seeds
from benchsuite.specs import (
    Budget,
    Mixer,
    Track,
    TrackData,
    check_names,
    one_line,
    resolve_options,
)

if TYPE_CHECKING:
    from rich.console import Console

    from benchsuite.registry import Registry


def _fft_points(shape: Sequence[int], dims: Sequence[int]) -> int:
    return math.prod(shape[d] for d in dims)


def _complex_fft(x_shape, dim, *args, out_shape=None, **kwargs) -> int:
    return round(5 * math.prod(x_shape) * math.log2(max(_fft_points(x_shape, dim), 1)))


def _real_to_complex_fft(x_shape, dim, *args, out_shape=None, **kwargs) -> int:
    return round(2.5 * math.prod(x_shape) * math.log2(max(_fft_points(x_shape, dim), 1)))


def _complex_to_real_fft(x_shape, dim, *args, out_shape=None, **kwargs) -> int:
    return round(2.5 * math.prod(out_shape) * math.log2(max(_fft_points(out_shape, dim), 1)))


def _cpu_attention(query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


EXTRA_FLOPS = {  # ops FlopCounterMode does not count by itself
    torch.ops.aten._fft_c2c: _complex_fft,
    torch.ops.aten._fft_r2c: _real_to_complex_fft,
    torch.ops.aten._fft_c2r: _complex_to_real_fft,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention,
}


def parameter_counts(model: nn.Module, mixers: Sequence[nn.Module]) -> dict[str, float]:
    """``params`` (the whole model) and ``mixer_params`` (trainable, summed over ``mixers``)."""
    return {
        "params": float(sum(p.numel() for p in model.parameters())),
        "mixer_params": float(
            sum(p.numel() for m in mixers for p in m.parameters() if p.requires_grad)
        ),
    }


def forward_flops(model: nn.Module, x: Tensor) -> float:
    """FLOPs of one forward pass on the batch ``x`` (see the module docstring for what counts)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False, custom_mapping=EXTRA_FLOPS)
    model.eval()
    with torch.no_grad(), counter:
        model(x)
    return float(counter.get_total_flops())


def activation_bytes(model: nn.Module, x: Tensor) -> float:
    """Bytes of the distinct non-parameter tensors autograd saves in a training-mode forward."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: Tensor) -> Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    model.train()
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return float(sum(saved.values()))


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_seconds(model: nn.Module, track: Track, x: Tensor, y: Tensor, lr: float,
                 warmup: int = 2, steps: int = 5) -> float:  # fmt: skip
    """Median seconds of an AdamW training step on ``(x, y)`` after ``warmup`` untimed steps."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # as in training
    model.train()
    times = []
    for step in range(warmup + steps):
        _synchronize(x.device)
        start = time.perf_counter()
        loss = track.loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        _synchronize(x.device)
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_costs(
    track: Track,
    mixer: Mixer,
    data: TrackData,
    budget: Budget,
    *,
    preset: str = "quick",
    track_options: Mapping[str, Any] | None = None,
    mixer_options: Mapping[str, Any] | None = None,
    device: str = "cpu",
    threads: int = 1,
    warmup: int = 2,
    steps: int = 5,
    salt: str = DEFAULT_SALT,
) -> dict[str, float]:
    """Parameters, FLOPs, step time and memory of ``mixer`` on ``track`` (keys: module docstring).

    ``data`` must have been loaded with ``track_options`` (defaults when None); one batch of
    ``budget.batch_size`` training examples is used throughout; the model is the one a run of
    ``preset`` builds, with ``budget``'s steps, batch size, width and depth.
    """
    from benchsuite.train import build_model  # train may use this module's counters

    request = RunRequest(
        tracks=(track.name,), mixers=(mixer.name,), baseline=mixer.name, seeds=2, sweep_seeds=1,
        preset=preset,
        track_options={track.name: resolve_options(track.options, track_options or {}, track.name)},
        mixer_options={mixer.name: resolve_options(mixer.options, mixer_options or {}, mixer.name)},
        threads=threads, device=device, salt=salt,
        budget_overrides={key: getattr(budget, key) for key in OVERRIDABLE},
    )  # fmt: skip
    job = sweep_jobs(request, track, mixer, data_key="costs")[0]  # first grid point and sweep seed
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    target = torch.device(device)
    cuda = target.type == "cuda"
    try:
        before = torch.cuda.memory_allocated(target) if cuda else 0
        if cuda:
            torch.cuda.reset_peak_memory_stats(target)
        model = build_model(track, mixer, data, job).to(target)
        size = min(budget.batch_size, len(data.x_train))
        x = torch.from_numpy(np.ascontiguousarray(data.x_train[:size])).to(target)
        y = torch.from_numpy(np.ascontiguousarray(data.y_train[:size])).to(target)
        costs = parameter_counts(model, model.mixers())
        costs["flops_per_example"] = forward_flops(model, x) / size
        costs["activation_bytes"] = activation_bytes(model, x)
        lr = float(job.config.get("lr", 1e-3))
        costs["seconds_per_step"] = step_seconds(model, track, x, y, lr, warmup, steps)
        if cuda:
            costs["peak_memory_bytes"] = float(torch.cuda.max_memory_allocated(target) - before)
    finally:
        torch.set_num_threads(previous_threads)
    return costs


def costs_table(
    registry: Registry,
    preset: str = "quick",
    tracks: Sequence[str] | None = None,
    mixers: Sequence[str] | None = None,
    *,
    baseline: str | None = "dense",
    track_options: Mapping[str, Mapping[str, Any]] | None = None,
    mixer_options: Mapping[str, Mapping[str, Any]] | None = None,
    data_dir: str | None = None,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """One row per track x mixer (default: all) with its costs, or the reason it has none.

    Each row has ``track``, ``mixer``, ``tokens``, ``dim``, ``reason`` (None when measured), the
    :func:`measure_costs` figures, and, when ``baseline`` is measured on the track,
    ``params_vs_baseline`` (model parameters over the baseline model's) and ``param_mismatch``
    (the ratio is off by more than the protocol's 10%). A track whose data cannot be loaded and a
    mixer that cannot run or fails give a row with the reason instead of raising.
    """
    track_names = list(tracks) if tracks else sorted(registry.tracks)
    mixer_names = list(mixers) if mixers else sorted(registry.mixers)
    check_names("track", track_names, registry.tracks)
    check_names("mixer", mixer_names, registry.mixers)
    if baseline is not None:
        check_names("baseline", [baseline], registry.mixers)
        mixer_names = [baseline, *(m for m in mixer_names if m != baseline)]
    rows: list[dict[str, Any]] = []
    for track_name in track_names:
        track = registry.tracks[track_name]
        options = resolve_options(
            track.options, (track_options or {}).get(track_name, {}), track_name
        )
        data, problem = _load(track, options, preset, data_dir)
        cells = [
            _cell(track, registry.mixers[name], data, problem, preset, options,
                  (mixer_options or {}).get(name), device)
            for name in mixer_names
        ]  # fmt: skip
        _compare_params(cells, baseline)
        rows += cells
    return rows


def _load(track: Track, options: dict, preset: str,
          data_dir: str | None) -> tuple[TrackData | None, str | None]:  # fmt: skip
    """The track's data for the first sweep seed (as a run probes it), or why there is none."""
    try:
        streams = Streams(DEFAULT_SALT, track.name, sweep_seeds(1)[0])
        return track.load(streams, options, preset, data_dir), None
    except Exception as error:  # a track without its data still lists the others
        return None, f"track data: {one_line(error)}"


def _cell(track: Track, mixer: Mixer, data: TrackData | None, problem: str | None, preset: str,
          options: dict, mixer_options: Mapping[str, Any] | None,
          device: str) -> dict[str, Any]:  # fmt: skip
    """One row of the costs table: the measured costs, or the reason there are none."""
    budget = track.budget(preset)
    row: dict[str, Any] = {"track": track.name, "mixer": mixer.name, "dim": budget.dim,
                           "tokens": data.tokens if data else None, "reason": problem}  # fmt: skip
    if data is None:
        return row
    row["reason"] = mixer.reason_unsupported(data.tokens, budget.dim)
    if row["reason"] is None:
        try:
            row.update(measure_costs(track, mixer, data, budget, preset=preset,
                                     track_options=options, mixer_options=mixer_options,
                                     device=device))  # fmt: skip
        except Exception as error:  # one broken mixer never hides the others
            row["reason"] = f"failed: {one_line(error)}"
    return row


def _compare_params(cells: list[dict[str, Any]], baseline: str | None) -> None:
    from benchsuite.stats import PARAM_TOLERANCE

    reference = next((c.get("params") for c in cells if c["mixer"] == baseline), None)
    if not reference:
        return
    for cell in cells:
        if "params" in cell:
            cell["params_vs_baseline"] = cell["params"] / reference
            cell["param_mismatch"] = abs(cell["params_vs_baseline"] - 1.0) > PARAM_TOLERANCE


def _count(value: float | None, unit: str = "") -> str:
    if value is None:
        return ""
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{prefix}{unit}"
    return f"{value:.3g}{unit}"


def print_costs(rows: list[dict[str, Any]], console: Console) -> None:
    """One rich table per track of :func:`costs_table` rows; unmeasured mixers with their reason."""
    from rich.table import Table

    for track in dict.fromkeys(row["track"] for row in rows):
        cells = [row for row in rows if row["track"] == track]
        shape = next((f"({c['tokens']} tokens, dim {c['dim']})" for c in cells if c["tokens"]), "")
        memory = "peak allocated" if any("peak_memory_bytes" in c for c in cells) else "activations"
        table = Table(
            title=f"[bold]costs on {track}[/] {shape}",
            caption="params: whole model; vs base: over the baseline's ([yellow]yellow[/]: "
            f"param_mismatch, > 10%); forward FLOPs per example (matmuls, convolutions, attention, "
            "FFTs); memory: "
            f"{memory}",
        )
        for column in ("mixer", "params", "vs base", "mixer params", "FLOPs/ex",
                       "ms/step", "memory"):  # fmt: skip
            table.add_column(column, justify="left" if column == "mixer" else "right")
        for row in cells:
            if row["reason"] is not None:
                continue
            ratio = f"{row['params_vs_baseline']:.2f}x" if "params_vs_baseline" in row else ""
            table.add_row(
                row["mixer"], _count(row["params"]),
                f"[yellow]{ratio}[/]" if row.get("param_mismatch") else ratio,
                _count(row["mixer_params"]), _count(row["flops_per_example"]),
                f"{1e3 * row['seconds_per_step']:.2f}",
                _count(row.get("peak_memory_bytes", row["activation_bytes"]), "B"),
            )  # fmt: skip
        if table.row_count:
            console.print(table)
        for row in cells:
            if row["reason"] is not None:
                console.print(f"[yellow]{track} / {row['mixer']}:[/] {row['reason']}")
