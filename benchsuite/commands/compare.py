"""``benchsuite compare A B``: the same mixers on the same tracks in two runs, paired by seed.

Typical use: a mixer before and after a change. Run B is the "mixer", run A the "baseline" of each
paired comparison, so improvement > 0 means B is better. Each comparison is analysed as ``run``
analyses the track: on its scale (log-ratios or differences) with run A's equivalence margin, and
Holm over every row. Runs whose budget signatures or seeds
differ are refused, naming the settings that differ: their numbers do not mean the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchsuite.errors import UsageError
from benchsuite.results import stats
from benchsuite.results.analysis import analyse_store
from benchsuite.results.store import FILENAME


def _values(report: dict, track: str, mixer: str) -> list[float] | None:
    entry = report["tracks"][track]
    cell = entry["comparisons"].get(mixer)
    if cell is not None:
        return cell["mixer_values"]
    if mixer == entry["baseline"] and entry["comparisons"]:
        return next(iter(entry["comparisons"].values()))["baseline_values"]
    arm = entry["mixers"].get(mixer)
    return arm["full"]["per_seed"] if arm else None


def budget_terms(report: dict, track: str) -> dict[str, Any]:
    """The settings a track's budget signature covers, read back from a report (the terms of
    :func:`benchsuite.plan.jobs.budget_terms`)."""
    entry, settings = report["tracks"][track], report["settings"]
    return {
        "grid": entry.get("grid"),
        **entry.get("budget", {}),
        "preset": settings.get("preset"),
        "track_options": settings.get("track_options", {}).get(track, {}),
    }


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``name (A vs B)`` for every setting whose value differs between ``a`` and ``b``."""
    return [
        f"{name} ({a.get(name)!r} vs {b.get(name)!r})"
        for name in dict.fromkeys([*a, *b])
        if a.get(name) != b.get(name)
    ]


def _check_comparable(a: dict, b: dict, track: str) -> None:
    sig_a, sig_b = a["tracks"][track]["budget_signature"], b["tracks"][track]["budget_signature"]
    if sig_a != sig_b:
        differ = differences(budget_terms(a, track), budget_terms(b, track))
        what = (
            f"in {'; '.join(differ)}" if differ
            else f"({sig_a} vs {sig_b}) though every recorded setting agrees (made by different "
            "benchsuite versions?)"
        )  # fmt: skip
        raise UsageError(f"track {track!r}: budget signatures differ {what}: the runs cannot be "
                         "compared seed by seed")  # fmt: skip
    for key in ("seeds", "salt", "preset"):
        if a["settings"].get(key) != b["settings"].get(key):
            raise UsageError(
                f"the runs differ in {key} ({a['settings'].get(key)!r} vs "
                f"{b['settings'].get(key)!r}) and cannot be compared seed by seed"
            )


def compare_runs(a: dict, b: dict, *, mixers: list[str] | None = None) -> dict[str, Any]:
    """Paired comparisons of run ``b`` against run ``a`` for every shared (track, mixer)."""
    shared_tracks = [t for t in a["tracks"] if t in b["tracks"]]
    if not shared_tracks:
        raise UsageError("the two runs have no track in common")
    rows, family = [], []
    for track in shared_tracks:
        _check_comparable(a, b, track)
        entry_a, entry_b = a["tracks"][track], b["tracks"][track]
        names = [m for m in entry_a["mixers"] if m in entry_b["mixers"]]
        for mixer in names if mixers is None else [m for m in names if m in mixers]:
            before, after = _values(a, track, mixer), _values(b, track, mixer)
            if not before or not after or len(before) != len(after):
                continue
            comparison = stats.compare_paired(
                before, after, higher_is_better=entry_a["higher_is_better"],
                scale=entry_a.get("scale", "difference"),
                margin_rel=a["settings"].get("margin", 0.05),
            )  # fmt: skip
            family.append(comparison)
            rows.append({"track": track, "mixer": mixer, "metric": entry_a["metric"],
                         "comparison": comparison})  # fmt: skip
    if not rows:
        raise UsageError("the two runs share no (track, mixer) with the same seeds")
    stats.apply_holm(family)
    for row in rows:
        row["comparison"] = row["comparison"].to_dict()
    return {"a": a["settings"], "b": b["settings"], "rows": rows}


def load_run(path: Path | str) -> dict:
    """The report of a finished run, re-derived from its store (an output folder or the file)."""
    path = Path(path)
    if path.is_file():
        if path.suffix == ".json":
            raise UsageError(f"{path}: give the output folder or its benchsuite.sqlite store")
        return analyse_store(path)
    return analyse_store(path / FILENAME)
