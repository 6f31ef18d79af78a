"""Mechanism probes on modules whose answer is known, and on a briefly trained butterfly model."""

from __future__ import annotations

import importlib
import math

import pytest
import torch
from torch import nn

from benchsuite import Signature
from benchsuite.testing import collect_mixers
from benchsuite.train.encoder import build_encoder
from benchsuite.train.probes import (
    CORE_PROBES,
    REFERENCE,
    cross_token_influence,
    inverse_max_error,
    measure,
    mixer_params,
    norm_ratio,
    probes_for,
    row_sum_error,
)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


class TokenMatrix(nn.Module):
    """y[b, :, d] = W x[b, :, d] for a fixed W, with or without a declared ``token_matrix``."""

    def __init__(self, weight: torch.Tensor, declare: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight)
        if declare:
            self.token_matrix = lambda x: self.weight.expand(x.shape[0], *self.weight.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("st,btd->bsd", self.weight, x)


def orthogonal(size: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(size, size, dtype=torch.float64))
    return q.float()


def build_mixer(name: str, tokens: int, dim: int, **options) -> nn.Module:
    (mixer,) = collect_mixers(importlib.import_module(f"benchsuite.mixers.{name}"))
    return mixer.builder()(tokens, dim, **options)


@pytest.mark.parametrize("declare", [True, False])
def test_an_orthogonal_matrix_preserves_norm_and_is_inverted_by_its_transpose(declare):
    torch.manual_seed(0)
    module, x = TokenMatrix(orthogonal(16), declare), torch.randn(4, 16, 8)
    assert norm_ratio(module, x) == pytest.approx(1.0, abs=1e-6)
    assert inverse_max_error(module, x) < 1e-5


@pytest.mark.parametrize("declare", [True, False])
def test_a_random_dense_matrix_does_not(declare):
    torch.manual_seed(0)
    weight = torch.randn(16, 16) / 4
    module, x = TokenMatrix(weight, declare), torch.randn(4, 16, 8)
    expected = (weight.T @ weight - torch.eye(16)).abs().max().item()
    assert inverse_max_error(module, x) == pytest.approx(expected, rel=1e-5)  # Jacobian == W
    columns = torch.einsum("st,btd->bsd", weight, x).norm(dim=1) / x.norm(dim=1)
    assert norm_ratio(module, x) == pytest.approx(columns.mean().item(), rel=1e-6)
    assert abs(norm_ratio(module, x) - 1.0) > 0.05


def test_cross_token_influence_is_zero_without_mixing_and_relative_with_it():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 6)
    assert cross_token_influence(build_mixer("identity", 8, 6), x) == 0.0
    assert cross_token_influence(nn.Sequential(nn.Linear(6, 6), nn.GELU()), x) == 0.0
    weight = torch.randn(8, 8)
    expected = (weight - torch.diag(weight.diagonal())).abs().max() / weight.diagonal().abs().max()
    assert cross_token_influence(TokenMatrix(weight), x) == pytest.approx(expected.item(), rel=1e-5)


def test_row_sums_of_attention_are_one_and_nan_without_a_token_matrix():
    torch.manual_seed(0)
    x = torch.randn(3, 16, 16)
    assert row_sum_error(build_mixer("attention", 16, 16), x) < 1e-5
    assert row_sum_error(TokenMatrix(torch.randn(16, 16)), x) > 0.1
    assert math.isnan(row_sum_error(build_mixer("identity", 16, 16), x))


def test_mixer_params_counts_trainable_parameters_only():
    x = torch.randn(1, 8, 4)
    assert mixer_params(build_mixer("fnet", 8, 4), x) == 0
    assert mixer_params(build_mixer("random", 8, 4), x) == 0  # a buffer, not a parameter
    assert mixer_params(build_mixer("dense", 8, 4), x) == 8 * 8 + 8
    assert mixer_params(build_mixer("butterfly", 8, 4), x) == 3 * 4


def test_measure_keeps_the_block_farthest_from_the_reference_and_ignores_nan():
    torch.manual_seed(0)
    dense = TokenMatrix(torch.randn(8, 8) / 3)
    blocks = [TokenMatrix(orthogonal(8)), dense, build_mixer("identity", 8, 4)]
    inputs = [torch.randn(2, 8, 4) for _ in blocks]
    result = measure(blocks, inputs, CORE_PROBES, REFERENCE)
    assert result["norm_ratio"] == pytest.approx(norm_ratio(dense, inputs[1]))
    rows = [row_sum_error(block, x) for block, x in zip(blocks[:2], inputs[:2], strict=True)]
    assert result["row_sum_error"] == pytest.approx(max(rows))
    assert result["mixer_params"] == 64
    alone = measure(blocks[2:], inputs[2:], CORE_PROBES, REFERENCE)
    assert math.isnan(alone["row_sum_error"])
    assert alone["cross_token_influence"] == 0.0
    with pytest.raises(ValueError, match="2 mixers but 1 inputs"):
        measure(blocks[:2], inputs[:1], CORE_PROBES, REFERENCE)


def test_measure_takes_tokens_captured_in_inference_mode():
    with torch.inference_mode():
        x = torch.randn(2, 8, 16)
    result = measure([build_mixer("attention", 8, 16)], [x], CORE_PROBES, REFERENCE)
    assert all(math.isfinite(v) for v in result.values())


def test_signature_check_confirms_only_within_tolerance():
    signature = Signature("isometric", {"norm_ratio": 1.0, "inverse_max_error": 0.0}, 1e-4)
    baseline = {"norm_ratio": 0.5, "inverse_max_error": 0.8}
    good = signature.check({"norm_ratio": 1.00005, "inverse_max_error": 0.0}, baseline)
    assert good.confirmed and good.baseline_observed == baseline
    assert good.prediction == "isometric" and good.predicted["norm_ratio"] == 1.0
    bad = signature.check({"norm_ratio": 1.0, "inverse_max_error": 2e-4}, baseline)
    assert not bad.confirmed
    missing = signature.check({"norm_ratio": 1.0}, baseline)
    assert not missing.confirmed and math.isnan(missing.observed["inverse_max_error"])


def test_probes_for_adds_a_signatures_own_probes_and_references():
    custom = Signature("first row", {"first": 2.0}, probes={"first": lambda m, x: 2.0})
    probes, reference = probes_for(custom)
    assert set(CORE_PROBES) < set(probes) and reference["first"] == 2.0


def train_tiny(mixer: str, steps: int = 48) -> tuple[nn.Module, list[torch.Tensor], list[float]]:
    """A depth-2 encoder on a token-reversal regression; returns model, mixer inputs, losses."""
    tokens, dim = 16, 16
    model = build_encoder(
        make={"tokenizer": lambda: nn.Linear(3, dim), "head": lambda: nn.Linear(dim, 1)},
        make_mixer=lambda: build_mixer(mixer, tokens, dim),
        dim=dim,
        depth=2,
        mlp_ratio=2,
        seed_of=lambda name: len(name),
    )
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, tokens, 3, generator=generator)
    y = x[:, :, :1].flip(1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        batch = slice(32 * (step % 8), 32 * (step % 8 + 1))
        loss = nn.functional.mse_loss(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    captured: list[torch.Tensor] = []
    hooks = [
        m.register_forward_pre_hook(lambda _, a: captured.append(a[0])) for m in model.mixers()
    ]
    with torch.inference_mode():
        model(x[:64])
    for hook in hooks:
        hook.remove()
    return model, captured, losses


def test_a_trained_butterfly_keeps_its_signature_and_a_trained_dense_does_not():
    model, inputs, losses = train_tiny("butterfly")
    torch.manual_seed(len("blocks.0.mixer"))  # the first block's mixer as it was built
    initial = build_mixer("butterfly", 16, 16)
    assert (model.mixers()[0].angles - initial.angles).abs().max() > 1e-2  # it did train
    assert sum(losses[-8:]) < sum(losses[:8])  # and learned something
    observed = measure(model.mixers(), inputs, CORE_PROBES, REFERENCE)
    assert observed["norm_ratio"] == pytest.approx(1.0, abs=1e-5)
    assert observed["inverse_max_error"] < 1e-5

    dense, dense_inputs, _ = train_tiny("dense")
    baseline = measure(dense.mixers(), dense_inputs, CORE_PROBES, REFERENCE)
    assert abs(baseline["norm_ratio"] - 1.0) > 0.05

    (mixer,) = collect_mixers(importlib.import_module("benchsuite.mixers.butterfly"))
    result = mixer.signature.check(observed, baseline)
    assert result.confirmed
    assert result.baseline_observed["norm_ratio"] == baseline["norm_ratio"]
