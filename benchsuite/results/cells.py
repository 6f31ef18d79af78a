"""One cell of a run (a mixer on a track) read from its stored records: each seed's test score,
whether it diverged (and is imputed with its seed's cap), how the seeds chose their config, its
costs. The config each seed chose is the plan's record of it; nothing is selected again here.

:func:`arm` is all the analysis needs of a cell, and all ``benchsuite compare`` needs: per-seed
values without any test, bootstrap or sign flip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from benchsuite.measures import Costs
from benchsuite.plan.plan import Plan, TrackFacts
from benchsuite.protocol import stats
from benchsuite.records import RunRecord
from benchsuite.results import curves, flags
from benchsuite.results.cell_schema import Full, MixerResult, Selection, Spread, Summary, SweepRow
from benchsuite.selection import divergence, learnt_nothing, on_edge
from benchsuite.vocabulary import DivergenceReason, Split

AT_CHANCE_P = 0.05  # one-sided level of "better than the trivial predictor"


def at_chance(
    values: dict[int, float],
    caps: dict[int, float | None],
    higher: bool,
    ideal: float | None = None,
    noise: dict[int, float | None] | None = None,
) -> bool:
    """True when a cell's test scores are not better than its seeds' trivial predictor: its
    validation curve is flat noise, so where its choice falls in the grid says nothing about the
    grid. With enough seeds for the one-sided sign-flip test to reach ``AT_CHANCE_P`` (5), that
    test decides; with fewer (one seed included) it cannot reject on any data, so the cell is at
    chance only when every seed learnt nothing (:func:`benchsuite.selection.learnt_nothing`)."""
    seeds = [s for s in values if caps.get(s) is not None and math.isfinite(values[s])]
    if not seeds:
        return False
    if 0.5 ** len(seeds) >= AT_CHANCE_P:  # the smallest one-sided p of so few seeds
        noise = noise or {}
        return all(learnt_nothing(values[s], caps[s], ideal, higher, noise.get(s)) for s in seeds)
    gain = np.array([values[s] - caps[s] for s in seeds]) * (1.0 if higher else -1.0)
    p_two_sided = stats.sign_flip_p(gain)[0]
    return not (gain.mean() > 0 and p_two_sided / 2 < AT_CHANCE_P)


def sweep_rows(
    grid: list[dict], counts: list[int], records: dict[int, RunRecord], metric: str
) -> list[SweepRow]:
    """Every grid config's validation value per seed, how many seeds chose it, and their mean."""
    rows = []
    for k, config in enumerate(grid):
        values = [
            float(records[seed].result.sweep[k].val(metric))
            for seed in sorted(records)
            if len(records[seed].result.sweep) > k
        ]
        rows.append(
            SweepRow(
                cfg=config,
                val=values,
                chosen_by=counts[k],
                mean=float(np.mean(values)) if values else math.nan,
            )
        )
    return rows


def _modal(counts: list[int], rows: list[SweepRow], higher: bool) -> tuple[int, list[int]]:
    """The most-chosen config and every config tied with it; a tie goes to the best mean
    validation score over the seeds, then to grid order."""
    tied = [k for k, c in enumerate(counts) if c == max(counts)]
    sign = 1.0 if higher else -1.0

    def score(k: int) -> float:
        mean = rows[k].mean
        return sign * mean if math.isfinite(mean) else -math.inf

    return max(tied, key=lambda k: (score(k), -k)), tied


def tied_choice(record: RunRecord, chosen: int, metric: str) -> bool:
    """Whether a seed's choice was an exact tie: another config of its grid scored the very same
    finite validation value, so the tie rule (fewer diverged runs, then grid order) decided."""
    values = [point.val(metric) for point in record.result.sweep]
    if chosen >= len(values) or not math.isfinite(values[chosen]):
        return False
    return sum(value == values[chosen] for value in values) > 1


def selection(
    grid: list[dict],
    chosen: dict[int, int],
    records: dict[int, RunRecord],
    metric: str,
    chance: bool = False,
    higher: bool = True,
) -> Selection:
    """How a cell's seeds chose: counts per config, the modal config (ties: best validation mean,
    then grid order), how many seeds agree with it, how many chose an end of the grid, and which
    seeds' own choice was an exact tie.
    The edge rule counts only the seeds that decided (not an exact tie, which the grid's order
    broke): ``edge_of_grid`` needs every config tied for the most of their choices on an end of
    the grid (a tie-break never makes an edge). ``chance``: the cell is at chance, so an end of
    the grid is recorded (``modal_on_edge``) but not flagged."""
    counts = [sum(index == k for index in chosen.values()) for k in range(len(grid))]
    modal, tied = _modal(counts, sweep_rows(grid, counts, records, metric), higher)
    n = max(len(chosen), 1)
    steps, axis = flags.selection_spread(grid, list(chosen.values()))
    tied_seeds = [
        seed
        for seed, index in sorted(chosen.items())
        if seed in records and tied_choice(records[seed], index, metric)
    ]
    decided = [index for seed, index in chosen.items() if seed not in tied_seeds]
    most = [sum(index == k for index in decided) for k in range(len(grid))]
    top = [k for k, count in enumerate(most) if decided and count == max(most)]
    return Selection(
        modal=modal,
        tied=tied if len(tied) > 1 else [],
        counts=counts,
        agreement=counts[modal] / n,
        edge_share=sum(on_edge(grid, grid[i]) for i in decided) / max(len(decided), 1),
        modal_on_edge=on_edge(grid, grid[modal]),
        edge_of_grid=bool(top) and all(on_edge(grid, grid[k]) for k in top) and not chance,
        at_chance=chance,
        spread=Spread(steps=steps, axis=axis),
        indecisive=flags.indecisive(steps) and not chance,
        chosen={str(seed): index for seed, index in sorted(chosen.items())},
        tied_seeds=[str(seed) for seed in tied_seeds],
    )


@dataclass
class Arm:
    """A cell's stored runs by seed: test scores, divergence and its reasons, caps, selection."""

    records: dict[int, RunRecord]
    values: dict[int, float]
    reasons: dict[int, DivergenceReason]
    caps: dict[int, float | None]
    selection: Selection
    sweep: list[SweepRow]
    n_planned: int
    ideal: float | None = None  # the metric's ideal value (the trivial level's other end)
    higher: bool = True

    @property
    def not_learned(self) -> dict[int, bool]:
        """Per seed: its chosen run scored no better than the trivial predictor: worse than its
        cap (imputed), or not above it by more than its test noise allows
        (:func:`benchsuite.selection.learnt_nothing`)."""
        return {
            seed: self.reasons[seed] == DivergenceReason.NO_BETTER_THAN_TRIVIAL
            or (
                not self.reasons[seed]
                and learnt_nothing(
                    value,
                    self.caps[seed],
                    self.ideal,
                    self.higher,
                    self.records[seed].result.test_se,
                )
            )
            for seed, value in self.values.items()
        }

    @property
    def diverged(self) -> dict[int, bool]:
        """Per seed: the result is imputed (non-finite, or no better than the trivial one)."""
        return {seed: bool(reason) for seed, reason in self.reasons.items()}

    @property
    def costs(self) -> Costs:
        """The costs of the first evaluation run."""
        return self.records[min(self.records)].result.costs

    @property
    def probes(self) -> dict[str, float]:
        """The probes of the first evaluation run, when it measured them."""
        first = self.records[min(self.records)]
        return first.result.probes if first.job.measure else {}

    def imputed(
        self,
        seeds: list[int],
        higher: bool,
        caps: list[float] | None = None,
    ) -> list[float]:
        """The test scores of ``seeds``, a diverged one replaced by its cap (``caps``: the caps
        to use, default this cell's own)."""
        fill = -math.inf if higher else math.inf
        if caps is None:
            caps = [fill if self.caps[s] is None else self.caps[s] for s in seeds]
        diverged = self.diverged
        return stats.impute_diverged(
            [self.values[s] for s in seeds], [diverged[s] for s in seeds], caps
        )


def _reason(record: RunRecord, value: float, higher: bool) -> DivergenceReason:
    """Why a stored result is imputed, with the caps compared at float32 precision (records
    stored before that tolerance keep their non-finite reason, not a rounding one)."""
    non_finite = DivergenceReason.NON_FINITE
    if record.result.divergence == non_finite or (
        record.result.diverged and not record.result.divergence
    ):
        return record.result.divergence or non_finite
    return divergence(value, record.result.cap, higher, finite=True)


def arm(plan: Plan, track: str, mixer: str, results: dict[str, RunRecord]) -> Arm | None:
    """The stored runs of one cell (None when none finished)."""
    facts = plan.tracks[track]
    cell = plan.cells[track].get(mixer)
    found = [results[key] for key in (cell.jobs if cell else []) if key in results]
    records = {record.job.seed: record for record in found}
    if not records:
        return None
    chosen = {seed: r.result.chosen for seed, r in records.items() if r.result.chosen is not None}
    values = {seed: r.result.metrics.of(Split.TEST, facts.metric) for seed, r in records.items()}
    caps = {seed: r.result.cap for seed, r in records.items()}
    higher = facts.higher_is_better
    noise = {seed: r.result.test_se for seed, r in records.items()}
    chance = at_chance(values, caps, higher, facts.ideal, noise)
    picked = selection(facts.grid, chosen, records, facts.metric, chance, higher)
    return Arm(
        records=records,
        values=values,
        reasons={seed: _reason(r, values[seed], higher) for seed, r in records.items()},
        caps=caps,
        selection=picked,
        sweep=sweep_rows(facts.grid, picked.counts, records, facts.metric),
        n_planned=len(cell.jobs),
        ideal=facts.ideal,
        higher=higher,
    )


S = TypeVar("S", bound=Summary)


def summary(values: list[float], kind: type[S] = Summary, **more: Any) -> S:
    """Mean, sample sd and every value (None where there are too few), as a ``kind`` (with
    ``more`` of its fields)."""
    array = np.asarray(values, dtype=float)
    return kind(
        mean=float(array.mean()) if len(array) else None,
        std=float(array.std(ddof=1)) if len(array) > 1 else None,
        per_seed=[float(v) for v in array],
        n=len(array),
        **more,
    )


def mixer_result(facts: TrackFacts, cell: Arm) -> MixerResult:
    """``tracks.<t>.mixers.<m>``: the cell's choice, sweep, test scores, costs and curve."""
    seeds = sorted(cell.values)
    imputed = cell.imputed(seeds, facts.higher_is_better)
    learnt = {seed for seed, nothing in cell.not_learned.items() if not nothing}
    curve = curves.learning_curve(cell.records, facts.budget.steps, learnt)
    return MixerResult(
        best_cfg=facts.grid[cell.selection.modal],
        selection=cell.selection,
        sweep=cell.sweep,
        full=summary(imputed, Full, raw=summary([cell.values[s] for s in seeds])),
        diverged=int(sum(cell.diverged.values())),
        costs=cell.costs,
        costs_median=Costs.median(r.result.costs for r in cell.records.values()),
        probes=cell.probes,
        learning_curve=curve,
        undertrained=bool(curve and curve.undertrained),
    )
