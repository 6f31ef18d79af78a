"""Third-party layers as mixers in one line: ``wrap`` calls a layer whose forward takes extra
arguments and returns a tuple, a dict or an object, and keeps the output tensor; the optional
flash-linear-attention plugin is listed as unavailable, with its reason, where it cannot run."""

from __future__ import annotations

import importlib.util
import re
from types import SimpleNamespace

import pytest
import torch
from helpers import invoke
from torch import nn

from benchsuite import Mixer, PluginError, UsageError, wrap
from benchsuite.mixers import fla
from benchsuite.plan.resolve import resolve
from benchsuite.registry import load_registry
from benchsuite.settings import RunSettings
from benchsuite.testing import check_mixer

CHECKS = ["shapes", "dtype", "finite", "gradients", "determinism", "batch-independence"]


class CausalMeanLayer(nn.Module):
    """A layer shaped like many a library's: extra arguments, and a tuple (output, cache) back."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask=None, *, scale: float, use_cache=True):
        steps = torch.arange(1, hidden_states.shape[1] + 1, dtype=hidden_states.dtype)
        mean = hidden_states.cumsum(dim=1) / steps[:, None]
        out = scale * self.proj(mean)
        return out, (mean if use_cache else None)


def causal_mean(tokens: int, dim: int) -> nn.Module:
    return CausalMeanLayer(hidden_size=dim)


def test_a_layer_with_extra_arguments_and_a_tuple_result_passes_the_contract_kit():
    build = wrap(causal_mean, output=0, scale=0.5, use_cache=False)
    check_mixer(Mixer(name="causal_mean", build=build, causal=True), tokens=(8, 12), dims=(16,))
    module, x = build(8, 16), torch.randn(2, 8, 16)
    assert torch.equal(module(x), module.layer(x, scale=0.5, use_cache=False)[0])


@pytest.mark.parametrize(
    ("result", "output"),
    [
        (lambda out: {"hidden": out, "cache": None}, "hidden"),
        (lambda out: SimpleNamespace(last_hidden_state=out), "last_hidden_state"),
        (lambda out: out, None),
    ],
)
def test_output_picks_a_dict_key_an_attribute_or_the_result_itself(result, output):
    class Layer(nn.Linear):
        def forward(self, x):
            return result(super().forward(x))

    module, x = (
        wrap(lambda tokens, dim: Layer(dim, dim), output=output)(8, 16),
        torch.randn(2, 8, 16),
    )
    assert torch.equal(module(x), nn.Linear.forward(module.layer, x))


def test_an_output_that_is_no_tensor_is_a_one_line_error_naming_the_layer():
    module = wrap(causal_mean, output=1, scale=1.0, use_cache=False)(8, 16)  # the cache: None
    with pytest.raises(PluginError, match=r"^wrapped CausalMeanLayer gave NoneType at output=1"):
        module(torch.randn(2, 8, 16))


PLUGIN = """
from benchsuite import Mixer, hookimpl, wrap


def layer(tokens, dim):
    from torch import nn

    return nn.GRU(dim, dim, batch_first=True)  # forward returns (output, last hidden state)


@hookimpl
def benchsuite_register_mixers(register):
    register(Mixer(name="gru", build=wrap(layer, output=0), fixed_tokens=False, causal=True))
"""


def test_a_plugin_file_wraps_a_library_layer_in_one_line(tmp_path):
    (tmp_path / "gru.py").write_text(PLUGIN)
    done = invoke("--plugins-dir", str(tmp_path), "test", "gru", "--tokens", "8", "--dims", "16")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"gru {check}: passed" for check in [*CHECKS, "causality"]]


FLA_RUNS = importlib.util.find_spec("fla") is not None and torch.cuda.is_available()
FLA_NAMES = {f"fla_{name}" for name in fla.LAYERS}


@pytest.mark.skipif(FLA_RUNS, reason="flash-linear-attention and a CUDA device are present here")
def test_fla_layers_are_listed_as_unavailable_with_the_reason_and_never_run():
    registry = load_registry()
    assert set(registry.unavailable) >= FLA_NAMES and not FLA_NAMES & set(registry.mixers)
    reason = registry.unavailable["fla_gla"].unavailable
    assert reason == fla.unavailable() and ("not installed" in reason or "CUDA" in reason)
    default = resolve(RunSettings(tracks=("sequence",), seeds=2), registry)
    assert not FLA_NAMES & set(default.mixers)
    with pytest.raises(
        UsageError, match=re.escape(f"mixer 'fla_gla' is unavailable here: {reason}")
    ):
        resolve(RunSettings(tracks=("sequence",), seeds=2, mixers=("dense", "fla_gla")), registry)
    listed = invoke("list")
    assert listed.returncode == 0, listed.stderr
    assert "fla_deltanet" in listed.stdout and "unavailable" in listed.stdout
    ran = invoke("run", "--mixers", "dense,fla_gla[heads=2]", "--tracks", "sequence")
    assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
        f"error: mixer 'fla_gla' is unavailable here: {reason}"
    ]


@pytest.mark.skipif(not FLA_RUNS, reason="needs flash-linear-attention and a CUDA device")
def test_fla_layers_run_on_a_gpu():
    registry = load_registry()
    assert set(registry.mixers) >= FLA_NAMES
    for name in sorted(FLA_NAMES):
        module = registry.mixers[name].builder()(64, 64, heads=4).cuda()
        x = torch.randn(2, 64, 64, device="cuda")
        assert module(x).shape == x.shape, name
