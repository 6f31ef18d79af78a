"""Every caption of the terminal tables and the HTML page, in one place: what a column, a figure
or a table means. The page's template (``templates/report.html.j2``) reads them as ``captions``;
docs/report.md explains each section at more length.
"""

from __future__ import annotations

from benchsuite import measures
from benchsuite.output.numbers import num
from benchsuite.results.curves import RULE
from benchsuite.results.schema import AcrossTracks
from benchsuite.vocabulary import Scale

SCALE_NOTE = {
    Scale.LOG: "improvement, CI and MDE on the log-ratio scale, shown as 1 − the geometric-mean "
    "ratio mixer/baseline in % (never beyond +100%)",
    Scale.DIFFERENCE: "improvement, CI and MDE on the difference scale, shown as % of the "
    "baseline's mean",
}
PAGE_SCALE = {
    Scale.LOG: "improvement, CI and MDE from paired log-ratios, shown as 1 − the geometric-mean "
    "ratio mixer/baseline in % (never beyond +100%)",
    Scale.DIFFERENCE: "improvement, CI and MDE from paired differences, as % of the baseline mean",
}
SCALE_WORD = {Scale.LOG: "log-ratio", Scale.DIFFERENCE: "difference"}
RESOLUTION = (
    "resolving power {power} = spread {spread} / noise {noise} (sd of {mixers} mixers' mean "
    "effects / RMS of their seeds' sd, {scale} scale, controls left out; ≥ 1.5: they spread out "
    "by more than 1.5 seed-noise units); MDE on that scale at alpha {alpha}: measured (median) "
    "{measured}, planned {planned} (none: the seeds cannot reach that alpha)"
)
POINTS_NOTE = "Δ pt: the same paired difference in percentage points, with its 95% CI"
CONFIG_NOTE = (
    "config: the one most seeds chose on their validation split (seeds agreeing / seeds; a tie "
    "goes to the best validation mean)"
)

HEADLINE_SUITE = (
    "The run plans the claims across tracks. Per mixer, against the baseline: its suite verdict "
    "(Holm over {mixers} mixers at α = {alpha}: {looks}; better or worse only when it holds "
    "with any one track left out, else it names the tracks it rests on or the seeds its "
    "robustness needs), its suite effect (the mean over tracks of the paired "
    "normalised-score difference) with its {level}% interval (the shifts the same sign-flip "
    "test does not reject; † where it excludes 0 but the Holm p does not pass: the interval "
    "is before Holm), its Holm p; on how many tracks its mean is ahead of and behind the "
    "baseline's (a description: per-track verdicts need at least {seeds} seeds, {planned} as "
    "the per-track design plans them, --design per-track into the same --out; each track's "
    "table has the effects) and where it learnt nothing; its "
    "parameters and training step time relative to the baseline's. Largest suite effect first."
)
HEADLINE = (
    "Per mixer, against the baseline: the tracks where its Holm-adjusted verdict is a "
    "significant win or loss (below the margin included) and those where it is equivalent "
    "within the margin (on the others it is undecided: inconclusive, or its seeds could not "
    "reach Holm's first step, marked needs more seeds); its suite effect (the mean over tracks "
    "of the paired normalised-score difference, with the interval of its sign-flip test at the "
    "suite verdicts' level, † where it excludes 0 but the Holm p does not pass) and the suite "
    "verdict; "
    "its parameters and training step time relative to the baseline's (geometric mean over its "
    "tracks). Largest suite effect first."
)
HEATMAP = (
    "The mixer × track verdict matrix: relative improvement over the baseline per mixer and "
    "track, coloured by the Holm-adjusted verdict, with its symbol."
)
FOREST = (
    "Every comparison's improvement with its 95% CI, ordered; the line at 0 is the baseline, "
    "the grey band the equivalence margin; marker shape, symbol and colour give the "
    "Holm-adjusted verdict (▲ win, △ win below the margin, = equivalent, ? inconclusive, "
    "▽ loss below the margin, ▼ loss)."
)
SEEDS = (
    "Test metric per evaluation seed; each mixer (filled) beside the baseline (hollow), the "
    "same seed joined by a line: solid blue where the mixer is better on that seed, dashed red "
    "where worse."
)
CURVES = (
    "Training loss of the config each seed chose: median over the seeds (line) and 25–75% band, "
    "log scale when it spans more than a decade. Dashed: undertrained, one rule for every "
    f"mixer: {RULE}."
)
TRACK_COST = (
    "Improvement over the baseline (95% CI, on the track's scale: {scale}; the baseline at 0) "
    "against parameters, forward FLOPs per example and training step time (medians over the "
    "evaluation runs), log scale; ringed and joined: the Pareto front, mixers no other beats on "
    "both axes."
)
SWEEP_FIGURE = (
    "Validation metric of every grid config per mixer: dots are the evaluation seeds (each "
    "tunes on its own validation split), the line joins their means, the ring marks the config "
    "most seeds chose."
)
SWEEP_TABLE = (
    "mean val.{metric} over the evaluation seeds (each tunes on its own validation split); ★ = "
    "the config most seeds chose (ties: the best validation mean), not necessarily the best "
    "mean in its column"
)
COMPARISON = (
    "{metric} ({direction}); improvement > 0 means better than {baseline}; {scale}; p: paired "
    "sign-flip test; Holm p: adjusted over every comparison of the run ({family}); significant: "
    "Holm p < α = {alpha} and the 95% CI excludes 0; chosen config: the one most seeds chose on "
    "their own validation split (a tie goes to the best validation mean). Rows: the baseline, "
    "then the largest improvement first."
)
SIGNATURES = (
    "measured on the trained model of the first evaluation seed; confirmed when |observed − "
    "predicted| ≤ tolerance"
)
FLAGS = (
    "Flags raised on this track, each with the figure that crossed its threshold (the "
    "thresholds: docs/results.md)."
)
DATASETS = (
    "MDE: the smallest improvement the paired test would detect with 80% power at α = {alpha} "
    "(Holm's first step over {comparisons} comparisons; observed spread of the per-seed "
    "differences), on each track's scale: 1 − the geometric-mean ratio for log-ratio tracks, % "
    "of the baseline mean otherwise; none: the seeds cannot reach that α. Resolving power: the "
    "sd of the compared mixers' mean effects over the RMS of their seeds' sd (controls left "
    "out; each track's table gives both and the MDEs on the same scale)."
)
ACROSS = (
    "score: the fraction of the gap from the trivial predictor (0) to the ideal value (1) "
    "closed, higher is better; suite effect: the mean over tracks (each weighing the same) of "
    "the mean paired score difference with the baseline; p: two-sided sign-flip test of that "
    "same suite effect (its sign is the direction tested), {level}% CI: the shifts that test "
    "does not reject at α = {alpha} ({looks}; † where it excludes 0 but the Holm p does not "
    "pass: the interval is before Holm); "
    "Holm across {mixers} mixers; better/worse: Holm p < α = {alpha} and the CI excludes 0, "
    "holding with any one track left out (else: the tracks it rests on, whose absence changes "
    "the effect's sign or halves it, or the seeds its robustness needs; the table below has "
    "each left-out test); mixed: significant wins and losses on tracks; IQM and "
    "P(improvement): descriptive, stratified bootstrap 95% CIs over the same seeds (none "
    "with fewer than 5 seeds per track). Largest suite effect first."
)
IQM = (
    "IQM of normalised scores (0 = trivial predictor, 1 = ideal) with its 95% CI; the dashed "
    "line is the baseline's IQM."
)
ACROSS_COST = (
    "Suite effect (mean over tracks of the paired score difference with the baseline, with the "
    "interval of its test at the suite verdicts' level; "
    "the baseline at 0) against each cost relative to the baseline's (geometric mean over the "
    "mixer's tracks; the baseline at 1), log scale; ringed and joined: the Pareto front. The "
    "numbers are in report.json under quality_vs_cost."
)
RANKS = (
    "Average rank of the mean normalised score over tracks (1 = best); with ≥ 3 mixers and ≥ 2 "
    "tracks, Nemenyi's critical difference (CD, at the suite verdicts' α) and bars joining "
    "mixers that do not differ by more than it. Descriptive."
)


def costs(names: list[str]) -> str:
    """The caption of the cost table that shows the costs ``names``."""
    return (
        "as recorded with the first evaluation run of the chosen config: "
        f"{measures.explained(names)} (k = thousand, M = million, G = billion)."
    )


TRACK_UNDECIDED = (
    "Holm over {family} comparisons{partial}: no sign pattern of {n} seeds reaches its first "
    "step (alpha {alpha}), so each row shows its effect, 95% CI († where it excludes 0: before "
    "Holm) and the seeds that agree (wins/ties/losses); per-track verdict: needs{need} seeds "
    "(--design per-track into the same --out trains only the new ones)"
)
TRACK_FAMILY = (
    "Holm over {family} comparisons{partial}; significant: Holm p < α = {alpha} and the 95% "
    "CI excludes 0 (†: the CI does, the Holm p does not pass); MDE at alpha {mde} (Holm's "
    "first step), none: the seeds cannot reach that alpha"
)
LEFT_OUT = (
    "each cell: the suite effect over the other tracks and the Holm p of its test (over "
    "{mixers} mixers at α = {alpha}, as the suite verdict); a verdict is better or worse only "
    "when every one of these passes; it rests on a track only where leaving that track out "
    "changes the effect's sign or leaves less than half of it (docs/statistics.md); where none "
    "does and a test does not pass, the seeds are too few to show robustness: robustness needs "
    "gives the seeds per track with which these tests would pass (power 0.8)"
)
TERMINAL_ACROSS = (
    "effect: mean paired score difference with the baseline (difference scale of the score), "
    "per track and (suite) the mean over tracks, each track weighing the same; p: two-sided "
    "sign-flip test of that same suite effect (its sign is the direction tested), its {level}% "
    "CI the shifts that test does not reject at α = {alpha} ({looks}; † where it excludes 0 "
    "but the Holm p does not pass: the interval is before Holm), "
    "Holm across {mixers} mixers; better/worse: Holm p < α = {alpha} and the CI excludes 0; "
    "robust: the verdict holds with any one track left out (else it names the tracks whose "
    "absence changes the effect's sign or halves it, or the seeds its robustness needs; -v "
    "shows each left-out test); mixed: significant wins and losses on tracks; "
    "* ran on fewer tracks; ranks: "
    "docs/statistics.md{dropped}; rows by suite effect, largest first; {scale}"
)
COMPARE = (
    "improvement > 0 means B is better, on each track's scale as run analyses it (log-ratio "
    "tracks: 1 − the geometric-mean ratio B/A in %; others: % of A's mean); Holm over the "
    "{rows} rows whose jobs differ between the runs{unchanged}; significant: Holm p < α = {alpha} "
    "and the 95% CI excludes 0; MDE at alpha {mde_alpha}"
)
SCALING = (
    "From benchsuite scale ({date}): one training step of each mixer as the token count "
    "doubles. Cells are relative to the baseline at the same length; the exponent is the "
    "log-log slope over the upper half of the ladder (1: linear in the length, 2: quadratic)."
)


def suite_effect_label(alpha: float | None) -> str:
    """The suite effect's column: its interval is its test inverted at the look's level
    (``alpha``: 0.025 at a run's first look, so 97.5%), not at 95%."""
    if alpha is None:
        return "suite effect [CI]"
    return f"suite effect [{100 * (1 - alpha):g}% CI]"


def looks_sentence(across: AcrossTracks) -> str:
    """What the suite figures stand on, in one sentence: the looks at them and their level, the
    seeds each uses (every seed; in stages where there are several, with their weights), and
    whether p counts every sign pattern or is Monte Carlo (with its largest standard error)."""
    looks = across.looks or []
    level = f"α = 0.05/2^{len(looks)} = {num(across.alpha, 3)}" if looks else f"α = {across.alpha}"
    seen = (
        f"look {len(looks)} at these verdicts, at {' and '.join(map(str, looks))} seeds"
        if len(looks) > 1
        else "one look"
    )
    if len(across.stages) > 1:
        spans = ", ".join(
            f"{first}–{last - 1}"
            for first, last in zip([0, *across.stages[:-1]], across.stages, strict=True)
        )
        weights = ", ".join(num(w, 2) for w in across.stage_weights)
        used = (
            f"every seed, in {len(across.stages)} stages (seeds {spans}; weights {weights}) "
            "whose exact tests are combined by the weighted inverse normal"
        )
    else:
        used = f"every seed ({looks[-1] if looks else 'all'} per track), one test"
    errors = [row.suite_test.p_se for row in across.mixers.values() if row.suite_test.p_se]
    method = (
        f"p from {across.flips:,} Monte Carlo sign flips (standard error up to "
        f"{num(max(errors), 2)})"
        if errors
        else "p exact (every sign pattern)"
    )
    return f"{seen}, {level}; {used}; {method}"
