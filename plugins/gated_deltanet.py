"""``gated_deltanet``: the gated delta rule (Yang, Kautz & Hatamizadeh, "Gated Delta Networks:
Improving Mamba2 with Delta Rule", ICLR 2025, arXiv:2412.06464), causal.

DeltaNet (see ``deltanet``) with a data-dependent decay of the whole state before each write,
S_t = a_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T with a_t = exp(-exp(A) softplus(w^T x_t
+ b)) per head (Mamba-2's gate), and a SiLU output gate. The chunked form and the recurrence are
``deltanet``'s :func:`parallel` and :func:`recurrent` with ``log_decay = log a_t``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, heads: int = 4, conv: int = 4) -> nn.Module:
    """Gated DeltaNet with ``heads`` heads and a ``conv``-tap short convolution."""
    from benchsuite.mixers.deltanet import build as deltanet

    return deltanet(tokens, dim, heads, conv, gated=True, name="gated_deltanet")


@hookimpl
def benchsuite_register_mixers(register) -> None:
    from benchsuite.mixers.deltanet import OPTIONS

    register(
        Mixer(
            name="gated_deltanet",
            build=build,
            description="Gated DeltaNet: the delta rule with a data-dependent decay, causal",
            options=OPTIONS,
            fixed_tokens=False,
            causal=True,
            tags=("recurrent",),
        )
    )
