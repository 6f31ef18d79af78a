"""The typed results of a run: what :func:`benchsuite.results.analysis.analyse` returns and what
output/ and the commands read, attribute by attribute.

Plain dataclasses of JSON's types (no torch, no numpy); ``report.json`` is their serialisation
(:meth:`Analysis.to_dict`, :meth:`Analysis.from_dict`; docs/results.md gives every field). The
per-track types are in :mod:`benchsuite.results.cell_schema`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchsuite import serial
from benchsuite.measures import Costs
from benchsuite.plan.environment import RunEnvironment
from benchsuite.plan.plan import MixerFacts, Skip
from benchsuite.protocol.stats import Comparison
from benchsuite.results.cell_schema import TrackResult
from benchsuite.serial import OMIT_NONE
from benchsuite.settings import RunSettings
from benchsuite.vocabulary import Claims, Shift, SuiteVerdict

BOOTSTRAP_SEEDS = 5  # fewest seeds per track for a bootstrap interval of the pooled summaries
# 12: scale.tracks gone (each track's width, depth and budget are tracks.<t>.budget); a cost or a
# size not measured is left out of quality_vs_cost's points, not null; a size's within is null
# under --match none.
# 11: the suite tests of an extended or futility-looked run combine stages of seeds (every seed
# used; across_tracks.stages, stage_weights, suite_test.stages, p_se), enumerate up to 2**22
# patterns; without_track holds each left-out effect, p and Holm p; rests_on and
# robustness_seeds; no bootstrap interval under 5 seeds per track; ranks.alpha; a stopped
# comparison's p_at_stop; the flag timings_from_different_runs; per-track looks counted.
# 10: each track's resolution (tracks.<t>.resolution: spread, noise, resolving power and the MDEs on
# the comparisons' scale). 9: a cell the pre-flight skips has the skip kind pre-flight (was error,
# with its reason starting "pre-flight: "). 8: the suite verdict not_robust (a significant result
# resting on a track; was mixed), and mixed only for significant wins and losses on tracks; the
# equivalence margin at most a quarter of the baseline's gain over the trivial predictor; learnt
# nothing tested against each seed's test noise. 7: a comparison's ci95 and p_tost from the
# sign-flip test (inverted; two one-sided), not t tests; an interval the seeds cannot bound is
# null. 6: the per-track design's futility look (design.futility_seeds and stopped, a comparison's
# stopped_at). 5: the design first (its claims: suite or per-track), then the suite verdicts with
# their looks; the per-track verdict needs_more_seeds. 4: the across-tracks verdict one_track and
# its CI the sign-flip test inverted; 3: no param_ratio
REPORT_VERSION = 12


@dataclass(frozen=True)
class SuiteTest:
    """The two-sided sign-flip test of a mixer's suite effect: one test of every seed, or the
    combination test of the stages' tests (``stages`` > 1, docs/statistics.md, "Looks")."""

    statistic: float
    statistic_name: str
    alternative: str
    direction: Shift
    p_value: float
    p_method: str
    flips: int
    mc_seed: int
    p_holm: float
    p_se: float | None = None  # the Monte Carlo standard error of p_value (None: exact)
    stages: int = 1


@dataclass(frozen=True)
class LeftOut:
    """A mixer's suite figures with one track left out: the effect over the other tracks, its
    test's p (and Holm's, over the same mixers) and the direction that passes (``none``;
    ``unreachable``: no data of these seeds could pass)."""

    effect: float
    p_value: float
    p_holm: float
    direction: Shift


@dataclass(frozen=True)
class AcrossMixer:
    """One mixer's normalised-score figures across tracks (``across_tracks.mixers.<m>``); the
    bootstrap summaries (``iqm``, ``iqm_diff``, ``prob_improvement``) carry no interval when a
    track has fewer than :data:`BOOTSTRAP_SEEDS` seeds."""

    n_tracks: int
    tracks: list[str]
    n_cells: int
    per_track_effect: dict[str, float]
    suite_effect: float
    suite_effect_ci95: list[float]
    iqm: float
    iqm_ci95: list[float] | None
    iqm_diff: float
    iqm_diff_ci95: list[float] | None
    prob_improvement: float
    prob_improvement_ci95: list[float] | None
    fewer_tracks: bool
    tracks_won: int | None
    tracks_lost: int | None
    tracks_equivalent: int | None
    tracks_inconclusive: int | None
    suite_test: SuiteTest
    without_track: dict[str, LeftOut]
    robust_without_any_track: bool
    verdict: SuiteVerdict
    tracks_missing: list[str] = field(default_factory=list)  # planned, without results yet
    tracks_needing_seeds: int | None = None  # per-track verdicts needs_more_seeds
    # the tracks a not_robust result rests on (docs/statistics.md: without them the effect
    # changes sign or falls below half), and where none does, the seeds per track with which
    # the left-out tests would pass (power 0.8)
    rests_on: list[str] = field(default_factory=list)
    robustness_seeds: int | None = None

    def shown_verdict(self) -> str:
        """The verdict in words: ``not_robust`` with its direction and the tracks it rests on
        (or the seeds its robustness needs), ``mixed`` with its counts of won and lost tracks;
        a one-track suite sends the reader to its table; tracks the plan had that lack results
        are named."""
        if self.verdict == SuiteVerdict.ONE_TRACK:
            shown = "one track: see its table"
        elif self.verdict == SuiteVerdict.NOT_ROBUST:
            needs = (
                f"robustness needs {self.robustness_seeds} seeds"
                if self.robustness_seeds
                else "robustness needs more seeds"
            )
            rests = f"rests on {', '.join(self.rests_on)}" if self.rests_on else needs
            shown = f"{self.suite_test.direction}, {rests}"
        elif self.verdict == SuiteVerdict.MIXED:
            shown = f"mixed (won {self.tracks_won}, lost {self.tracks_lost})"
        else:
            shown = self.verdict
        missing = f" (without {', '.join(self.tracks_missing)})" if self.tracks_missing else ""
        return shown + missing


@dataclass(frozen=True)
class Ranks:
    """Average ranks with Friedman and Nemenyi's CD (descriptive)."""

    descriptive: bool
    tracks: list[str]
    tracks_dropped: dict[str, str]
    per_track: dict[str, dict[str, float]]
    average_rank: dict[str, float | None]
    friedman_statistic: float | None
    friedman_p: float | None
    nemenyi_cd: float | None
    reason: str | None
    alpha: float | None = None  # the level of the Nemenyi CD (the suite verdicts' look's)


@dataclass(frozen=True)
class AcrossTracks:
    """The suite-level figures (``across_tracks``)."""

    baseline: str
    scale: str
    baseline_iqm: float | None
    n_boot: int
    flips: int
    seed: int
    alpha: float
    tracks: list[str]
    tracks_not_scored: list[str]
    mixers: dict[str, AcrossMixer]
    ranks: Ranks
    tracks_left_out: dict[str, str] = field(default_factory=dict)
    holm_family: int = 0  # the mixers the plan compares (Holm's family across tracks)
    # the seed counts of every look at these suite verdicts, this run's last; alpha is
    # 0.05 / 2**(their number), so that the error over every look stays below 0.05
    # (docs/protocol.md, "Extending a run")
    looks: list[int] = field(default_factory=list)
    # the seed counts that end each stage of the suite tests (docs/statistics.md, "Looks"): the
    # earlier looks, the futility look, this run's seeds; one stage: one test of every seed
    stages: list[int] = field(default_factory=list)
    stage_weights: list[float] = field(default_factory=list)
    exact_limit: int = 0  # pooled sign patterns enumerated exactly; Monte Carlo beyond


@dataclass
class CostPoint(Costs):
    """A mixer's score with its CI and verdict against each trade-off cost (its costs: None
    where not measured)."""

    score: float | None = None
    ci95: list[float] | None = None
    verdict: str | None = None
    tracks: list[str] | None = field(default=None, metadata=OMIT_NONE)  # across: its tracks


@dataclass
class Tradeoff:
    """Quality against cost: the points and, per cost, the Pareto front (cheapest first)."""

    score: str
    points: dict[str, CostPoint]
    pareto: dict[str, list[str]]
    cost_scale: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class QualityVsCost:
    """``quality_vs_cost``: per track and across tracks."""

    costs: list[str]
    tracks: dict[str, Tradeoff]
    across: Tradeoff | None


@dataclass
class Undertrained:
    """A cell the ``undertrained`` rule flagged, with the figures that crossed it."""

    track: str
    mixer: str
    tail_drop: float
    tail_share: float
    reason: str


@dataclass
class CurvesSummary:
    """``learning_curves``: the rule in words, its thresholds, every flagged cell."""

    rule: str
    tail_fraction: float
    min_drop: float
    min_share: float
    undertrained: list[Undertrained]


@dataclass
class Design:
    """The analysis' Holm family and what the seeds can reach (``design``)."""

    comparisons: int
    finished: int
    partial: bool
    alpha: float
    verdict_alpha: float
    both_converged_comparisons: int
    seeds: int
    min_seeds_for_significance: int
    warning: str | None
    jobs: int = 0  # the plan's jobs
    jobs_finished: int = 0  # of those, with a stored result
    claims: str = "per-track"  # the claims the seeds were planned for (vocabulary.Claims)
    per_track_seeds: int = 0  # the per-track design's planned seeds (one discordant seed allowed)
    futility_seeds: int = 0  # the seeds of the per-track design's futility look (0: none)
    stopped: int = 0  # the comparisons that look stopped
    # per track, the MDE the design planned (% at verdict_alpha; None: nothing detectable)
    planned_mde: dict[str, float | None] = field(default_factory=dict)

    def suite_claims(self) -> bool:
        """The run planned the claims across tracks, not per track."""
        return self.claims == Claims.SUITE

    def banner(self) -> str:
        """``partial: k of m comparisons, n of N jobs`` for a run not finished, else empty."""
        if not self.partial:
            return ""
        return (
            f"partial: {self.finished} of {self.comparisons} comparisons, "
            f"{self.jobs_finished} of {self.jobs} jobs"
        )


@dataclass
class Scale:
    """The run's scale (``scale``) and the one sentence the page's head shows."""

    preset: str
    note: str


@dataclass
class SelectionSummary:
    """Across every cell: at chance, edges chosen, agreement with the modal choice."""

    cells: int
    at_chance: int
    edge_of_grid: int
    edge_share: float | None
    median_agreement: float | None
    indecisive: int


@dataclass
class Failure:
    """A failed job of the run."""

    track: str
    mixer: str
    seed: int
    reason: str | None
    traceback: str | None


@dataclass
class Analysis:
    """The whole report of a run (``report.json``)."""

    report_version: int
    design: Design  # which claims the run planned, first: the file leads with the answer
    across_tracks: AcrossTracks | None  # the suite verdicts
    warnings: list[str]
    settings: RunSettings  # the plan's resolved run settings
    environment: RunEnvironment  # where the plan was made
    mixers: dict[str, MixerFacts]
    tracks: dict[str, TrackResult]
    skipped: list[Skip]
    scale: Scale
    selection: SelectionSummary
    learning_curves: CurvesSummary
    quality_vs_cost: QualityVsCost
    failures: list[Failure]
    inputs_digest: str | None = None

    @property
    def baseline(self) -> str:
        """The mixer every other one is compared with."""
        return self.settings.baseline

    def mixer_names(self) -> list[str]:
        """Every mixer of the run (the baseline first), then any other found in a track."""
        names = list(self.settings.mixers or ())
        names = ([self.baseline] if self.baseline else []) + [
            n for n in names if n != self.baseline
        ]
        for entry in self.tracks.values():
            names += [n for n in entry.mixers if n not in names]
        return names

    def to_dict(self) -> dict[str, Any]:
        """The plain data ``report.json`` holds (strict JSON: NaN and infinities as None)."""
        return serial.strict(serial.to_plain(self))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Analysis:
        """The typed report from ``report.json``'s data."""
        return serial.build(cls, raw)


@dataclass
class CompareRow:
    """One (track, mixer) of ``benchsuite compare``: run B against run A, paired by seed."""

    track: str
    mixer: str
    metric: str
    comparison: Comparison


@dataclass
class RunComparison:
    """``benchsuite compare A B``: both runs' settings and one row per shared cell."""

    a: RunSettings
    b: RunSettings
    rows: list[CompareRow]  # the cells whose jobs differ between the runs: Holm's family
    unchanged: list[str] = field(default_factory=list)  # track/mixer with the same jobs in both

    def to_dict(self) -> dict[str, Any]:
        """Strict JSON data (``--json``; NaN as None)."""
        return serial.strict(serial.to_plain(self))
