"""``benchsuite compare A B``: the same mixers on the same tracks in two runs, paired by seed.

Typical use: a mixer before and after a change. Run B is the "mixer", run A the "baseline" of each
paired comparison, so improvement > 0 means B is better. Each comparison is analysed as ``run``
analyses the track: on its scale (log-ratios or differences) with run A's equivalence margin (and
A's gain over its seeds' trivial predictors), flagged ``no_better_than_trivial`` when either run
learnt nothing on a quarter of the seeds and on more than one (never then ``equivalent``), and Holm
over the rows whose jobs differ between the runs: a cell whose every job is the same in both (the
same key: same code, settings and seed, such as a reused baseline) has the same results by
construction, so it is listed as unchanged and kept out of the family. Runs whose budget signatures
or seeds differ are refused, naming the settings that differ: their numbers do not mean the same
thing.

Each run is read from its store: the plan and, per cell, each seed's stored test score (a
diverged one imputed with its seed's cap, as ``run`` does). No other figure of the runs' reports
is computed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.plan.plan import TrackFacts
from benchsuite.protocol import stats
from benchsuite.protocol.ranges import metric_range
from benchsuite.results.analysis import last_plan, open_store
from benchsuite.results.cells import arm
from benchsuite.results.schema import CompareRow, RunComparison
from benchsuite.settings import RunSettings
from benchsuite.store.store import FILENAME


@dataclass
class StoredCell:
    """One mixer on one track of a stored run: by seed, its test score (a diverged one imputed
    with its seed's cap), the cap, whether it learnt nothing, and its job's key."""

    values: dict[int, float]
    caps: dict[int, float | None]
    not_learned: dict[int, bool]
    jobs: dict[int, str]


@dataclass
class StoredTrack:
    """One track of a stored run: its facts and each mixer's cell."""

    facts: TrackFacts
    cells: dict[str, StoredCell]

    @property
    def values(self) -> dict[str, dict[int, float]]:
        """Each mixer's test score by seed."""
        return {mixer: cell.values for mixer, cell in self.cells.items()}


@dataclass
class StoredRun:
    """What ``compare`` reads of a run: its settings and its tracks' per-seed scores."""

    settings: RunSettings
    tracks: dict[str, StoredTrack]


def budget_terms(run: StoredRun, track: str) -> dict[str, Any]:
    """The settings a track's budget signature covers, read back from a run (the terms of
    :func:`benchsuite.plan.jobs.budget_terms`)."""
    facts = run.tracks[track].facts
    settings = run.settings
    return {
        "grid": facts.grid,
        **facts.budget.signed(),
        "preset": settings.preset,
        "track_options": settings.track_options.get(track, {}),
    }


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``name (A vs B)`` for every setting whose value differs between ``a`` and ``b``."""
    return [
        f"{name} ({a.get(name)!r} vs {b.get(name)!r})"
        for name in dict.fromkeys([*a, *b])
        if a.get(name) != b.get(name)
    ]


def _check_comparable(a: StoredRun, b: StoredRun, track: str) -> None:
    sig_a, sig_b = (run.tracks[track].facts.budget_signature for run in (a, b))
    if sig_a != sig_b:
        differ = differences(budget_terms(a, track), budget_terms(b, track))
        what = (
            f"in {'; '.join(differ)}"
            if differ
            else f"({sig_a} vs {sig_b}) though every recorded setting agrees (made by different "
            "benchsuite versions?)"
        )
        raise UsageError(
            f"track {track!r}: budget signatures differ {what}: the runs cannot be "
            "compared seed by seed"
        )
    for key in ("seeds", "salt", "preset"):
        ours, theirs = getattr(a.settings, key), getattr(b.settings, key)
        if ours != theirs:
            raise UsageError(
                f"the runs differ in {key} ({ours!r} vs {theirs!r}) and cannot be compared seed "
                "by seed"
            )


def compare_runs(a: StoredRun, b: StoredRun, *, mixers: list[str] | None = None) -> RunComparison:
    """Paired comparisons of run ``b`` against run ``a`` for every shared (track, mixer)."""
    shared_tracks = [t for t in a.tracks if t in b.tracks]
    if not shared_tracks:
        raise UsageError("the two runs have no track in common")
    rows, unchanged = [], []
    for track in shared_tracks:
        _check_comparable(a, b, track)
        facts, before, after = a.tracks[track].facts, a.tracks[track].cells, b.tracks[track].cells
        names = [m for m in before if m in after]
        for mixer in names if mixers is None else [m for m in names if m in mixers]:
            old, new = before[mixer], after[mixer]
            seeds = sorted(set(old.values) & set(new.values))  # paired: the seeds both have
            if len(seeds) < 2:
                continue
            if all(old.jobs[s] == new.jobs[s] for s in seeds):
                unchanged.append(f"{track}/{mixer}")
                continue
            learnt_nothing = max(sum(cell.not_learned[s] for s in seeds) for cell in (old, new))
            comparison = stats.compare_paired(
                [old.values[s] for s in seeds],
                [new.values[s] for s in seeds],
                higher_is_better=facts.higher_is_better,
                scale=facts.scale,
                margin_rel=a.settings.margin,
                caps=_caps(old, seeds),
                bounds=metric_range(facts.higher_is_better, facts.ideal),
                flags=stats.comparison_flags(
                    non_finite=0,
                    no_better_than_trivial=learnt_nothing,
                    n=len(seeds),
                    edge_of_grid=False,
                    baseline_edge_of_grid=False,
                    indecisive_selection=False,
                ),
            )
            rows.append(
                CompareRow(track=track, mixer=mixer, metric=facts.metric, comparison=comparison)
            )
    if not rows:
        same = f" (the same jobs in both: {', '.join(unchanged)})" if unchanged else ""
        raise UsageError(
            f"the two runs share no (track, mixer) that differs on two seeds or more{same}"
        )
    held = stats.holm_adjusted([row.comparison for row in rows])
    rows = [dataclasses.replace(r, comparison=c) for r, c in zip(rows, held, strict=True)]
    return RunComparison(a=a.settings, b=b.settings, rows=rows, unchanged=unchanged)


def _caps(cell: StoredCell, seeds: list[int]) -> list[float] | None:
    """The cell's caps on ``seeds`` (None when a seed has none: the relative margin alone)."""
    caps = [cell.caps[s] for s in seeds]
    return [float(c) for c in caps if c is not None] if None not in caps else None


def load_run(path: Path | str) -> StoredRun:
    """A finished run's per-seed test scores, read from its store (an output folder or the
    file)."""
    path = Path(path)
    if path.is_file() and path.suffix == ".json":
        raise UsageError(f"{path}: give the output folder or its benchsuite.sqlite store")
    path = path if path.is_file() else path / FILENAME
    store = open_store(path)
    try:
        plan = last_plan(store, path)
        results = store.results(plan.keys())
    finally:
        store.close()
    tracks = {}
    for track, facts in plan.tracks.items():
        cells = {}
        for mixer in plan.cells.get(track, {}):
            found = arm(plan, track, mixer, results)
            if found is not None:
                seeds = sorted(found.values)
                imputed = found.imputed(seeds, facts.higher_is_better)
                cells[mixer] = StoredCell(
                    values=dict(zip(seeds, imputed, strict=True)),
                    caps={s: found.caps[s] for s in seeds},
                    not_learned=found.not_learned,
                    jobs={seed: record.key for seed, record in found.records.items()},
                )
        tracks[track] = StoredTrack(facts=facts, cells=cells)
    return StoredRun(settings=plan.settings, tracks=tracks)
