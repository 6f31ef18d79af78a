"""Mechanism probes: numbers measured on a (trained) token-mixing module and its input tokens.

A probe is ``probe(module, tokens) -> float`` with tokens of shape (B, T, D), the tokens the
module sees in the encoder (the block's normalised input). Core probes:

- ``norm_ratio``: mean over (example, feature) columns of ||y[b, :, d]|| / ||x[b, :, d]||.
- ``inverse_max_error``: max |M^T M - I| of the token matrix M (``module.token_matrix`` at the first
  example, else the Jacobian of feature column 0 over the token axis at the first example).
- ``cross_token_influence``: max over i != j of sum_{d,e} |dy[i, d] / dx[j, e]|, relative to the
  largest diagonal (i == j) influence, at the first example; 0 when no token sees another.
- ``row_sum_error``: max |row sum - 1| of ``module.token_matrix``; NaN without one.
- ``mixer_params``: the number of trainable parameters.

Every probe runs under ``torch.no_grad`` (the Jacobian ones through ``torch.func.jacrev``, which
ignores it), so tokens captured under ``torch.inference_mode`` are fine. ``measure`` runs probes on
every block and keeps, per probe, the block value farthest from the probe's reference (the ideal
value); ``Signature.check`` compares a mixer's promise with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from benchsuite.specs import Probe, Signature


def _token_matrix(module: nn.Module, x: Tensor) -> Tensor | None:
    """The module's own (B, T, T) token matrix, or None when it declares none."""
    method = getattr(module, "token_matrix", None)
    return method(x) if callable(method) else None


def _column_jacobian(module: nn.Module, x: Tensor) -> Tensor:
    """d y[0, :, 0] / d x[0, :, 0] with every other input held fixed: a (T, T) matrix."""
    first = x[:1]

    def column(values: Tensor) -> Tensor:
        return module(torch.cat([values[None, :, None], first[:, :, 1:]], dim=2))[0, :, 0]

    return torch.func.jacrev(column)(first[0, :, 0])


@torch.no_grad()
def norm_ratio(module: nn.Module, x: Tensor) -> float:
    """Mean over (example, feature) of the output / input Euclidean norm along tokens."""
    y = module(x)
    return (y.norm(dim=1) / x.norm(dim=1)).mean().item()


@torch.no_grad()
def inverse_max_error(module: nn.Module, x: Tensor) -> float:
    """max |M^T M - I| of the token matrix at the first example (Jacobian when none declared)."""
    matrix = _token_matrix(module, x[:1])
    matrix = _column_jacobian(module, x) if matrix is None else matrix[0]
    eye = torch.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)
    return (matrix.T @ matrix - eye).abs().max().item()


@torch.no_grad()
def cross_token_influence(module: nn.Module, x: Tensor) -> float:
    """Largest off-diagonal token-to-token influence over the largest diagonal one (Jacobian)."""
    jacobian = torch.func.jacrev(lambda one: module(one[None])[0], chunk_size=128)(x[0])
    influence = jacobian.abs().sum(dim=(1, 3))  # (T out, T in)
    diagonal = influence.diagonal()
    off = (influence - torch.diag(diagonal)).max().item()
    if off == 0.0:
        return 0.0
    scale = diagonal.max().item()
    return off / scale if scale > 0 else math.inf


@torch.no_grad()
def row_sum_error(module: nn.Module, x: Tensor) -> float:
    """max |sum_t M[s, t] - 1| over rows of the token matrix; NaN when the module has none."""
    matrix = _token_matrix(module, x)
    if matrix is None:
        return math.nan
    return (matrix.sum(dim=-1) - 1).abs().max().item()


@torch.no_grad()
def mixer_params(module: nn.Module, x: Tensor) -> float:
    """The number of trainable parameters of the module."""
    return float(sum(p.numel() for p in module.parameters() if p.requires_grad))


CORE_PROBES: dict[str, Probe] = {
    "norm_ratio": norm_ratio,
    "inverse_max_error": inverse_max_error,
    "cross_token_influence": cross_token_influence,
    "row_sum_error": row_sum_error,
    "mixer_params": mixer_params,
}

REFERENCE: dict[str, float] = {
    "norm_ratio": 1.0,
    "inverse_max_error": 0.0,
    "cross_token_influence": 0.0,
    "row_sum_error": 0.0,
    "mixer_params": 0.0,
}


def probes_for(signature: Signature | None) -> tuple[dict[str, Probe], dict[str, float]]:
    """The core probes plus the signature's own, and references (predicted values win)."""
    if signature is None:
        return dict(CORE_PROBES), dict(REFERENCE)
    probes = {**CORE_PROBES, **signature.probes}
    return probes, {**REFERENCE, **signature.predicted}


def _farthest(values: list[float], reference: float) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return max(finite, key=lambda v: abs(v - reference)) if finite else math.nan


def measure(
    mixers: list[nn.Module],
    inputs: list[Tensor],
    probes: Mapping[str, Probe],
    reference: Mapping[str, float],
) -> dict[str, float]:
    """Run every probe on every block's mixer with that block's mixer input; one value per probe.

    Blocks are aggregated by the value farthest from ``reference[name]`` (0 when absent); NaN block
    values are ignored and a probe that is NaN on every block gives NaN.
    """
    if len(mixers) != len(inputs):
        raise ValueError(f"measure: {len(mixers)} mixers but {len(inputs)} inputs")
    results = {}
    with torch.no_grad():
        for name, probe in probes.items():
            values = [
                float(probe(mixer, x.clone())) for mixer, x in zip(mixers, inputs, strict=True)
            ]
            results[name] = _farthest(values, reference.get(name, 0.0))
    return results
