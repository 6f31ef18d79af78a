"""Counters of what a model costs: parameters, forward FLOPs, training step time and memory.

Training runs record the first two; ``benchsuite list --costs`` (:mod:`benchsuite.commands.costs`)
measures them all on the real model of a track, on one batch of its training data:

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
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from benchsuite.measures import Costs
from benchsuite.specs import Track
from benchsuite.train.fit import synchronize


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


def parameter_counts(model: nn.Module, mixers: Sequence[nn.Module]) -> Costs:
    """``params`` (the whole model) and ``mixer_params`` (trainable, summed over ``mixers``)."""
    return Costs(
        params=float(sum(p.numel() for p in model.parameters())),
        mixer_params=float(
            sum(p.numel() for m in mixers for p in m.parameters() if p.requires_grad)
        ),
    )


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


def step_seconds(
    model: nn.Module, track: Track, x: Tensor, y: Tensor, lr: float, warmup: int = 2, steps: int = 5
) -> float:
    """Median seconds of an AdamW training step on ``(x, y)`` after ``warmup`` untimed steps."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # as in training
    model.train()
    times = []
    for step in range(warmup + steps):
        synchronize(x.device)
        start = time.perf_counter()
        loss = track.loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        synchronize(x.device)
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)
