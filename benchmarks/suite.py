"""Wall time of the default quick suite (every mixer x every track), then of its re-run.

    python benchmarks/suite.py [--out DIR] [extra benchsuite run arguments ...]

Prints the first run's wall time, the re-run's (nothing retrained, start-up included), and the
median MDE the quick preset achieved per track (how blind the design is).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
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
    for track, entry in report["tracks"].items():
        mdes = [c["comparison"]["mde_rel_pct"] for c in entry["comparisons"].values()]
        mdes = [m for m in mdes if m is not None]
        if mdes:
            print(f"{track}: median MDE {statistics.median(mdes):.1f}% of the baseline "
                  f"({entry['dataset']})")  # fmt: skip


if __name__ == "__main__":
    main()
