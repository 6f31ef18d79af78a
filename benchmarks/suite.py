"""Wall time of the default quick suite (every mixer x every track), then of its re-run.

    python benchmarks/suite.py [extra benchsuite run arguments ...]

Prints the first run's wall time, the re-run's (nothing retrained, start-up included), and per
track: the median MDE at the verdicts' alpha (how blind the design is), the identity control's
verdict (a track that tests mixing must make it lose), the mixers it separates from the
baseline, the training seconds its jobs took, and across the run the share of cells that chose
an end of their grid.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def timed_run(out: Path, extra: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", "run", "--out", str(out), *extra],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        sys.exit(done.stderr)
    return time.perf_counter() - start, done.stdout


def job_seconds(store: Path) -> dict[str, float]:
    """The seconds every track's jobs took (one worker each), summed from the store."""
    seconds: dict[str, float] = defaultdict(float)
    with sqlite3.connect(store) as db:
        for track, record in db.execute("SELECT track, record FROM results"):
            seconds[track] += json.loads(record)["seconds"]
    return seconds


def track_lines(report: dict, seconds: dict[str, float]) -> list[str]:
    lines = []
    for track, entry in report["tracks"].items():
        comparisons = {m: c["comparison"] for m, c in entry["comparisons"].items()}
        mdes = [c["mde_rel_pct"] for c in comparisons.values() if c["mde_rel_pct"] is not None]
        separated = sorted(m for m, c in comparisons.items() if c["verdict"].startswith("signif"))
        identity = comparisons.get("identity", {}).get("verdict", "not run")
        median = f"{statistics.median(mdes):.1f}%" if mdes else "n/a"
        lines.append(
            f"{track}: median MDE {median} of the baseline; identity {identity}; separates "
            f"{len(separated)}/{len(comparisons)} ({', '.join(separated)}); "
            f"{seconds.get(track, 0):.0f} job-s; {entry['dataset']}"
        )
    return lines


def main() -> None:
    extra = sys.argv[1:]
    out = Path(tempfile.mkdtemp(prefix="benchsuite-suite-")) / "out"
    first, stdout = timed_run(out, extra)
    print(stdout.strip().splitlines()[-1])
    print(f"quick suite: {first:.1f} s")
    again, stdout = timed_run(out, extra)
    print(stdout.strip().splitlines()[-1])
    print(f"re-run (nothing retrained): {again:.2f} s")
    report = json.loads((out / "report.json").read_text())
    print("\n".join(track_lines(report, job_seconds(out / "benchsuite.sqlite"))))
    chosen = report["selection"]
    alpha = 0.05 / max(report["design"]["comparisons"], 1)
    print(
        f"grid ends: {chosen['edge_of_grid']} of {chosen['cells'] - chosen['at_chance']} cells "
        f"not at chance ({chosen['edge_share']:.0%}); {chosen['at_chance']} cells at chance; "
        f"MDE at alpha {alpha:.2g} (Holm's first step)"
    )


if __name__ == "__main__":
    main()
