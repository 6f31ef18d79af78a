"""One paired comparison of a mixer with the baseline on one track, built from the two cells'
stored runs with its flags (Holm over the run's family comes later, in the analysis)."""

from __future__ import annotations

import math

from benchsuite.measures import Costs
from benchsuite.plan.matching import Sizing
from benchsuite.plan.plan import DeclaredSignature, Plan
from benchsuite.protocol import stats
from benchsuite.protocol.ranges import metric_range
from benchsuite.records import RUN
from benchsuite.results import flags
from benchsuite.results.cell_schema import CellResult, Divergence, SignatureCheck, Size
from benchsuite.results.cells import Arm
from benchsuite.specs import Signature
from benchsuite.vocabulary import DivergenceReason, Flag


def _signature(declared: DeclaredSignature | None, arm: Arm, base: Arm) -> SignatureCheck | None:
    if declared is None:
        return None
    signature = Signature(declared.prediction, declared.predicted, declared.tolerance)
    return signature.check(arm.probes, base.probes)


def comparison_size(sizing: Sizing | None, base: Costs, arm: Costs) -> Size:
    """Both models' parameter and forward-FLOP counts as trained (``*_ratio``: the mixer's over
    the baseline's; None where either is not measured) and how the rule sized the mixer's model
    (``by``, ``set``, ``within``, ``reason``; None without the rule)."""

    def ratio(ours: float | None, theirs: float | None) -> float | None:
        return ours / theirs if theirs and ours else None

    return Size(
        by=sizing.by if sizing else None,
        within=sizing.within if sizing else None,
        reason=sizing.reason if sizing else None,
        set=dict(sizing.set) if sizing else {},
        baseline_params=base.params,
        mixer_params=arm.params,
        params_ratio=ratio(arm.params, base.params),
        baseline_flops=base.flops_per_example,
        mixer_flops=arm.flops_per_example,
        flops_ratio=ratio(arm.flops_per_example, base.flops_per_example),
    )


def paired(
    base: Arm, arm: Arm, higher: bool
) -> tuple[list[int], list[float], list[float], list[float]]:
    """The seeds both arms have, each seed's cap (the baseline's), and both arms' test scores
    there with a diverged result imputed by its seed's cap."""
    seeds = sorted(set(base.values) & set(arm.values))
    fill = -math.inf if higher else math.inf
    caps = [base.caps[s] if base.caps[s] is not None else fill for s in seeds]
    return seeds, caps, base.imputed(seeds, higher, caps), arm.imputed(seeds, higher, caps)


def timed_apart(base: Arm, arm: Arm) -> bool:
    """The two cells' jobs were trained (and their steps timed) by different runs: the baseline's
    reused from an earlier run in the folder beside the mixer's trained now, or the reverse.
    Unknown (False) where a record does not say which run trained it (stored before they did)."""
    runs = [[r.environment.get(RUN) for r in cell.records.values()] for cell in (base, arm)]
    if any(None in found for found in runs):
        return False
    return set(runs[0]) != set(runs[1])


def compare_cell(
    plan: Plan,
    track: str,
    mixer: str,
    base: Arm,
    arm: Arm,
    undertrained: tuple[bool, bool] = (False, False),
) -> CellResult:
    """The paired comparison of one mixer against the baseline on one track, built once with
    its flags: diverged results of either arm imputed with their seed's cap, on the metric's
    scale (log-ratios or differences); ``undertrained``: the mixer's and the baseline's learning
    curves say so. Holm over the run's family comes later (:func:`analyse`)."""
    facts = plan.tracks[track]
    higher = facts.higher_is_better
    seeds, caps, base_vals, arm_vals = paired(base, arm, higher)
    base_raw = [base.values[s] for s in seeds]
    arm_raw = [arm.values[s] for s in seeds]
    base_div = [base.diverged[s] for s in seeds]
    arm_div = [arm.diverged[s] for s in seeds]
    reasons = [arm.reasons[s] for s in seeds]
    learnt_nothing = arm.not_learned  # per seed, computed once
    not_learned = sum(learnt_nothing[s] for s in seeds)
    size = comparison_size(plan.cells[track][mixer].size, base.costs, arm.costs)
    bounds = metric_range(higher, facts.ideal)  # an interval of a difference stays within it
    comparison = stats.compare_paired(
        base_vals,
        arm_vals,
        higher_is_better=higher,
        scale=facts.scale,
        margin_rel=plan.settings.margin,
        caps=caps,
        bounds=bounds,
        flags=stats.comparison_flags(
            non_finite=reasons.count(DivergenceReason.NON_FINITE),
            no_better_than_trivial=not_learned,
            n=len(seeds),
            edge_of_grid=arm.selection.edge_of_grid,
            baseline_edge_of_grid=base.selection.edge_of_grid,
            indecisive_selection=arm.selection.indecisive,
            param_mismatch=flags.param_mismatch(size.params_ratio),
            undertrained=undertrained[0],
            baseline_undertrained=undertrained[1],
        )
        + ([Flag.TIMINGS_FROM_DIFFERENT_RUNS] if timed_apart(base, arm) else []),
    )
    both = stats.compare_both_converged(
        base_raw,
        arm_raw,
        base_div,
        arm_div,
        higher,
        scale=facts.scale,
        margin_rel=plan.settings.margin,
        caps=caps,
        bounds=bounds,
    )
    return CellResult(
        comparison=comparison,
        seeds=seeds,
        missing_seeds=arm.n_planned - len(seeds),
        divergence=Divergence(
            mixer=stats.divergence_summary(sum(arm_div), len(seeds)),
            baseline=stats.divergence_summary(sum(base_div), len(seeds)),
            mixer_reasons={r: reasons.count(r) for r in DivergenceReason if r},
            mixer_not_learned=not_learned,
        ),
        both_converged=both,
        baseline_values=base_vals,
        mixer_values=arm_vals,
        caps=caps,
        signature=_signature(plan.mixers[mixer].signature, arm, base),
        size=size,
    )
