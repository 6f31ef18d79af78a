"""Property tests: parsing user input never crashes with a traceback, and the statistics keep
their invariants whatever the data."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchsuite.errors import UsageError
from benchsuite.protocol import stats
from benchsuite.settings import fields, load_config, parse_assignments, parse_pairs
from benchsuite.specs import Option, resolve_options

OPTIONS = (
    Option("lookback", int, 16, "window"),
    Option("noise", float, 0.1, "noise"),
    Option("verify", bool, True, "check files"),
    Option("system", str, "lorenz63", "which", choices=("lorenz63", "pendulum")),
)
SCALARS = st.one_of(
    st.integers(), st.floats(allow_nan=True), st.booleans(), st.text(max_size=12), st.none()
)


@given(st.lists(st.text(max_size=30), max_size=4))
def test_assignment_flags_parse_or_raise_a_usage_error(items):
    try:
        parsed = parse_assignments(items, "--track-option")
    except UsageError as error:
        assert "\n" not in str(error)
    else:
        assert all(isinstance(v, dict) for v in parsed.values())
    try:
        parse_pairs(items, "--budget")
    except UsageError as error:
        assert "\n" not in str(error)


def test_a_budget_list_value_keeps_its_commas():
    """``--budget halve_at=120,240`` (the docs' example) is one key with a list value, beside
    the comma-separated assignments of other keys."""
    given = ["halve_at=120,240,patience=3", "steps=400"]
    assert parse_pairs(given, "--budget") == {
        "halve_at": "120,240",
        "patience": "3",
        "steps": "400",
    }
    with pytest.raises(UsageError, match="--budget '120': expected KEY=VALUE"):
        parse_pairs(["120,steps=4"], "--budget")


@given(st.dictionaries(st.text(max_size=10), SCALARS, max_size=4))
def test_option_values_resolve_or_raise_a_usage_error(given_options):
    try:
        resolved = resolve_options(OPTIONS, given_options, "track")
    except UsageError as error:
        assert str(error).startswith(("unknown option track.", "option track."))
    else:
        assert set(resolved) == {o.name for o in OPTIONS}
        assert isinstance(resolved["lookback"], int) and isinstance(resolved["verify"], bool)


TOML_VALUES = st.one_of(
    st.integers(-5, 50),
    st.booleans(),
    st.text(alphabet="abcdefz_ ,", max_size=8).map(repr),
    st.lists(st.sampled_from(["dense", "attention", "x"]), max_size=3).map(str),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(
    section=st.sampled_from(["run", "budget", "tracks.sequence", "mixers.dense", "other", "run"]),
    key=st.sampled_from(["seeds", "tracks", "steps", "lookback", "strict", "zzz"]),
    value=TOML_VALUES,
    noise=st.text(max_size=6),
)
def test_config_files_load_or_raise_a_usage_error(tmp_path, section, key, value, noise):
    path = tmp_path / "config.toml"
    path.write_text(f"[{section}]\n{key} = {value}\n{noise}")
    try:
        config = load_config(path)
    except UsageError as error:
        assert str(error).startswith(f"config {path}:") and "\n" not in str(error)
    else:
        assert set(config) <= {spec.name for spec in fields()}  # run settings by name


PAIRED = st.integers(3, 9).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
        st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
    )
)


@settings(deadline=None, max_examples=40)
@given(PAIRED)
def test_verdict_and_p_do_not_depend_on_the_metric_direction(pair):
    base, mixer = pair
    lower = stats.compare_paired(base, mixer, higher_is_better=False)
    higher = stats.compare_paired([-v for v in base], [-v for v in mixer], higher_is_better=True)
    assert lower.verdict == higher.verdict
    assert math.isclose(lower.p_value, higher.p_value, abs_tol=1e-12)
    assert math.isclose(lower.improvement, higher.improvement, abs_tol=1e-9)
    assert 0.0 <= lower.p_value <= 1.0 and 0.0 <= lower.p_tost <= 1.0


@settings(deadline=None, max_examples=25)
@given(st.lists(PAIRED, min_size=1, max_size=5))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(pairs):
    family = [stats.compare_paired(b, m) for b, m in pairs]
    family = stats.holm_adjusted(family)
    for comparison in family:
        assert comparison.p_value <= comparison.p_holm <= 1.0
    ordered = sorted(family, key=lambda c: c.p_value)
    assert all(a.p_holm <= b.p_holm + 1e-12 for a, b in pairwise(ordered))
