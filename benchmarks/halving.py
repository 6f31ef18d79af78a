"""The regret of pruning each seed's grid (successive halving, docs/protocol.md "Pruning the
grid") against training the full grid, and what it saves.

    python benchmarks/halving.py [benchsuite run arguments ...]

Runs the same command twice on the working tree, one run after the other, each into a fresh
folder: first with every track's halvings turned off (``--budget halve_at=none``: the full grid
trains under the stopping rule alone), then with each track's own schedule. Printed per track:
the job-seconds of both and their ratio; over the (mixer, seed) jobs, how often the chosen config
differs; the test-metric regret of the pruned run's choice (its test metric minus the full
grid's, signed so that positive is worse, relative to the full grid's); and which verdicts
differ. Default arguments: :data:`SUBSET`.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from suite import job_seconds, timed_run, verdicts

SUBSET = [
    "--tracks",
    "vision,recall,selective_copying",
    "--mixers",
    "dense,attention,mamba,identity",
    "--seeds",
    "3",
]


def choices(store: Path, metrics: dict[str, str]) -> dict[tuple[str, str, int], tuple[int, float]]:
    """Per job (track, mixer, seed): the chosen config and its test metric (``metrics``: each
    track's metric name)."""
    found = {}
    with sqlite3.connect(store) as db:
        for (text,) in db.execute("SELECT record FROM results"):
            record = json.loads(text)
            job = record["job"]
            value = record["metrics"][f"test.{metrics[job['track']]}"]
            found[job["track"], job["mixer"], job["seed"]] = (record["chosen"], value)
    return found


def main() -> None:
    extra = sys.argv[1:] or SUBSET
    base = Path(tempfile.mkdtemp(prefix="benchsuite-halving-"))
    sides = {}
    for side, arguments in (("full", ["--budget", "halve_at=none"]), ("pruned", [])):
        out = base / side
        wall, _ = timed_run(out, [*extra, *arguments])
        report = json.loads((out / "report.json").read_text())
        tracks = report["tracks"]
        store = out / "benchsuite.sqlite"
        higher = {track: entry["higher_is_better"] for track, entry in tracks.items()}
        picked = choices(store, {track: entry["metric"] for track, entry in tracks.items()})
        sides[side] = (job_seconds(store), picked, verdicts(out), higher, wall)
        print(f"{side}: {wall:.1f} s wall, {sum(sides[side][0].values()):.0f} job-s")
    sec_a, chosen_a, cells_a, higher, wall_a = sides["full"]
    sec_b, chosen_b, cells_b, _, wall_b = sides["pruned"]
    ratio = sum(sec_b.values()) / sum(sec_a.values())
    print(f"pruned/full: wall {wall_b / wall_a:.3f}, job-seconds {ratio:.3f}")
    per_track: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for job, (config, metric) in chosen_a.items():
        if job not in chosen_b:
            continue
        other, pruned_metric = chosen_b[job]
        sign = -1.0 if higher[job[0]] else 1.0  # positive regret: the pruned choice is worse
        regret = sign * (pruned_metric - metric) / max(abs(metric), 1e-12)
        per_track[job[0]].append((config != other, regret))
    for track, rows in sorted(per_track.items()):
        seconds = [sum(v for (t, _), v in sec.items() if t == track) for sec in (sec_a, sec_b)]
        regrets = [regret for _, regret in rows]
        print(
            f"{track}: job-s {seconds[0]:.0f} -> {seconds[1]:.0f} ({seconds[1] / seconds[0]:.3f}); "
            f"chosen config differs on {sum(d for d, _ in rows)} of {len(rows)} jobs; "
            f"test-metric regret median {statistics.median(regrets):+.2%}, "
            f"mean {statistics.fmean(regrets):+.2%}, worst {max(regrets):+.2%}"
        )
    differ = [
        f"{t}/{m}: {cells_a[t, m][0]} -> {cells_b[t, m][0]}"
        for t, m in cells_a
        if (t, m) in cells_b and cells_a[t, m][0] != cells_b[t, m][0]
    ]
    print(f"verdicts that differ: {', '.join(differ) or 'none'}")


if __name__ == "__main__":
    main()
