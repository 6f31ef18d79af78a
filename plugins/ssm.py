"""``ssm``: a diagonal state-space layer over tokens (S4D-Lin, Gu et al., 2022), causal.

Each feature d runs its own linear state-space model x' = A x + B u, y = Re(C x) + D u with a
complex diagonal A (real part -exp(log_decay) < 0, imaginary part pi * n), discretised by
zero-order hold with a learned step. The layer is its length-T convolution kernel
K[l] = 2 Re(sum_n C_n (exp(dt A_n) - 1) / A_n * exp(dt A_n l)) applied by FFT, then GELU and a
linear output map.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite import Mixer, Option, hookimpl

if TYPE_CHECKING:
    from torch import nn


def build(tokens: int, dim: int, state: int = 16) -> nn.Module:
    """An S4D layer; ``state`` is the state size N per feature (N/2 complex-conjugate modes)."""
    import torch
    from torch import nn

    if state < 2 or state % 2:
        raise ValueError(f"mixer ssm: state must be even and >= 2 (got {state})")
    modes = state // 2

    class DiagonalSSM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            log_dt = torch.rand(dim) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)
            self.log_dt = nn.Parameter(log_dt)
            self.log_decay = nn.Parameter(torch.full((dim, modes), math.log(0.5)))
            self.frequency = nn.Parameter(math.pi * torch.arange(modes).float().expand(dim, -1))
            self.c = nn.Parameter(torch.randn(dim, modes, 2) * 0.5**0.5)
            self.skip = nn.Parameter(torch.randn(dim))
            self.out = nn.Linear(dim, dim)

        def kernel(self, length: int) -> torch.Tensor:
            """The convolution kernel K, shape (length, dim)."""
            a = torch.complex(-torch.exp(self.log_decay), self.frequency)  # (dim, modes)
            dta = a * torch.exp(self.log_dt)[:, None]
            c = torch.view_as_complex(self.c) * (torch.exp(dta) - 1) / a
            # Re(c exp(dta l)) in real arithmetic: complex exp over (dim, modes, length) costs
            # several times more, and the kernel dominated the layer's time
            steps = torch.arange(length, device=a.device, dtype=dta.real.dtype)
            decay = torch.exp(dta.real[:, :, None] * steps)  # (dim, modes, length)
            angle = dta.imag[:, :, None] * steps
            terms = decay * (
                c.real[:, :, None] * torch.cos(angle) - c.imag[:, :, None] * torch.sin(angle)
            )
            return 2 * terms.sum(dim=1).T

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            length, size = x.shape[1], 2 * x.shape[1]
            spectrum = torch.fft.rfft(x, n=size, dim=1) * torch.fft.rfft(
                self.kernel(length), n=size, dim=0
            )
            y = torch.fft.irfft(spectrum, n=size, dim=1)[:, :length].to(x.dtype)
            return self.out(nn.functional.gelu(y + self.skip * x))

    return DiagonalSSM()


@hookimpl
def benchsuite_register_mixers(register) -> None:
    register(
        Mixer(
            name="ssm",
            build=build,
            description="diagonal state-space layer over tokens (S4D), causal, FFT convolution",
            options=(Option("state", int, 16, "state size per feature (even)"),),
            fixed_tokens=False,
            causal=True,
        )
    )
