"""Before anything trains: build a mixer at a track's shape and check the module's contract.

Before the first job the run's workers ask it of every (track, mixer) cell, each under the
pre-flight's time limit (:mod:`benchsuite.execute.preflight`; a failing or hanging cell is
skipped with its reason, every one listed in one warning), and each job asks it again inside its
own process. A mixer that cannot be built, or whose module returns the wrong type,
shape, dtype or batch size, fails with a one-line reason naming the mixer and its plugin.
"""

from __future__ import annotations

from benchsuite.errors import UsageError, one_line
from benchsuite.plan.preflight import REFUSED
from benchsuite.specs import Mixer, provenance


def _owner(mixer: Mixer) -> str:
    where = provenance(mixer) or "?"
    return f"mixer {mixer.name!r} (plugin {mixer.plugin!r}, {where})"


def check_mixer(mixer: Mixer, tokens: int, dim: int, options: dict) -> str | None:
    """None when the mixer builds, maps (B, T, D) -> (B, T, D) in float32 and back-propagates,
    else the reason (the run's pre-flight asks this of every cell before any training)."""
    import torch

    try:
        module = mixer.builder()(tokens, dim, **options)
    except UsageError as error:  # bad input: the run stops at planning (plan.preflight.REFUSED)
        return f"{_owner(mixer)}{REFUSED}{one_line(error)}"
    except Exception as error:
        return f"{_owner(mixer)}: build failed: {one_line(error)}"
    if not isinstance(module, torch.nn.Module):
        return (
            f"{_owner(mixer)}: build returned {type(module).__name__}, expected a torch.nn.Module"
        )
    x = torch.randn(3, tokens, dim, generator=torch.Generator().manual_seed(0))
    shape = f"(3, {tokens}, {dim})"
    try:
        y = module(x.requires_grad_())
    except Exception as error:
        return f"{_owner(mixer)}: forward failed on {shape}: {one_line(error)}"
    if not isinstance(y, torch.Tensor):
        return f"{_owner(mixer)}: forward returned {type(y).__name__}, expected a tensor"
    if y.shape[:1] != x.shape[:1]:
        return f"{_owner(mixer)}: changed the batch size from 3 to {y.shape[0]}"
    if y.shape != x.shape:
        return (
            f"{_owner(mixer)}: returned shape {tuple(y.shape)} for input {tuple(x.shape)}; "
            "a mixer must keep (batch, tokens, dim)"
        )
    if y.dtype != x.dtype:
        return f"{_owner(mixer)}: returned {y.dtype} for {x.dtype} input; keep the input's dtype"
    try:
        y.sum().backward()
    except Exception as error:
        return f"{_owner(mixer)}: backward failed on {shape}: {one_line(error)}"
    return None
