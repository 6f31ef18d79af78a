"""``fnet``: FNet's parameter-free mixing, the real part of a 2-D FFT over tokens and features.

The transform is orthonormal (``norm="ortho"``) rather than FNet's unnormalised one: in a pre-norm
residual block x + mixer(norm(x)) an unnormalised FFT would scale the branch by sqrt(T * D). The
result mixes features as well as tokens, so there is no per-column ``token_matrix``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchsuite import Mixer, Signature, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int) -> nn.Module:
    """A module y = Re(FFT2(x)) over the (token, feature) axes, orthonormal, no parameters."""
    import torch
    from torch import nn

    class FourierMixer(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.fft.fft2(x, dim=(1, 2), norm="ortho").real.to(x.dtype)

    return FourierMixer()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="fnet",
            build=build,
            description="real part of an orthonormal 2-D FFT over tokens and features (FNet)",
            fixed_tokens=False,
            causal=False,
            signature=Signature(
                prediction="Fourier mixing has no trainable parameters",
                predicted={"mixer_params": 0.0},
            ),
        )
    )
