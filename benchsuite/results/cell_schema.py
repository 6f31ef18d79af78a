"""The typed results of one track: each mixer's result (``MixerResult``), each comparison
against the baseline (``CellResult``) and the track that holds them (``TrackResult``).

Plain dataclasses of JSON's types (no torch, no numpy), like the run-level ones of
:mod:`benchsuite.results.schema`. Each fact is stored once: a mixer's chosen config is its
``selection.modal`` (``best_cfg`` is that grid point; ``best_index`` and ``edge_of_grid`` are
derived keys of report.json), a comparison's parameter ratio is ``size.params_ratio``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import ClassVar

from benchsuite.measures import Costs
from benchsuite.plan.plan import TrackFacts
from benchsuite.protocol.stats import Comparison, Count
from benchsuite.serial import FLATTEN
from benchsuite.specs import SignatureCheck
from benchsuite.vocabulary import Scale


@dataclass
class Summary:
    """Mean, sample sd (ddof 1) and every value of a cell's test scores."""

    mean: float | None
    std: float | None
    per_seed: list[float]
    n: int


@dataclass
class Full(Summary):
    """The test scores with diverged runs imputed by their cap, and ``raw`` as measured."""

    raw: Summary | None = None


@dataclass
class SweepRow:
    """One grid config: its validation value per seed, how many seeds chose it, their mean."""

    cfg: dict[str, float]
    val: list[float]
    chosen_by: int
    mean: float


@dataclass
class Spread:
    """The interquartile range of the seeds' choices in grid steps, on its widest axis."""

    steps: float
    axis: str | None


@dataclass
class Selection:
    """How a cell's seeds chose their config on their validation splits (docs/results.md)."""

    modal: int
    tied: list[int]
    counts: list[int]
    agreement: float
    edge_share: float
    modal_on_edge: bool
    edge_of_grid: bool
    at_chance: bool
    spread: Spread
    indecisive: bool
    chosen: dict[str, int]
    # seeds whose own choice was an exact tie of validation scores, broken by the tie rule
    tied_seeds: list[str] = field(default_factory=list)


@dataclass
class LearningCurve:
    """The training loss of the chosen configs: median and band over the seeds, the rule."""

    points: int
    steps: int | None
    seeds: list[int]
    left_out: int
    median: list[float]
    q25: list[float]
    q75: list[float]
    tail_drop: float | None
    tail_share: float | None
    converged_seeds: int
    undertrained: bool | None


@dataclass
class MixerResult:
    """One mixer on one track (``tracks.<t>.mixers.<m>``)."""

    DERIVED: ClassVar[tuple[str, ...]] = ("best_index", "edge_of_grid")
    best_cfg: dict[str, float]
    selection: Selection
    sweep: list[SweepRow]
    full: Full
    diverged: int
    costs: Costs
    costs_median: Costs
    probes: dict[str, float]
    learning_curve: LearningCurve | None
    undertrained: bool

    @property
    def best_index(self) -> int:
        """The grid index of the chosen config (the one most seeds chose)."""
        return self.selection.modal

    @property
    def edge_of_grid(self) -> bool:
        """Whether the chosen config is an end of the grid (``selection.edge_of_grid``)."""
        return self.selection.edge_of_grid


@dataclass
class Divergence:
    """Diverged counts of the mixer and the baseline, the mixer's reasons, and how many of the
    mixer's seeds learnt nothing (no better than the trivial predictor: below it, imputed, or at
    it; the ``no_better_than_trivial`` flag's count)."""

    mixer: Count
    baseline: Count
    mixer_reasons: dict[str, int]
    mixer_not_learned: int = 0


@dataclass
class Size:
    """Both models' sizes as trained and how the equal-size rule sized the mixer's."""

    by: str | None
    within: bool | None
    reason: str | None
    set: dict[str, int]
    baseline_params: float | None
    mixer_params: float | None
    params_ratio: float | None
    baseline_flops: float | None
    mixer_flops: float | None
    flops_ratio: float | None


@dataclass
class CellResult:
    """One mixer against the baseline on one track (``tracks.<t>.comparisons.<m>``)."""

    comparison: Comparison
    seeds: list[int]
    missing_seeds: int
    divergence: Divergence
    both_converged: Comparison | None
    baseline_values: list[float]
    mixer_values: list[float]
    caps: list[float]
    signature: SignatureCheck | None
    size: Size
    flag_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def param_ratio(self) -> float | None:
        """The mixer model's parameters over the baseline's."""
        return self.size.params_ratio

    def stopped(self, seeds: int) -> CellResult:
        """This comparison as the futility look stopped it at ``seeds`` (docs/protocol.md, "The
        futility look"): p = 1 for its tests, and no planned seed counts as missing."""
        both = self.both_converged
        return dataclasses.replace(
            self,
            missing_seeds=0,
            comparison=self.comparison.stopped(seeds),
            both_converged=None if both is None else both.stopped(seeds),
        )


@dataclass
class TestSet:
    """Whether every seed of a track was scored on one test set, and its digest."""

    fixed: bool
    digest: str
    seeds: int


@dataclass
class Resolution:
    """How well a track tells the compared mixers apart (``tracks.<t>.resolution``;
    docs/statistics.md, "Resolving power"), every figure on the comparisons' ``scale`` (of the
    per-seed d: log-ratios or differences): ``spread``, the sd (ddof 1) of the mixers' mean d;
    ``noise``, the RMS of their seeds' sd of d; ``resolving_power``, spread / noise (None with
    fewer than 2 mixers); the MDE at ``mde_alpha`` the design planned and the median of the
    comparisons' own. Over ``mixers``: the compared ones with 2 seeds or more, the controls left
    out (tagged :data:`benchsuite.results.resolving.CONTROL`)."""

    scale: Scale
    mixers: list[str]
    seeds: int  # the fewest seeds of those mixers (0: none)
    spread: float | None
    noise: float | None
    resolving_power: float | None
    mde_alpha: float | None
    mde_planned: float | None  # the design's planned MDE per track, on ``scale``
    mde_measured: float | None  # the median over ``mixers`` of their comparisons' MDE


@dataclass
class TrackResult:
    """One track: its facts (as the plan has them; in report.json beside the rest), each
    mixer's result and each comparison."""

    facts: TrackFacts = field(metadata=FLATTEN)
    baseline: str = ""
    test_set: TestSet | None = None
    mixers: dict[str, MixerResult] = field(default_factory=dict)
    comparisons: dict[str, CellResult] = field(default_factory=dict)
    scale_note: str = ""
    resolution: Resolution | None = None  # None: no comparison on the track

    def in_points(self) -> bool:
        """An accuracy-type metric (higher is better, ideal 1): effects also in points."""
        return bool(self.facts.higher_is_better) and self.facts.ideal == 1.0

    def ordered(self, names: list[str] | None = None) -> list[str]:
        """``names`` (default: the track's mixers) with the baseline first."""
        names = list(self.mixers) if names is None else names
        return ([self.baseline] if self.baseline in names else []) + [
            n for n in names if n != self.baseline
        ]

    def fullest(self) -> CellResult | None:
        """The comparison with the most seeds (the first of them; None without one): the one
        whose family, alpha and seeds describe the track, where a comparison the futility look
        stopped has only the look's seeds."""
        cells = list(self.comparisons.values())
        return max(cells, key=lambda cell: cell.comparison.n) if cells else None

    def by_effect(self) -> list[str]:
        """The compared mixers, largest improvement first (no estimate last)."""

        def key(name: str) -> float:
            value = self.comparisons[name].comparison.improvement_rel_pct
            return -value if value is not None and math.isfinite(value) else math.inf

        return sorted(self.comparisons, key=key)
