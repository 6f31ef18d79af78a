"""Wall time of the default quick suite (every mixer x every track), then of its re-run.

    python benchmarks/suite.py [extra benchsuite run arguments ...]
    python benchmarks/suite.py --against COMMIT [extra benchsuite run arguments ...]

With ``--against``, a fixed subset (:data:`SUBSET`, unless run arguments are given) runs first
under COMMIT (extracted with ``git archive``, its tracks and plugins with it) and then under the
working tree, one after the other in this process, each into a fresh folder: printed, each side's
wall time, job-seconds and reference steps with its track lines and grid ends (below), the ratios
B/A (B: the working tree), and how many per-seed test metrics the two sides share exactly (rounding
may change between execution modes; the verdicts are compared cell by cell). Then, per track, the
RMS seed noise of both sides over the same mixers (those B's resolution compares: controls left
out) and its change, and every comparison whose mean effect changed sign where both sides call it
significant at the unadjusted level.

Prints the first run's wall time, the re-run's (nothing retrained, start-up included), and per
track: the median MDE at the verdicts' alpha (how blind the design is), the identity control's
verdict (a track that tests mixing must make it lose), the mixers it separates from the
baseline, its resolving power (how far the compared mixers' mean effects spread out in units of
seed noise, controls left out) with its MDEs on the same scale, the training seconds its jobs
took, and across the run the share of cells that chose
an end of their grid and the verdicts across tracks (all the default suite design claims: under
it every per-track verdict needs more seeds and its MDE is n/a). Then the cost in *reference
steps* (job-seconds divided by the seconds of
the fixed step of :mod:`benchsuite.train.reference`, measured at the start of the same run and
stored in report.json's environment): in total, per track and per mixer. Reference steps
compare across machines; seconds do not.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchsuite.results.resolving import noise

# the fixed subset of --against (issue 49): every default track; the baseline, attention, two
# gated recurrences and the no-mixing control; 6 seeds, enough to read each side's seed noise
RESAMPLES = 2000  # bootstrap resamples of the noise's change

SUBSET = [
    "--tracks",
    "sequence,dynamics,tabular,vision,recall,selective_copying",
    "--mixers",
    "dense,attention,mamba,gla,identity",
    "--seeds",
    "6",
]


def timed_run(out: Path, extra: list[str], code: Path | None = None) -> tuple[float, str]:
    """Run ``benchsuite run`` into ``out`` (under the code in ``code`` when given)."""
    env = {**os.environ, "PYTHONPATH": str(code)} if code else None
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchsuite.cli", "run", "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir() if code else None,
    )
    if done.returncode not in (0, 1):
        sys.exit(done.stderr)
    return time.perf_counter() - start, done.stdout


def job_seconds(store: Path) -> dict[tuple[str, str], float]:
    """The seconds every (track, mixer) cell's jobs took (one worker each), from the store."""
    seconds: dict[tuple[str, str], float] = defaultdict(float)
    with sqlite3.connect(store) as db:
        for track, record in db.execute("SELECT track, record FROM results"):
            stored = json.loads(record)
            seconds[track, stored["job"]["mixer"]] += stored["seconds"]
    return seconds


def by(seconds: dict[tuple[str, str], float], part: int) -> dict[str, float]:
    """Seconds summed per track (``part`` 0) or per mixer (1), largest first."""
    summed: dict[str, float] = defaultdict(float)
    for cell, value in seconds.items():
        summed[cell[part]] += value
    return dict(sorted(summed.items(), key=lambda item: -item[1]))


def cost_lines(seconds: dict[tuple[str, str], float], reference: float) -> list[str]:
    """Job-seconds and reference steps in total, per track and per mixer."""
    total = sum(seconds.values())

    def listed(parts: dict[str, float]) -> str:
        return ", ".join(f"{name} {value / reference / 1e3:.0f}k" for name, value in parts.items())

    return [
        f"reference step: {reference * 1e3:.3f} ms (dense quick encoder on sequence, one thread)",
        f"job-seconds: {total:.0f} s = {total / reference / 1e6:.3f} M reference steps",
        f"reference steps per track: {listed(by(seconds, 0))}",
        f"reference steps per mixer: {listed(by(seconds, 1))}",
    ]


def figure(value: float | None) -> str:
    """A figure of a track's resolution, 3 significant digits ("n/a" where it has none)."""
    return "n/a" if value is None else f"{value:.3g}"


def resolution_words(entry: dict) -> str:
    """A track's resolving power (spread / noise of the compared mixers' mean effects, controls
    left out) and its MDEs on the same scale; a report before version 10 has none."""
    found = entry.get("resolution")
    if not found:
        return "resolving power n/a"
    return (
        f"resolving power {figure(found['resolving_power'])} = spread "
        f"{figure(found['spread'])} / noise {figure(found['noise'])} over "
        f"{len(found['mixers'])} mixers; MDE {figure(found['mde_measured'])} measured (median), "
        f"{figure(found['mde_planned'])} planned ({found['scale']} scale)"
    )


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
            f"{resolution_words(entry)}; {seconds.get(track, 0):.0f} job-s; {entry['dataset']}"
        )
    return lines


def grid_ends_line(report: dict) -> str:
    """How many cells chose an end of their grid, and the alpha the MDEs are at."""
    chosen = report["selection"]
    alpha = 0.05 / max(report["design"]["comparisons"], 1)
    share = "n/a" if chosen["edge_share"] is None else f"{chosen['edge_share']:.0%}"
    return (
        f"grid ends: {chosen['edge_of_grid']} of {chosen['cells'] - chosen['at_chance']} cells "
        f"not at chance ({share}); {chosen['at_chance']} cells at chance; "
        f"MDE at alpha {alpha:.2g} (Holm's first step)"
    )


def suite_line(report: dict) -> str:
    """The across-tracks verdicts (what the default suite design claims): identity's, the
    mixers separated from the baseline, and the level and looks they were tested at."""
    across = report.get("across_tracks")
    if not across:
        return "across tracks: none (one track)"
    found = {m: row["verdict"] for m, row in across["mixers"].items()}
    separated = sorted(m for m, v in found.items() if v in ("better", "worse", "mixed"))
    return (
        f"across tracks ({report['design'].get('claims', 'per-track')} design, alpha "
        f"{across['alpha']:.3g}, looks at {across.get('looks', [])} seeds): identity "
        f"{found.get('identity', 'not run')}; separates {len(separated)}/{len(found)} "
        f"({', '.join(f'{m} {found[m]}' for m in separated)})"
    )


def verdicts(out: Path) -> dict[tuple[str, str], tuple[str, list[float]]]:
    """Each comparison's verdict and the mixer's per-seed test metrics, from report.json."""
    report = json.loads((out / "report.json").read_text())
    found = {}
    for track, entry in report["tracks"].items():
        for mixer, cell in entry["comparisons"].items():
            per_seed = entry["mixers"][mixer]["full"]["per_seed"]
            found[track, mixer] = (cell["comparison"]["verdict"], per_seed)
    return found


def effects(report: dict) -> dict[tuple[str, str], tuple[list[float], float, float]]:
    """Each comparison's per-seed d (on its own scale), unadjusted p and alpha, from report.json."""
    return {
        (track, mixer): (c["per_seed_improvements"], c["p_value"], c["alpha"])
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
        for c in [cell["comparison"]]
    }


def rms_noise(per_mixer: list[list[float]], seeds: Sequence[int] | None = None) -> float | None:
    """The RMS over mixers of the sd of d across seeds (``seeds``: the positions to read, with
    repeats when resampled; all of them by default), as a report's resolution reads it; None
    without a mixer or with one seed."""
    picked = [[d[i] for i in seeds] if seeds is not None else d for d in per_mixer]
    return noise([statistics.stdev(d) for d in picked if len(d) >= 2])


def change_interval(a: list[list[float]], b: list[list[float]]) -> tuple[float, float]:
    """A 95% percentile bootstrap interval of B's noise over A's, each side's seeds resampled on
    their own (the same seeds for every mixer of a side: they share its baseline's runs)."""
    rng = random.Random(0)
    ratios = []
    for _ in range(RESAMPLES):
        drawn = [rng.choices(range(len(side[0])), k=len(side[0])) for side in (a, b)]
        noise_a, noise_b = rms_noise(a, drawn[0]), rms_noise(b, drawn[1])
        if noise_a and noise_b is not None:
            ratios.append(noise_b / noise_a)
    ratios.sort()
    return ratios[int(0.025 * len(ratios))] - 1, ratios[int(0.975 * len(ratios)) - 1] - 1


def noise_lines(a: dict, b: dict, report_b: dict) -> list[str]:
    """Per track, the RMS of the seeds' sd of d over the mixers B's resolution compares, on
    both sides (a side's report before version 10 has no resolution: it is computed here, the
    same way), its change with a bootstrap interval, and every sign that flipped between two
    unadjusted significant effects."""
    lines = []
    for track, entry in report_b["tracks"].items():
        mixers = [m for m in (entry.get("resolution") or {}).get("mixers", []) if (track, m) in a]
        sides = [[side[track, m][0] for m in mixers] for side in (a, b)]
        rms = [rms_noise(side) for side in sides]
        change = "n/a"
        if None not in rms and rms[0]:
            low, high = change_interval(*sides)
            change = f"{rms[1] / rms[0] - 1:+.0%}, 95% bootstrap {low:+.0%} to {high:+.0%}"
        lines.append(
            f"  {track}: noise A {figure(rms[0])}, B {figure(rms[1])} ({change}) over "
            f"{', '.join(mixers) or 'no mixers'}"
        )
    flipped = [
        f"{track}/{mixer}"
        for (track, mixer), (d_b, p_b, alpha) in b.items()
        if (track, mixer) in a
        for d_a, p_a, _ in [a[track, mixer]]
        if p_a < alpha and p_b < alpha and statistics.fmean(d_a) * statistics.fmean(d_b) < 0
    ]
    return [
        *lines,
        f"  signs flipped where both sides are significant: {', '.join(flipped) or 'none'}",
    ]


def against(revision: str, extra: list[str]) -> None:
    """The subset under ``revision`` (A) and the working tree (B), one after the other."""
    from jobs_ab import extract  # the same extraction as the job-by-job A/B

    base = Path(tempfile.mkdtemp(prefix="benchsuite-against-"))
    (base / "code").mkdir()
    code = extract(revision, base / "code")
    figures, reports = {}, {}
    for side, where in (("A", code), ("B", None)):
        out = base / side
        wall, stdout = timed_run(out, extra or SUBSET, where)
        report = json.loads((out / "report.json").read_text())
        seconds = sum(job_seconds(out / "benchsuite.sqlite").values())
        reference = report["environment"]["reference_step_seconds"]
        figures[side] = (wall, seconds, seconds / reference, verdicts(out))
        reports[side] = report
        print(
            f"{side} ({revision if side == 'A' else 'working tree'}): {wall:.1f} s wall, "
            f"{seconds:.0f} job-s, {seconds / reference / 1e3:.0f}k reference steps; "
            f"{stdout.strip().splitlines()[-1]}"
        )
        per_track = by(job_seconds(out / "benchsuite.sqlite"), 0)
        print(
            "\n".join(
                f"  {line}"
                for line in [
                    *track_lines(report, per_track),
                    grid_ends_line(report),
                    suite_line(report),
                ]
            )
        )
    (wall_a, sec_a, ref_a, cells_a), (wall_b, sec_b, ref_b, cells_b) = figures["A"], figures["B"]
    print(
        f"B/A: wall {wall_b / wall_a:.3f}, job-seconds {sec_b / sec_a:.3f}, "
        f"reference steps {ref_b / ref_a:.3f}"
    )
    shared = [cell for cell in cells_a if cell in cells_b]
    same_metrics = sum(cells_a[c][1] == cells_b[c][1] for c in shared)
    differ = [
        f"{t}/{m}: {cells_a[t, m][0]} -> {cells_b[t, m][0]}"
        for t, m in shared
        if cells_a[t, m][0] != cells_b[t, m][0]
    ]
    print(
        f"cells: {len(shared)} on both sides, {same_metrics} with identical per-seed metrics; "
        f"verdicts that differ: {', '.join(differ) or 'none'}"
    )
    print("RMS seed noise of the effects (sd of d over seeds, controls left out):")
    print("\n".join(noise_lines(effects(reports["A"]), effects(reports["B"]), reports["B"])))


def main() -> None:
    extra = sys.argv[1:]
    if extra[:1] in (["-h"], ["--help"]):  # the rest goes to `benchsuite run`
        print(__doc__)
        return None
    if extra[:1] == ["--against"]:
        return against(extra[1], extra[2:])
    out = Path(tempfile.mkdtemp(prefix="benchsuite-suite-")) / "out"
    first, stdout = timed_run(out, extra)
    print(stdout.strip().splitlines()[-1])
    print(f"quick suite: {first:.1f} s")
    again, stdout = timed_run(out, extra)
    print(stdout.strip().splitlines()[-1])
    print(f"re-run (nothing retrained): {again:.2f} s")
    report = json.loads((out / "report.json").read_text())
    seconds = job_seconds(out / "benchsuite.sqlite")
    print("\n".join(track_lines(report, by(seconds, 0))))
    print(grid_ends_line(report))
    print(suite_line(report))
    print("\n".join(cost_lines(seconds, report["environment"]["reference_step_seconds"])))


if __name__ == "__main__":
    main()
