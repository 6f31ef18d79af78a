"""The plugin contracts: what a mixer and a track declare (plain data and one base class).

Nothing here imports torch: a plugin's metadata must be readable without building anything.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchsuite.budget import Budget
from benchsuite.errors import PluginError, UsageError, did_you_mean
from benchsuite.vocabulary import Direction, Scale

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    from torch import Tensor, nn

    from benchsuite.seeds import Streams


@dataclass(frozen=True)
class Option:
    """A declared option of a mixer or track: name, type, default and a one-line help."""

    name: str
    type: type
    default: Any
    help: str = ""
    choices: tuple[Any, ...] = ()

    def parse(self, value: Any, owner: str) -> Any:
        """Convert ``value`` (text from the CLI, or a TOML value) to this option's type."""
        where = f"{owner}.{self.name}"
        if self.type is bool:
            if isinstance(value, bool):
                parsed: Any = value
            elif str(value).lower() in {"1", "true", "yes", "on"}:
                parsed = True
            elif str(value).lower() in {"0", "false", "no", "off"}:
                parsed = False
            else:
                raise UsageError(f"option {where}: expected true or false, got {value!r}")
        else:
            if isinstance(value, bool) and self.type is not str:
                raise UsageError(f"option {where}: expected {self.type.__name__}, got {value!r}")
            try:
                parsed = self.type(value)
            except (TypeError, ValueError):
                raise UsageError(
                    f"option {where}: expected {self.type.__name__}, got {value!r}"
                ) from None
        if self.choices and parsed not in self.choices:
            valid = ", ".join(map(str, self.choices))
            raise UsageError(f"option {where}: {parsed!r} is not one of {valid}")
        return parsed


def provenance(item: Any) -> str:
    """Where a mixer, track or plugin (anything with ``distribution`` and ``version``) comes from,
    e.g. ``benchsuite 0.1.0`` (``plugins-dir`` for a file of the plugins folder)."""
    return f"{item.distribution} {item.version}".strip()


def resolve_options(declared: tuple[Option, ...], given: Mapping[str, Any], owner: str) -> dict:
    """Defaults overlaid with ``given``; an unknown key is a one-line error listing valid ones."""
    known = {opt.name: opt for opt in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        valid = ", ".join(sorted(known)) or "(none)"
        hint = did_you_mean(unknown[0], known)
        raise UsageError(
            f"unknown option {owner}.{unknown[0]}{hint}; valid options of {owner}: {valid}"
        )
    return {
        name: (opt.parse(given[name], owner) if name in given else opt.default)
        for name, opt in known.items()
    }


# ----------------------------------------------------------------------------- mixers


Probe = Callable[["nn.Module", "Tensor"], float]
Scalar = bool | int | float | str
OptionValue = Scalar | Sequence[Scalar]
"""A value a mixer's or a track's option takes (its declared type's; a list of them)."""
"""A measurement on a trained token-mixing module: ``probe(mixer_module, tokens) -> float``."""


@dataclass
class SignatureCheck:
    """A mixer's predicted probe values beside those observed on it and on the baseline."""

    prediction: str
    predicted: dict[str, float]
    tolerance: float
    observed: dict[str, float]
    baseline_observed: dict[str, float]
    confirmed: bool
    measured_on: str = "trained model (chosen config), first evaluation seed"

    def extra_keys(self) -> dict[str, float]:
        """The prototype's bench_report v1 keys (``observed_<probe>_seed0``, ...)."""
        keys: dict[str, float] = {}
        for key, value in self.predicted.items():
            keys[f"predicted_{key}"] = value
            keys[f"observed_{key}_seed0"] = self.observed[key]
            keys[f"baseline_observed_{key}_seed0"] = self.baseline_observed[key]
        return keys


@dataclass(frozen=True)
class Signature:
    """A property a mixer promises, checked on the trained model.

    ``predicted`` maps probe names (see :mod:`benchsuite.probes`) to the value the mixer promises;
    a prediction holds when ``|observed - predicted| <= tolerance``. ``probes`` may add custom
    probes by name; the core probes are always available and are measured for the baseline too.
    """

    prediction: str
    predicted: Mapping[str, float]
    tolerance: float = 1e-4
    probes: Mapping[str, Probe] = field(default_factory=dict)

    def check(
        self, observed: Mapping[str, Any], baseline_observed: Mapping[str, Any]
    ) -> SignatureCheck:
        """The prediction beside what was measured on the mixer and on the baseline; confirmed
        when every predicted probe is within tolerance (a missing or NaN value is not)."""

        def values(found: Mapping[str, Any]) -> dict[str, float]:
            return {
                k: math.nan if found.get(k) is None else float(found[k]) for k in self.predicted
            }

        seen = values(observed)
        return SignatureCheck(
            prediction=self.prediction,
            predicted={k: float(v) for k, v in self.predicted.items()},
            tolerance=self.tolerance,
            observed=seen,
            baseline_observed=values(baseline_observed),
            confirmed=all(
                abs(seen[k] - float(v)) <= self.tolerance for k, v in self.predicted.items()
            ),
        )


ISOMETRY = Signature(
    prediction="token mixing preserves the Euclidean norm and its adjoint is its inverse",
    predicted={"norm_ratio": 1.0, "inverse_max_error": 0.0},
)
"""The signature of an orthogonal token mixer (butterfly, random rotation, ...)."""


@dataclass(frozen=True)
class Mixer:
    """A token mixer: ``build(tokens, dim, **options)`` returns a module (B, T, D) -> (B, T, D).

    ``build`` may be a callable or a ``"module:attribute"`` string imported only when a model is
    built, so that listing plugins never imports torch or the mixer's code.
    ``supports(tokens, dim, **options)`` returns None when the mixer can run on that shape with
    those options, else the reason (it may name only some options, or none).
    ``fixed_tokens`` (default true) says the module is built for one token count and may hold
    parameters shaped by it; set it false for a length-agnostic layer. ``tags`` name families a
    run can select (``--mixers tag:recurrent``). ``unavailable``, when set, is why the mixer cannot
    run here (a missing package or device): it is listed with that reason and never built.
    ``size_option`` names the whole-number option that sets the mixer's size (``"expansion"``):
    the equal-size rule (docs/protocol.md, "Equal size") searches it first to bring the model's
    parameter count near the baseline's, before it scales the width of the block's channel MLP.
    """

    name: str
    build: Callable[..., nn.Module] | str
    description: str = ""
    options: tuple[Option, ...] = ()
    fixed_tokens: bool = True
    causal: bool = False
    signature: Signature | None = None
    supports: Callable[[int, int], str | None] | None = None
    tags: tuple[str, ...] = ()
    unavailable: str = ""
    size_option: str = ""
    # filled in by the registry
    plugin: str = ""
    distribution: str = ""
    version: str = ""
    module: str = ""  # the plugin module that registered it
    module_file: str = ""

    def builder(self) -> Callable[..., nn.Module]:
        """The build callable, importing it first when given as ``"module:attribute"``."""
        if callable(self.build):
            return self.build
        return _import_attribute(self.build, f"mixer {self.name!r}")

    def reason_unsupported(
        self, tokens: int, dim: int, options: Mapping[str, Any] | None = None
    ) -> str | None:
        """Why this mixer cannot run on ``tokens`` x ``dim`` with ``options``, or None when it can.

        ``supports`` receives the options it names as keyword arguments (all of them when it
        takes ``**options``); a ``supports(tokens, dim)`` receives none."""
        if self.supports is None:
            return None
        parameters = list(inspect.signature(self.supports).parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            return self.supports(tokens, dim, **(options or {}))
        named = {p.name for p in parameters[2:]}
        given = {key: value for key, value in (options or {}).items() if key in named}
        return self.supports(tokens, dim, **given)


def wrap(
    factory: Callable[..., nn.Module], output: int | str | None = 0, **call_kwargs: Any
) -> Callable[..., nn.Module]:
    """A ``Mixer.build`` for a third-party layer whose forward returns a tuple, a dict or an
    object, or takes extra arguments: ``factory(tokens, dim, **options)`` makes the layer, and the
    built module calls ``layer(x, **call_kwargs)`` and returns item ``output`` of the result (an
    index of a tuple or list, a key of a dict or the name of an attribute; None: the result as it
    is). E.g. ``build=wrap(lambda tokens, dim, heads=4: GLA(dim, heads), output=0)``."""

    def build(tokens: int, dim: int, **options: Any) -> nn.Module:
        return _wrapper()(factory(tokens, dim, **options), output, call_kwargs)

    return build


@functools.cache
def _wrapper() -> type:
    """The module :func:`wrap` builds (defined on first use: this module never imports torch)."""
    from torch import Tensor, nn

    class Wrapped(nn.Module):
        """A layer called with fixed extra arguments, one item of its result kept."""

        def __init__(
            self, layer: nn.Module, output: int | str | None, call_kwargs: Mapping[str, Any]
        ) -> None:
            super().__init__()
            self.layer, self.output, self.call_kwargs = layer, output, dict(call_kwargs)

        def forward(self, x: Tensor) -> Tensor:
            result = self.layer(x, **self.call_kwargs)
            if self.output is not None:
                if isinstance(self.output, str) and not isinstance(result, Mapping):
                    result = getattr(result, self.output)
                else:
                    result = result[self.output]
            if not isinstance(result, Tensor):
                raise PluginError(
                    f"wrapped {type(self.layer).__name__} gave {type(result).__name__} at "
                    f"output={self.output!r}, not a tensor: pick the output tensor with output="
                )
            return result

        def extra_repr(self) -> str:
            return f"output={self.output!r}, call_kwargs={self.call_kwargs!r}"

    return Wrapped


def _import_attribute(spec: str, owner: str) -> Any:
    import importlib

    module_name, _, attribute = spec.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise PluginError(f"{owner}: cannot import {spec!r}: {error}") from error


# ----------------------------------------------------------------------------- tracks


@dataclass(frozen=True)
class Metric:
    """The primary metric of a track: its direction, its best possible value, and its scale.

    ``ideal`` is the best value any model could reach (1 for accuracy, 0 for an error); the
    across-track summary scores each run by the fraction of the gap from the trivial predictor to
    ``ideal`` it closes. ``positive`` says the metric is always > 0 (an error, a loss): for a
    positive lower-is-better metric, effects are ratios and are analysed on the log scale.
    """

    name: str
    higher_is_better: bool
    ideal: float | None = None
    positive: bool = False

    @property
    def direction(self) -> Direction:
        return Direction.HIGHER if self.higher_is_better else Direction.LOWER

    @property
    def scale(self) -> Scale:
        """Paired log-ratios (a positive lower-is-better metric) or paired differences."""
        return Scale.LOG if self.positive and not self.higher_is_better else Scale.DIFFERENCE


@dataclass
class TrackData:
    """What a track's ``load`` returns for one seed: arrays of each split plus what models need.

    ``x_*``/``y_*`` are numpy arrays (converted to tensors by the trainer). ``info`` carries what
    the tokenizer and head need (feature counts, classes, token count ...), ``description`` names
    the data actually used, ``cap`` is the trivial predictor's test score (divergence cap) and
    ``val_cap`` its validation score (a config still there has not converged, docs/protocol.md);
    ``metric`` replaces the track's metric for this data (a table's task decides it).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    tokens: int
    description: str
    info: dict[str, Any] = field(default_factory=dict)
    cap: float | None = None
    identity: str = ""
    val_cap: float | None = None
    verified: bool = True
    metric: Metric | None = None  # how this data is scored, when not the track's ``metric``
    # a fixed pool's test examples, as row numbers in it (with ``identity``, they name the test
    # set: its arrays may differ between seeds once preprocessed with training statistics)
    test_rows: np.ndarray | None = None


class Track:
    """A kind of data and task. Subclass it and set the class attributes; see docs/tracks.md.

    Methods receive resolved ``options`` (a dict of the declared options). ``load`` must not import
    torch; ``tokenizer``/``head``/``loss``/``evaluate`` may.
    """

    name: str = ""
    description: str = ""
    metric: Metric = Metric("metric", higher_is_better=True)
    options: tuple[Option, ...] = ()
    budgets: Mapping[str, Budget] = {}
    planning_sd: float = 0.05  # guessed sd of paired differences / baseline mean, for planning
    mixed_precision: bool = True  # bf16 autocast allowed on a GPU
    fetchable: tuple[str, ...] = ()  # datasets ``benchsuite data fetch NAME`` downloads for it
    # filled in by the registry
    plugin: str = ""
    distribution: str = ""
    version: str = ""
    module: str = ""  # the plugin module that registered it
    module_file: str = ""

    def check_options(self, options: dict) -> None:
        """Raise a one-line :class:`UsageError` when ``options`` (every declared option, parsed)
        cannot work together, naming the track, the options and the limit, e.g.
        ``track sequence: lookback (128) + horizon (8) must be ≤ length (128)``.

        Called when a run's settings are resolved, before anything trains or is written, once
        per rung of the track's ladder. Only impossible combinations are errors; an odd but
        possible one is not. By default every combination works.
        """

    def check_at_least(self, options: dict, limits: Mapping[str, float]) -> None:
        """For :meth:`check_options`: a :class:`UsageError` naming the first option of ``limits``
        (name -> least value) that is below its least value."""
        for name, least in limits.items():
            if options[name] < least:
                raise UsageError(f"track {self.name}: {name} ({options[name]}) must be ≥ {least}")

    def load(self, streams: Streams, options: dict, preset: str, data_dir: str | None) -> TrackData:
        """Return the splits for one seed (data drawn from ``streams`` where generated)."""
        raise NotImplementedError

    def data_key(self, options: dict, preset: str, data_dir: str | None) -> str:
        """Text identifying the data independent of seed (for cache keys); cheap, no loading."""
        return json.dumps({"options": options, "preset": preset}, sort_keys=True, default=str)

    def tokenizer(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        """Module mapping a batch of inputs to tokens (B, data.tokens, dim)."""
        raise NotImplementedError

    def head(self, data: TrackData, dim: int, options: dict) -> nn.Module:
        """Module mapping encoded tokens (B, T, dim) to predictions."""
        raise NotImplementedError

    def loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        """Training loss (a scalar tensor)."""
        raise NotImplementedError

    def criterion(self, data: TrackData, options: dict) -> Callable[[Tensor, Tensor], Tensor]:
        """The training loss for this data (default :meth:`loss`); override when the loss
        depends on the data or the options, e.g. a weighting of the forecast horizon."""
        return self.loss

    def evaluate(self, prediction: Tensor, target: Tensor, data: TrackData) -> dict[str, float]:
        """Metrics on a whole split; must contain ``self.metric.name``."""
        raise NotImplementedError

    def ladder(self, options: dict, preset: str) -> list[dict]:
        """The difficulty rungs of a run under ``preset``: one options dict per rung. Every job
        trains each rung and scores the track by the mean over rungs (as MAD scores a task over
        its difficulty ladder); by default one rung, the options as given."""
        return [options]

    def budget(self, preset: str) -> Budget:
        """The budget for ``preset``; an unknown preset is a usage error."""
        if preset not in self.budgets:
            valid = ", ".join(sorted(self.budgets))
            raise UsageError(f"track {self.name!r} has no preset {preset!r}; valid: {valid}")
        return self.budgets[preset]

    def fetch(self, dataset: str, data_dir: str | None) -> str:
        """Download ``dataset`` (one of ``fetchable``) into the data folder; returns where it is."""
        raise UsageError(f"track {self.name!r} cannot fetch {dataset!r}")
