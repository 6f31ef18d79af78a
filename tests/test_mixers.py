"""Every built-in mixer passes the contract kit; broken mixers (one that mixes across the batch
among them) fail it with a clear message."""

from __future__ import annotations

import importlib
import random
import subprocess
import sys

import pytest
import torch
from torch import nn

from benchsuite import Mixer, Signature, UsageError
from benchsuite.testing import check_mixer, collect_mixers, mixer_contract_tests, run_contract

BUILT_IN = [
    "dense", "attention", "butterfly", "mlp", "fnet", "monarch",
    "pooling", "longconv", "ssm", "identity", "random",
]  # fmt: skip


def built_in(name: str) -> Mixer:
    (mixer,) = collect_mixers(importlib.import_module(f"benchsuite.mixers.{name}"))
    assert mixer.name == name
    return mixer


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.mark.parametrize("name", BUILT_IN)
def test_built_in_mixer_passes_the_contract(name):
    check_mixer(built_in(name), tokens=(8, 16), dims=(16, 32))


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("attention", {"heads": 1}),
        ("mlp", {"expansion": 1}),
        ("monarch", {"init_scale": 0.5}),
        ("pooling", {"pool_size": 5}),
        ("longconv", {"filter": "explicit"}),
        ("longconv", {"causal": False}),
        ("ssm", {"state": 4}),
    ],
)
def test_mixer_options_pass_the_contract(name, options):
    check_mixer(built_in(name), tokens=(12, 16), dims=(16,), options=options)


def test_registering_a_mixer_does_not_import_torch():
    modules = ", ".join(f"benchsuite.mixers.{name}" for name in BUILT_IN)
    code = f"import sys, {modules}\nassert 'torch' not in sys.modules, 'torch was imported'\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_shapes_a_mixer_cannot_take_are_explained():
    assert "power of two" in built_in("butterfly").reason_unsupported(12, 16)
    assert built_in("butterfly").reason_unsupported(16, 16) is None
    assert "factor" in built_in("monarch").reason_unsupported(13, 16)
    assert built_in("monarch").reason_unsupported(12, 16) is None
    with pytest.raises(AssertionError, match="'butterfly' failed shapes: supports"):
        check_mixer(built_in("butterfly"), tokens=(12,))


def test_attention_heads_must_divide_dim():
    with pytest.raises(UsageError, match="not divisible by heads=3"):
        built_in("attention").builder()(8, 16, heads=3)


@pytest.mark.parametrize(
    "name", ["dense", "butterfly", "random", "monarch", "pooling", "attention"]
)
def test_token_matrix_is_what_forward_applies(name):
    """For token-linear mixers y[:, :, d] = M x[:, :, d]; attention's M is its head-average."""
    module = built_in(name).builder()(16, 8)
    x = torch.randn(3, 16, 8)
    matrix = module.token_matrix(x)
    assert matrix.shape == (3, 16, 16)
    if name == "attention":
        weights = module.attention_weights(x)
        assert weights.shape == (3, 4, 16, 16)
        torch.testing.assert_close(weights.mean(dim=1), matrix)
        return
    offset = module(torch.zeros_like(x))  # dense has a per-token bias
    torch.testing.assert_close(module(x) - offset, matrix @ x, atol=1e-5, rtol=1e-5)


def test_butterfly_is_orthogonal_and_changes_with_its_angles():
    module = built_in("butterfly").builder()(32, 4)
    matrix = module.token_matrix(torch.zeros(1, 32, 4))[0].detach()
    torch.testing.assert_close(matrix.T @ matrix, torch.eye(32), atol=1e-5, rtol=0)
    assert (matrix.abs() > 1e-3).float().mean() > 0.5  # log2(T) stages mix every token pair
    with torch.no_grad():
        module.angles.zero_()
    torch.testing.assert_close(module.token_matrix(torch.zeros(1, 32, 4))[0], torch.eye(32))


def test_two_sided_longconv_sees_the_future_and_causal_does_not():
    x = torch.randn(2, 16, 8)
    later = x.clone()
    later[:, 8:] += 1.0
    for causal in (True, False):
        torch.manual_seed(0)
        module = built_in("longconv").builder()(16, 8, causal=causal)
        drift = (module(later) - module(x))[:, :8].abs().max().item()
        assert (drift < 1e-5) == causal


# ----------------------------------------------------------------------------- broken mixers


def broken(name: str, forward, *, causal: bool = False, signature=None) -> Mixer:
    """A mixer whose module holds one linear token map and runs ``forward(module, x)``."""

    def build(tokens: int, dim: int) -> nn.Module:
        class Broken(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.weight = nn.Parameter(torch.randn(tokens, tokens) / tokens**0.5)
                self.unused = nn.Parameter(torch.ones(dim)) if name == "dead" else None

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return forward(self, x)

        return Broken()

    return Mixer(name=name, build=build, causal=causal, signature=signature)


def mix(module, x):
    return torch.einsum("st,btd->bsd", module.weight, x)


@pytest.mark.parametrize(
    ("mixer", "message"),
    [
        (broken("short", lambda m, x: mix(m, x)[:, :-1]), "'short' failed shapes: output shape"),
        (broken("double", lambda m, x: mix(m, x).double()), "'double' failed dtype: float32 input"),
        (broken("nan", lambda m, x: mix(m, x) / 0 * 0), "'nan' failed finite: output has NaN"),
        (broken("dead", mix), "'dead' failed gradients: parameter 'unused' gets no gradient"),
        (
            broken("noisy", lambda m, x: mix(m, x) + random.random()),
            "'noisy' failed determinism",
        ),
        (
            broken("batchmean", lambda m, x: mix(m, x - x.mean(dim=0, keepdim=True))),
            "'batchmean' failed batch-independence: output of example 0 changed by [0-9.]+ when "
            "the other examples of the batch changed, in train mode",
        ),
        (
            broken("evalmean", lambda m, x: mix(m, x if m.training else x - x.mean(dim=0))),
            "'evalmean' failed batch-independence: .* in eval mode",
        ),
        (broken("peeks", mix, causal=True), "'peeks' failed causality: output at token 0"),
        (
            broken("boast", mix, signature=Signature("isometric", {"norm_ratio": 1.0})),
            "'boast' failed signature: norm_ratio = ",
        ),
        (broken("crash", lambda m, x: x @ m.weight), "'crash' failed shapes: forward raised"),
    ],
    ids=lambda value: value.name if isinstance(value, Mixer) else "",
)
def test_broken_mixer_fails_with_a_clear_message(mixer, message):
    with pytest.raises(AssertionError, match=message) as caught:
        check_mixer(mixer, tokens=(8,), dims=(12,))
    text = str(caught.value)
    assert "\n" not in text and "(tokens=8, dim=12)" in text


def test_dropout_is_not_mistaken_for_mixing_across_the_batch():
    """Train mode draws dropout masks; the kit seeds torch alike before each forward."""
    dropout = broken("dropout", lambda m, x: nn.functional.dropout(mix(m, x), 0.5, m.training))
    check_mixer(dropout, tokens=(8,), dims=(12,))


def test_run_contract_reports_every_check_and_goes_on_after_a_failure():
    both = broken("both", lambda m, x: mix(m, x - x.mean(dim=0, keepdim=True)).double())
    outcomes = {o.check: o for o in run_contract(both, tokens=(8,), dims=(12,))}
    assert list(outcomes) == CHECKS
    assert [name for name, o in outcomes.items() if not o.passed] == ["dtype", "batch-independence"]
    assert outcomes["dtype"].reason == "float32 input gave torch.float64 (tokens=8, dim=12)"


CHECKS = ["shapes", "dtype", "finite", "gradients", "determinism", "batch-independence"]


def test_contract_tests_are_named_and_include_causality_only_when_declared():
    names = [name for name, _ in mixer_contract_tests(built_in("ssm"))]
    assert names == [*CHECKS, "causality"]
    names = [name for name, _ in mixer_contract_tests(built_in("longconv"), options={"causal": 0})]
    assert "causality" not in names
    assert "signature" in [name for name, _ in mixer_contract_tests(built_in("butterfly"))]


def test_check_mixer_accepts_a_registered_name_and_a_bare_factory():
    state = torch.get_rng_state()
    check_mixer("butterfly", tokens=(8,), dims=(16,))
    assert torch.equal(state, torch.get_rng_state())  # the kit leaves the global RNG alone
    with pytest.raises(AssertionError, match="no mixer named 'nope'"):
        check_mixer("nope")
    check_mixer(lambda tokens, dim: nn.Linear(dim, dim), tokens=(8,), dims=(16,))
