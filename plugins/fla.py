"""flash-linear-attention's layers as mixers (``pip install 'benchsuite[fla]'``), by name.

Yang, Zhang et al., *flash-linear-attention: efficient implementations of linear attention
models* (https://github.com/fla-org/flash-linear-attention). Its layers run only through Triton
kernels on a GPU, so they are registered when the package imports and torch sees a CUDA device;
otherwise every one is listed as unavailable with the reason (``benchsuite list``) and no run
includes it. Each layer's forward returns ``(output, attentions, cache)``: :func:`benchsuite.wrap`
keeps the output. Every layer runs in its causal chunked form, with ``heads`` heads.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from benchsuite import Mixer, Option, hookimpl, wrap
from benchsuite.errors import one_line

# name -> (fla.layers class, description, constructor arguments from (dim, heads), output item)
LAYERS: dict[str, tuple[str, str, Callable[[int, int], dict[str, Any]], int | None]] = {
    "gla": (
        "GatedLinearAttention",
        "gated linear attention (Yang et al. 2024)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads},
        0,
    ),
    "deltanet": (
        "DeltaNet",
        "DeltaNet, the delta rule in chunked form (Yang et al. 2024)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads},
        0,
    ),
    "gated_deltanet": (
        "GatedDeltaNet",
        "gated DeltaNet (Yang, Kautz, Hatamizadeh 2025)",
        lambda dim, heads: {
            "hidden_size": dim,
            "num_heads": heads,
            "head_dim": dim // heads,
            "expand_v": 1,
        },
        0,
    ),
    "retnet": (
        "MultiScaleRetention",
        "multi-scale retention, RetNet (Sun et al. 2023)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads},
        0,
    ),
    "hgrn2": (
        "HGRN2Attention",
        "HGRN2, gated linear RNN with state expansion (Qin et al. 2024)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads, "expand_ratio": None},
        0,
    ),
    "rwkv6": (
        "RWKV6Attention",
        "RWKV-6 time mixing (Peng et al. 2024)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads},
        0,
    ),
    "linear_attention": (
        "LinearAttention",
        "linear attention (Katharopoulos et al. 2020)",
        lambda dim, heads: {"hidden_size": dim, "num_heads": heads},
        0,
    ),
    "based": (
        "BasedLinearAttention",
        "Based, Taylor linear attention (Arora et al. 2024)",
        lambda dim, heads: {
            "hidden_size": dim,
            "num_heads": heads,
            "num_key_value_heads": heads,
            "mode": "chunk",
        },
        None,
    ),
    "mamba2": (
        "Mamba2",
        "Mamba-2, state-space duality (Dao and Gu 2024)",
        lambda dim, heads: {
            "hidden_size": dim,
            "num_heads": heads,
            "head_dim": 2 * dim // heads,
            "state_size": 16,
        },
        0,
    ),
}


def unavailable() -> str:
    """Why the layers cannot run here, or an empty string when they can."""
    if importlib.util.find_spec("fla") is None:
        return "flash-linear-attention is not installed (pip install 'benchsuite[fla]')"
    import torch

    if not torch.cuda.is_available():
        return "needs a CUDA device: flash-linear-attention runs only through Triton kernels"
    try:
        importlib.import_module("fla.layers")
    except Exception as error:  # a broken install must not break `list` or `run`
        return f"flash-linear-attention does not import: {one_line(error)}"
    return ""


def _factory(layer: str, arguments: Callable[[int, int], dict[str, Any]]) -> Callable[..., Any]:
    def factory(tokens: int, dim: int, heads: int = 4) -> Any:
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads={heads}")
        return getattr(importlib.import_module("fla.layers"), layer)(**arguments(dim, heads))

    return factory


@hookimpl
def benchsuite_register_mixers(register) -> None:
    reason = unavailable()
    for name, (layer, description, arguments, output) in LAYERS.items():
        register(
            Mixer(
                name=f"fla_{name}",
                build=wrap(_factory(layer, arguments), output=output),
                description=f"{description}; fla.layers.{layer}",
                options=(Option("heads", int, 4, "number of heads; must divide the model dim"),),
                fixed_tokens=False,
                causal=True,
                tags=("fla", "recurrent"),
                unavailable=reason,
            )
        )
