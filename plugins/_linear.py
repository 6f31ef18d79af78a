"""Shared pieces of the recurrent mixers: chunked linear attention with decay, the chunked delta
rule, their step-by-step recurrences, a short causal convolution and head helpers.

Not a plugin (no hook): ``gla``, ``retnet``, ``based``, ``deltanet`` and ``gated_deltanet`` import
it inside ``build``. Tensors are (batch, heads, tokens, features). Decays enter as log values
(``log_decay`` <= 0) and are cumulated inside each chunk, so every exponential taken has a
non-positive argument: no overflow however strong the decay.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from benchsuite import UsageError


def check_heads(mixer: str, size: int, heads: int, what: str = "dim") -> int:
    """The per-head width; a one-line error when ``heads`` does not divide ``size``."""
    if heads < 1 or size % heads:
        raise UsageError(f"mixer {mixer}: {what} {size} is not divisible by heads={heads}")
    return size // heads


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, H * d) -> (B, H, T, d)."""
    return x.unflatten(-1, (heads, -1)).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d) -> (B, T, H * d)."""
    return x.transpose(1, 2).flatten(2)


class ShortConv(nn.Module):
    """A depthwise causal convolution over tokens, (B, T, C) -> (B, T, C), ``kernel`` taps.

    The parameters are a depthwise ``nn.Conv1d``'s (its initialisation); the forward computes the
    same convolution as a sum of ``kernel`` shifted products, which under vmap on the CPU is
    1.8x faster forward and backward than ``conv1d`` (docs/performance.md)."""

    def __init__(self, channels: int, kernel: int) -> None:
        super().__init__()
        if kernel < 1:
            raise UsageError(f"short convolution: kernel must be >= 1 (got {kernel})")
        self.conv = nn.Conv1d(channels, channels, kernel, groups=channels, padding=kernel - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, taps = x.shape[1], self.conv.kernel_size[0]
        weight = self.conv.weight[:, 0]  # (C, taps): tap i multiplies x_{t - (taps - 1) + i}
        padded = functional.pad(x, (0, 0, taps - 1, 0))
        out = self.conv.bias + padded[:, :tokens] * weight[:, 0]
        for i in range(1, taps):
            out = out + padded[:, i : i + tokens] * weight[:, i]
        return out


def head_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMS normalisation of each head's output over its features, (B, H, T, d)."""
    return functional.rms_norm(x, (x.shape[-1],), weight, eps=1e-6)


def _chunks(chunk: int, *tensors: torch.Tensor) -> list[torch.Tensor]:
    """Each (B, H, T, ...) tensor zero-padded and split as (B, H, N, C, ...) with C = the smaller
    of ``chunk`` and T; padding at the end never reaches an earlier token."""
    if chunk < 1:
        raise UsageError(f"chunk must be >= 1 (got {chunk})")
    tokens = tensors[0].shape[2]
    chunk = min(chunk, tokens)
    count = -(-tokens // chunk)
    pad = count * chunk - tokens
    split = []
    for x in tensors:
        widths = (0, 0) * (x.dim() - 3) + (0, pad)
        split.append((functional.pad(x, widths) if pad else x).unflatten(2, (count, chunk)))
    return split


def _pairwise_decay(g: torch.Tensor) -> torch.Tensor:
    """exp(g_i - g_j) for j <= i, else 0, from cumulated log decays g (..., C, f):
    (..., C, C, f)."""
    size = g.shape[-2]
    keep = torch.ones(size, size, dtype=torch.bool, device=g.device).tril()
    difference = g[..., :, None, :] - g[..., None, :, :]
    return difference.masked_fill(~keep[:, :, None], float("-inf")).exp()


def chunk_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    chunk: int = 16,
) -> torch.Tensor:
    """o_t = S_t^T q_t with S_t = diag(exp(log_decay_t)) S_{t-1} + k_t v_t^T, S_0 = 0.

    q, k: (B, H, T, dk); v: (B, H, T, dv); log_decay: (B, H, T, dk) per key feature (GLA),
    (B, H, T, 1) per head (RetNet) or None (no decay). Parallel inside chunks of ``chunk`` tokens,
    a loop over chunks carries the state.
    """
    if log_decay is None:
        log_decay = q.new_zeros(*q.shape[:3], 1)
    q, k, v, g = _chunks(chunk, q, k, v, log_decay)
    g = g.cumsum(3)  # decay from the chunk's start to each token, (B, H, N, C, f)
    decay = _pairwise_decay(g)
    if g.shape[-1] == 1:
        scores = (q @ k.transpose(-1, -2)) * decay[..., 0]
    else:
        scores = torch.einsum("...id,...jd,...ijd->...ij", q, k, decay)
    intra = scores @ v
    if q.shape[2] == 1:  # one chunk: no state to carry
        return intra[:, :, 0, : log_decay.shape[2]]
    q_in = q * g.exp()
    k_out = k * (g[..., -1:, :] - g).exp()
    total = g[..., -1, :].exp()  # (B, H, N, f)
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    inter = []
    for q_c, k_c, v_c, total_c in zip(*(x.unbind(2) for x in (q_in, k_out, v, total)), strict=True):
        inter.append(q_c @ state)
        state = total_c[..., None] * state + k_c.transpose(-1, -2) @ v_c
    out = intra + torch.stack(inter, dim=2)
    return out.flatten(2, 3)[:, :, : log_decay.shape[2]]


def recurrent_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_decay: torch.Tensor | None = None
) -> torch.Tensor:
    """The recurrence of :func:`chunk_linear_attention`, one token at a time (for tests)."""
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    out = []
    for t in range(q.shape[2]):
        if log_decay is not None:
            state = log_decay[:, :, t, :, None].exp() * state
        state = state + k[:, :, t, :, None] * v[:, :, t, None, :]
        out.append((q[:, :, t, :, None] * state).sum(-2))
    return torch.stack(out, dim=2)


def chunk_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    chunk: int = 16,
) -> torch.Tensor:
    """o_t = S_t^T q_t with S_t = a_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, S_0 = 0.

    q, k: (B, H, T, dk); v: (B, H, T, dv); beta: (B, H, T); log_decay = log a_t: (B, H, T), or
    None for DeltaNet (a_t = 1). Inside a chunk the state's corrections u_t = S_t - a_t S_{t-1}
    (as k_t u_t^T) solve a unit lower-triangular system (the WY/UT form of Yang et al. 2024);
    a loop over chunks carries the state.
    """
    if log_decay is None:
        log_decay = beta.new_zeros(beta.shape)
    q, k, v, beta, g = _chunks(chunk, q, k, v, beta[..., None], log_decay[..., None])
    g = g.cumsum(3)  # (B, H, N, C, 1)
    decay = _pairwise_decay(g)[..., 0]  # exp(g_i - g_j), j <= i
    within = (k @ k.transpose(-1, -2)) * decay * beta
    system = torch.eye(within.shape[-1], dtype=q.dtype, device=q.device) + within.tril(-1)
    u = torch.linalg.solve_triangular(system, beta * v, upper=False)
    scores = (q @ k.transpose(-1, -2)) * decay
    if q.shape[2] == 1:  # one chunk: no state to carry
        return (scores @ u)[:, :, 0, : log_decay.shape[2]]
    w = torch.linalg.solve_triangular(system, beta * g.exp() * k, upper=False)
    q_in = q * g.exp()
    k_out = k * (g[..., -1:, :] - g).exp()
    total = g[..., -1, :].exp()  # (B, H, N, 1)
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    out = []
    for u_c, w_c, q_c, s_c, k_c, total_c in zip(
        *(x.unbind(2) for x in (u, w, q_in, scores, k_out, total)), strict=True
    ):
        correction = u_c - w_c @ state
        out.append(q_c @ state + s_c @ correction)
        state = total_c[..., None] * state + k_c.transpose(-1, -2) @ correction
    return torch.stack(out, dim=2).flatten(2, 3)[:, :, : log_decay.shape[2]]


def recurrent_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
) -> torch.Tensor:
    """The recurrence of :func:`chunk_delta_rule`, one token at a time (for tests)."""
    state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])
    out = []
    for t in range(q.shape[2]):
        if log_decay is not None:
            state = log_decay[:, :, t, None, None].exp() * state
        key = k[:, :, t]
        error = v[:, :, t] - (key[..., None] * state).sum(-2)
        state = state + beta[:, :, t, None, None] * key[..., None] * error[..., None, :]
        out.append((q[:, :, t, :, None] * state).sum(-2))
    return torch.stack(out, dim=2)
