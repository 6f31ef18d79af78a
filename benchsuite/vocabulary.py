"""The words a report is written in, each defined once: verdicts (per track and across tracks),
flags, statuses, scales and directions. String enums: a member is its JSON value, so
report.json reads as it always has (docs/statistics.md, docs/results.md say what each means).
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """A comparison's verdict on one track (docs/statistics.md, "Verdicts")."""

    SIGNIFICANT_WIN = "significant_win"
    SIGNIFICANT_WIN_BELOW_MARGIN = "significant_win_below_margin"
    EQUIVALENT = "equivalent_within_margin"
    INCONCLUSIVE = "inconclusive"
    NEEDS_MORE_SEEDS = "needs_more_seeds"  # the seeds cannot reach the verdicts' alpha at all
    SIGNIFICANT_LOSS_BELOW_MARGIN = "significant_loss_below_margin"
    SIGNIFICANT_LOSS = "significant_loss"

    @property
    def better(self) -> bool:
        """A significant win (below the margin or not)."""
        return self in (Verdict.SIGNIFICANT_WIN, Verdict.SIGNIFICANT_WIN_BELOW_MARGIN)

    @property
    def worse(self) -> bool:
        """A significant loss (below the margin or not)."""
        return self in (Verdict.SIGNIFICANT_LOSS, Verdict.SIGNIFICANT_LOSS_BELOW_MARGIN)


class SuiteVerdict(StrEnum):
    """A mixer's verdict across tracks (docs/statistics.md, "Across tracks")."""

    BETTER = "better"  # significant, and still with any one track left out
    WORSE = "worse"
    NOT_ROBUST = "not_robust"  # significant, but not with some track left out: rests on it
    MIXED = "mixed"  # significant wins on some tracks and significant losses on others
    INCONCLUSIVE = "inconclusive"
    ONE_TRACK = "one_track"


class Shift(StrEnum):
    """Which way a suite effect goes: the sign of the effect tested, or, for the suite test
    with a track left out, the significant direction that remains (``none``: not significant;
    ``unreachable``: these seeds could not be significant without that track at all)."""

    BETTER = "better"
    WORSE = "worse"
    NONE = "none"
    UNREACHABLE = "unreachable"


class Claims(StrEnum):
    """Which claims a run's seeds are planned for (docs/protocol.md, "Two designs"): each
    mixer's verdict across tracks, or each mixer's verdict on each track."""

    SUITE = "suite"
    PER_TRACK = "per-track"


class Flag(StrEnum):
    """A comparison's flags (docs/results.md, "Flags": each one's threshold and why)."""

    UNSTABLE = "unstable"
    NO_BETTER_THAN_TRIVIAL = "no_better_than_trivial"
    EDGE_OF_GRID = "edge_of_grid"
    BASELINE_EDGE_OF_GRID = "baseline_edge_of_grid"
    INDECISIVE_SELECTION = "indecisive_selection"
    PARAM_MISMATCH = "param_mismatch"
    UNDERTRAINED = "undertrained"
    BASELINE_UNDERTRAINED = "baseline_undertrained"
    TIMINGS_FROM_DIFFERENT_RUNS = "timings_from_different_runs"  # its step time ratio's


class DivergenceReason(StrEnum):
    """Why a seed's result is imputed with its trivial predictor's score (docs/statistics.md,
    "Divergence"); ``NONE`` when it is not."""

    NONE = ""
    NON_FINITE = "non_finite"  # a non-finite training loss or score
    NO_BETTER_THAN_TRIVIAL = "no_better_than_trivial"  # worse than the cap beyond rounding


class SkipKind(StrEnum):
    """Why a track or a cell of the plan does not run: ruled out by the data (a mixer that does
    not support the track's shape, by design), failed by the pre-flight, or another error."""

    UNSUPPORTED = "unsupported"
    PREFLIGHT = "pre-flight"
    ERROR = "error"

    @property
    def failed(self) -> bool:
        """An error, not a design choice: it makes the run's exit code 1."""
        return self is not SkipKind.UNSUPPORTED


class Problem(StrEnum):
    """A row of the report's problem table: a skipped cell, failed jobs, an undertrained one."""

    SKIPPED = "skipped"
    FAILED = "failed"
    UNDERTRAINED = "undertrained"


class Split(StrEnum):
    """The held-out splits a result is scored on."""

    VAL = "val"
    TEST = "test"


class Match(StrEnum):
    """The equal-size rule a run sizes its models by (``--match``; docs/protocol.md)."""

    PARAMS = "params"  # each model within 10% of the baseline's parameter count
    NONE = "none"  # every model as declared


class Status(StrEnum):
    """A stored job record's status."""

    OK = "ok"
    FAILED = "failed"


class PointStatus(StrEnum):
    """A point of ``benchsuite scale`` (one mixer at one length): measured, or why not."""

    OK = "ok"
    OVER_BUDGET = "over budget"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"


class Scale(StrEnum):
    """The scale a comparison is analysed on (docs/statistics.md): paired log-ratios, for a
    positive lower-is-better metric, or paired differences."""

    LOG = "log"
    DIFFERENCE = "difference"


class Direction(StrEnum):
    """Which way a metric improves."""

    HIGHER = "higher is better"
    LOWER = "lower is better"
