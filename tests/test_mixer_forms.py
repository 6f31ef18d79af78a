"""What each mixer computes: the recurrent mixers' chunked/parallel forms equal their
token-by-token recurrences (float64 and float32, lengths on and off the chunk grid) and, where
flash-linear-attention's plain-PyTorch references import, match theirs; the token-linear mixers'
matrices, butterfly's orthogonality and longconv's causality. The contract every mixer passes is
test_mixer_contract.py."""

from __future__ import annotations

import copy
import importlib
import importlib.util
from pathlib import Path

import pytest
import torch
from helpers import built_in
from torch.nn import functional

# the mixers with a chunked or parallel form beside a token-by-token recurrence
RECURRENT = ["mamba", "gla", "deltanet", "gated_deltanet", "retnet", "sliding_window", "based"]
LENGTHS = (9, 20, 64, 77, 150)  # one chunk, and on and off the grid of the default chunks (16-128)
B, H = 2, 2
TOLERANCE = {torch.float64: 1e-5, torch.float32: 1e-3}

pytestmark = pytest.mark.usefixtures("one_thread")


def module(name: str):
    return importlib.import_module(f"benchsuite.mixers.{name}")


def inputs(name: str, tokens: int, dtype: torch.dtype, seed: int = 0) -> tuple:
    """Random arguments of ``name``'s ``parallel`` and ``recurrent`` (strong decays included)."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=torch.float64)

    q, k, v = randn(B, H, tokens, 8), randn(B, H, tokens, 8), randn(B, H, tokens, 6)
    if name == "gla":
        args = (q / 8**0.5, k, v, functional.logsigmoid(3 * randn(B, H, tokens, 8)))
    elif name == "retnet":
        args = (q, k / 8**0.5, v, torch.tensor([-0.03, -0.3], dtype=torch.float64)[:, None, None])
    elif name in ("deltanet", "gated_deltanet"):
        q, k = functional.normalize(q, dim=-1), functional.normalize(k, dim=-1)
        decay = (-5 * rand(B, H, tokens),) if name == "gated_deltanet" else ()
        args = (q, k, v, rand(B, H, tokens), *decay)
    elif name == "based":
        args = (q[..., :4], k[..., :4], v)
    elif name == "sliding_window":
        args = (q, k, v, 5)
    else:  # mamba: u, delta, A, B, C
        delta = functional.softplus(randn(B, tokens, 6))
        args = (
            randn(B, tokens, 6),
            delta,
            -3 * rand(6, 4),
            randn(B, tokens, 4),
            randn(B, tokens, 4),
        )
    return tuple(a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args)


def parallel(name: str, args: tuple) -> torch.Tensor:
    if name == "gated_deltanet":
        return module("deltanet").parallel(*args)
    return module(name).parallel(*args)


def recurrent(name: str, args: tuple) -> torch.Tensor:
    if name == "gated_deltanet":
        return module("deltanet").recurrent(*args)
    return module(name).recurrent(*args)


def assert_agree(found: torch.Tensor, expected: torch.Tensor, tolerance: float) -> None:
    error = (found.double() - expected.double()).abs().max().item()
    scale = 1 + expected.abs().max().item()
    assert error <= tolerance * scale, f"max error {error:.3g} > {tolerance:g} x {scale:.3g}"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("tokens", LENGTHS)
@pytest.mark.parametrize("name", RECURRENT)
def test_parallel_form_equals_the_recurrence(name, tokens, dtype):
    args = inputs(name, tokens, dtype)
    reference = recurrent(name, inputs(name, tokens, torch.float64))
    found = parallel(name, args)
    assert found.dtype == dtype and found.shape == reference.shape
    assert_agree(found, reference, TOLERANCE[dtype])


@pytest.mark.parametrize("chunk", [1, 5, 16, 128])
def test_chunk_size_does_not_change_the_result(chunk):
    from benchsuite.mixers import _linear

    q, k, v, log_decay = inputs("gla", 45, torch.float64)
    expected = _linear.recurrent_linear_attention(q, k, v, log_decay)
    assert_agree(_linear.chunk_linear_attention(q, k, v, log_decay, chunk), expected, 1e-10)
    q, k, v, beta, decay = inputs("gated_deltanet", 45, torch.float64)
    expected = _linear.recurrent_delta_rule(q, k, v, beta, decay)
    assert_agree(_linear.chunk_delta_rule(q, k, v, beta, decay, chunk), expected, 1e-10)
    mamba = inputs("mamba", 45, torch.float64)  # 1: the CPU's token-by-token form
    assert_agree(module("mamba").parallel(*mamba, chunk), module("mamba").recurrent(*mamba), 1e-10)


def test_strong_decay_stays_finite_in_float32():
    """log decays of -50 per token would overflow exp(-cumsum) in a naive factorisation."""
    q, k, v, _ = inputs("gla", 64, torch.float32)
    out = module("gla").parallel(q, k, v, torch.full_like(q, -50.0))
    assert torch.isfinite(out).all()
    assert_agree(out, (q * k).sum(-1, keepdim=True) * v, 1e-5)  # only the current token remains


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


def test_gla_with_a_short_convolution_stays_causal_and_changes_the_output():
    """``gla[conv=4]`` (Zoology's short convolution for non-attention mixers): a change to the
    later tokens leaves the earlier outputs alone, and the convolution does change the mixer."""
    x = torch.randn(2, 16, 8)
    later = x.clone()
    later[:, 8:] += 1.0
    torch.manual_seed(0)
    plain = built_in("gla").builder()(16, 8, heads=2)
    torch.manual_seed(0)
    convolved = built_in("gla").builder()(16, 8, heads=2, conv=4)
    assert (convolved(later) - convolved(x))[:, :8].abs().max().item() < 1e-5
    assert (convolved(later) - convolved(x))[:, 8:].abs().max().item() > 1e-3
    assert not torch.allclose(convolved(x), plain(x))


def test_a_window_longer_than_the_sequence_is_causal_attention():
    q, k, v, _ = inputs("sliding_window", 30, torch.float64)
    found = module("sliding_window").parallel(q, k, v, 30)
    assert_agree(found, module("sliding_window").recurrent(q, k, v, 30), 1e-10)
    assert_agree(module("sliding_window").parallel(q, k, v, 31), found, 1e-12)


def test_sliding_window_ignores_tokens_outside_the_window():
    q, k, v, _ = inputs("sliding_window", 30, torch.float64)
    out = module("sliding_window").parallel(q, k, v, 4)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, :20], v2[:, :, :20] = 0, 0  # tokens 24.. see only 21..: unchanged
    changed = module("sliding_window").parallel(q, k2, v2, 4)
    assert torch.equal(out[:, :, 23:], changed[:, :, 23:])
    assert not torch.allclose(out[:, :, 22], changed[:, :, 22])


# ----------------------------------------------------------------- flash-linear-attention


def fla_naive(op: str):
    """flash-linear-attention's plain-PyTorch reference ``fla/ops/<op>/naive.py``, loaded as a
    file: importing the ``fla`` package itself loads its GPU kernels (tens of seconds)."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("flash-linear-attention (pip install fla-core) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "ops" / op / "naive.py"
    if not path.is_file():
        pytest.skip(f"this fla version has no {path.relative_to(path.parents[3])}")
    naive = importlib.util.spec_from_file_location(f"fla_naive_{op}", path)
    loaded = importlib.util.module_from_spec(naive)
    try:
        naive.loader.exec_module(loaded)
    except ImportError as error:
        pytest.skip(f"fla's {op}/naive.py does not import here: {error}")
    return loaded


def heads_last(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2)


@pytest.mark.parametrize("tokens", [37, 64])
def test_gla_matches_fla_reference(tokens):
    q, k, v, g = inputs("gla", tokens, torch.float32)
    expected, _ = fla_naive("gla").naive_recurrent_gla(*map(heads_last, (q, k, v, g)))
    assert_agree(module("gla").parallel(q * 8**-0.5, k, v, g), heads_last(expected), 1e-4)


def test_deltanet_matches_fla_reference():
    q, k, v, beta = inputs("deltanet", 50, torch.float32)
    expected, _ = fla_naive("delta_rule").delta_rule_recurrence(q, k, v, beta)
    assert_agree(module("deltanet").parallel(q * 8**-0.5, k, v, beta), expected, 1e-4)


def test_gated_deltanet_matches_fla_reference():
    q, k, v, beta, g = inputs("gated_deltanet", 50, torch.float32)
    naive = fla_naive("gated_delta_rule").naive_recurrent_gated_delta_rule
    expected, _ = naive(*map(heads_last, (q, k, v, beta, g)), scale=1.0)
    assert_agree(module("deltanet").parallel(q, k, v, beta, g), heads_last(expected), 1e-4)


def test_retnet_matches_fla_reference():
    q, k, v, _ = inputs("retnet", 50, torch.float32)
    gamma = torch.tensor([1 - 2**-5, 1 - 2**-6]).log()[:, None, None]
    expected = fla_naive("retention").naive_retention(q, k, v)
    assert_agree(module("retnet").parallel(q * 8**-0.5, k, v, gamma), expected, 1e-4)


def test_based_matches_fla_reference():
    q, k, v = inputs("based", 50, torch.float32)
    expected = fla_naive("based").naive_parallel_based(q, k, v)
    assert_agree(module("based").parallel(q, k, v), expected, 1e-4)


def test_sliding_window_matches_fla_reference():
    q, k, v, window = inputs("sliding_window", 50, torch.float32)
    naive = fla_naive("attn").naive_parallel_attn
    expected, _ = naive(*map(heads_last, (q, k, v)), window_size=window)
    assert_agree(module("sliding_window").parallel(q, k, v, window), heads_last(expected), 1e-5)


@pytest.mark.parametrize("chunk", [1, 4, 16])
def test_mamba_scan_gradient_is_the_reverse_scan(chunk):
    """The scan's hand-written backward against finite differences, token by token (chunk 1,
    the CPU's form), off the chunk grid (chunk 4) and in one chunk (16)."""
    g = torch.Generator().manual_seed(3)
    a = torch.rand(2, 11, 3, generator=g, dtype=torch.float64).requires_grad_()
    b = torch.randn(2, 11, 3, generator=g, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: module("mamba").scan(a, b, chunk), (a, b))


def test_mamba_runs_under_torch_func_transforms():
    """Training stacks models with vmap and the probes take jacrev: both see the custom scan."""
    torch.manual_seed(0)
    mixer = built_in("mamba").builder()(8, 8)
    x = torch.randn(3, 8, 8)
    jacobian = torch.func.jacrev(lambda one: mixer(one[None])[0])(x[0])
    later = jacobian[:4, :, 4:].abs().max().item()  # outputs 0..3 on inputs 4..7
    assert jacobian.shape == (8, 8, 8, 8) and later == 0.0 and jacobian.abs().max() > 0
    batched = torch.vmap(lambda one: mixer(one[None])[0])(x)
    assert_agree(batched, mixer(x), 1e-6)


@pytest.mark.parametrize("name", ["mamba", "gated_deltanet"])
def test_stacked_training_gradients_equal_each_model_alone(name):
    """Jobs train their configs as one vmap stack: the custom scan and the triangular solves
    must give each member the gradient it gets alone."""
    torch.manual_seed(0)
    first = built_in(name).builder()(20, 16)
    models = [first, copy.deepcopy(first)]
    with torch.no_grad():
        for p in models[1].parameters():
            p.add_(0.1 * torch.randn_like(p))
    params, buffers = torch.func.stack_module_state(models)
    x = torch.randn(2, 3, 20, 16)

    def loss(p, b, one):
        return torch.func.functional_call(first, (p, b), (one,)).square().sum()

    torch.vmap(loss)(params, buffers, x).sum().backward()
    for index, model in enumerate(models):
        model.zero_grad()
        loss(dict(model.named_parameters()), dict(model.named_buffers()), x[index]).backward()
        for key, p in model.named_parameters():
            assert_agree(params[key].grad[index], p.grad, 1e-4)


@pytest.mark.parametrize(("kernel", "tokens"), [(1, 5), (3, 9), (4, 20), (4, 2)])
def test_the_short_convolution_is_the_causal_depthwise_conv1d(kernel, tokens):
    """ShortConv's sum of shifted products against torch's conv1d with its own parameters (left
    padding, the first ``tokens`` outputs), fewer tokens than taps included."""
    from benchsuite.mixers._linear import ShortConv

    torch.manual_seed(0)
    conv = ShortConv(6, kernel).double()
    x = torch.randn(3, tokens, 6, dtype=torch.float64)
    expected = conv.conv(x.transpose(1, 2))[..., :tokens].transpose(1, 2)
    assert_agree(conv(x), expected, 1e-12)
