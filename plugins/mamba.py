"""``mamba``: a selective state-space mixer (Gu & Dao, "Mamba: Linear-Time Sequence Modeling with
Selective State Spaces", 2023, arXiv:2312.00752), causal.

The Mamba block's S6 layer in pure PyTorch: x is widened to ``expand * dim`` channels u and a
gate z; u passes a short causal depthwise convolution and SiLU; each channel d then runs
h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t (A diagonal, ``state`` entries, S4D-real init)
with an input-dependent step delta_t = softplus(W_delta u_t) and input-dependent B_t, C_t, and
reads y_t = C_t^T h_t + D u_t; the output is out(y * silu(z)). :func:`parallel` runs the scan
without autograd and with a hand-written backward (itself a scan): on a GPU in parallel inside
chunks (a log-depth product scan, no division, so no overflow) carrying the state across chunks,
on the CPU token by token in place (each state read and written once: there memory traffic, not
the number of operations, bounds the scan; 4-6x faster than the chunks at 16-128 tokens);
:func:`recurrent` is the token-by-token reference with autograd.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, UsageError, hookimpl

if TYPE_CHECKING:
    import torch
    from torch import nn


def _scan_values(
    a: torch.Tensor, b: torch.Tensor, chunk: int, reverse: bool = False
) -> torch.Tensor:
    """h_t = a_t h_{t-1} + b_t over dim 1 of (B, T, ...), h_0 = 0 (``reverse``: h_t = a_t h_{t+1}
    + b_t from the end), without autograd: ``chunk`` 1 token by token, in place; else a
    Hillis-Steele doubling scan inside chunks (log2(chunk) rounds), then one carry per chunk."""
    import torch
    from torch.nn import functional

    if chunk == 1:
        h = b.clone()
        order = range(a.shape[1] - 2, -1, -1) if reverse else range(1, a.shape[1])
        for t in order:
            h[:, t] += a[:, t] * h[:, t + 1 if reverse else t - 1]
        return h
    tokens = a.shape[1]
    chunk = min(chunk, tokens)
    count = -(-tokens // chunk)
    pad = (0, 0) * (a.dim() - 2) + (0, count * chunk - tokens)  # a = 1, b = 0: inert either way
    a = functional.pad(a, pad, value=1.0).unflatten(1, (count, chunk))
    b = functional.pad(b, pad).unflatten(1, (count, chunk))
    step = 1
    while step < chunk:  # in place: each right-hand side is evaluated before the write
        into, source = (slice(None, -step), slice(step, None))[:: 1 if reverse else -1]
        b[:, :, into] += a[:, :, into] * b[:, :, source]
        if count > 1 or 2 * step < chunk:  # one chunk: the last products are never read
            a[:, :, into] = a[:, :, into] * a[:, :, source]
        step *= 2
    if count == 1:  # no state to carry
        return b[:, 0, :tokens]
    edge, order = (0, -1) if reverse else (-1, 1)
    carry, carried = torch.zeros_like(b[:, 0, 0]), []
    edges = list(zip(a[:, :, edge].unbind(1), b[:, :, edge].unbind(1), strict=True))
    for a_edge, b_edge in edges[::order]:
        carried.append(carry)
        carry = b_edge + a_edge * carry
    return (b + a * torch.stack(carried[::order], 1)[:, :, None]).flatten(1, 2)[:, :tokens]


@functools.cache
def _scan_function() -> type:
    """The scan as an autograd function whose backward is the reverse scan: autograd keeps a and
    h only, not every round of the doubling (works under vmap and torch.func)."""
    import torch

    class LinearScan(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a, b, chunk):
            return _scan_values(a, b, chunk)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output)
            ctx.chunk = inputs[2]

        @staticmethod
        def backward(ctx, grad):
            a, h = ctx.saved_tensors
            # dL/dh_t in total: g_t + a_{t+1} dL/dh_{t+1}, a scan from the end
            a_next = torch.cat([a[:, 1:], torch.zeros_like(a[:, :1])], 1)
            total = _scan_values(a_next, grad, ctx.chunk, reverse=True)
            h_before = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
            return total * h_before, total, None

    return LinearScan


def scan(a: torch.Tensor, b: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """h_t = a_t h_{t-1} + b_t over dim 1 of (B, T, ...), h_0 = 0, differentiable; ``chunk``
    None: token by token on the CPU (1), chunks of 16 on a GPU."""
    if chunk is None:
        chunk = 16 if a.is_cuda else 1
    return _scan_function().apply(a, b, chunk)


def parallel(
    u: torch.Tensor,
    delta: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    chunk: int | None = None,
) -> torch.Tensor:
    """The selective scan y_t = C_t^T h_t: u, delta (B, T, D), a (D, N), b, c (B, T, N)
    (``chunk``: :func:`scan`'s)."""
    import torch

    states = scan(torch.exp(delta[..., None] * a), (delta * u)[..., None] * b[:, :, None], chunk)
    return torch.einsum("btdn,btn->btd", states, c)


def recurrent(
    u: torch.Tensor, delta: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> torch.Tensor:
    """The selective scan one token at a time."""
    import torch

    h, out = u.new_zeros(u.shape[0], *a.shape), []
    for t in range(u.shape[1]):
        h = (
            torch.exp(delta[:, t, :, None] * a) * h
            + (delta[:, t] * u[:, t])[..., None] * b[:, t, None]
        )
        out.append((h * c[:, t, None]).sum(-1))
    return torch.stack(out, 1)


def build(tokens: int, dim: int, state: int = 8, expand: int = 2, conv: int = 4) -> nn.Module:
    """A Mamba (S6) mixer: ``state`` entries per channel, ``expand * dim`` channels."""
    import torch
    from torch import nn
    from torch.nn import functional

    from benchsuite.mixers._linear import ShortConv

    if state < 1 or expand < 1:
        raise UsageError(f"mixer mamba: state and expand must be >= 1 (got {state}, {expand})")
    inner, rank = expand * dim, math.ceil(dim / 16)

    class Mamba(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.project = nn.Linear(dim, 2 * inner, bias=False)
            self.conv = ShortConv(inner, conv)
            self.select = nn.Linear(inner, rank + 2 * state, bias=False)
            self.step = nn.Linear(rank, inner)
            dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            with torch.no_grad():  # softplus(bias) = dt in [0.001, 0.1], as in the paper
                self.step.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
            s4d_real = torch.arange(1, state + 1, dtype=torch.float32).repeat(inner, 1)
            self.log_a = nn.Parameter(s4d_real.log())
            self.skip = nn.Parameter(torch.ones(inner))
            self.out = nn.Linear(inner, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            u, z = self.project(x).chunk(2, dim=-1)
            u = functional.silu(self.conv(u))
            low, b, c = self.select(u).split([rank, state, state], dim=-1)
            delta = functional.softplus(self.step(low))
            y = parallel(u, delta, -self.log_a.exp(), b, c) + self.skip * u
            return self.out(y * functional.silu(z))

    return Mamba()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="mamba",
            build=build,
            description="Mamba: selective state-space (S6) mixer with a gate, causal",
            options=(
                Option("state", int, 8, "state entries per channel (N; the paper uses 16)"),
                Option("expand", int, 2, "inner channels as a multiple of dim"),
                Option("conv", int, 4, "taps of the short causal convolution"),
            ),
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
            size_option="expand",
        )
    )
