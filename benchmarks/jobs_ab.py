"""Job-seconds of two code versions side by side: the same jobs, alternating A/B runs.

A is a git revision (extracted into a temporary folder with ``git archive``), B the working
tree. Each side is a persistent process training on one thread; the sample (one job per track
and mixer: the quick preset's seed 1) is run job by job, A then B or B then A in turn, so that
the load of a shared machine hits both alike. Each job's CPU seconds (insensitive to time
slicing by other processes) and wall seconds are summed per run; printed: every run's totals,
the median over runs of B's sum over A's, per track and in total (CPU and wall), and the largest
relative difference of any metric between A and B (0 when they are identical).

    python benchmarks/jobs_ab.py [--base d01a95f] [--repeats 3] [--tracks T,...] [--mixers M,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACKS = "sequence,dynamics,tabular,vision,recall,selective_copying"


def child() -> None:
    """Serve jobs named ``track/mixer/seed`` on stdin, one per line, on one thread: print each
    one's wall seconds, CPU seconds and metrics as a JSON line."""
    import torch

    from benchsuite.plan.jobs import cell_jobs, grid_of
    from benchsuite.plan.resolve import resolve
    from benchsuite.registry import load_registry
    from benchsuite.settings import RunSettings
    from benchsuite.train.job import run_job

    torch.set_num_threads(1)
    registry = load_registry()
    for line in sys.stdin:
        name, mixer_name, seed = line.split("/")
        asked = RunSettings(tracks=(name,), mixers=("dense", "identity"), seeds=int(seed) + 1)
        settings = resolve(asked, registry)
        track, mixer = registry.tracks[name], registry.mixers[mixer_name]
        job = cell_jobs(settings, track, mixer, grid_of(track, settings), "ab")[int(seed)]
        wall, cpu = time.perf_counter(), time.process_time()
        result = run_job(job, track, mixer)
        metrics = result["metrics"] if isinstance(result, dict) else result.metrics  # older: dicts
        metrics = metrics if isinstance(metrics, dict) else metrics.to_plain()  # older: flat
        seconds = [time.perf_counter() - wall, time.process_time() - cpu]
        print(json.dumps([*seconds, metrics]), flush=True)


class Child:
    """A persistent child process with ``code`` first on the path."""

    def __init__(self, code: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--child"],
            env=env,
            cwd=tempfile.gettempdir(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __call__(self, job: str) -> list:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(job + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait()


def extract(revision: str, folder: Path) -> Path:
    """The revision's files in ``folder``, its tracks and plugins reachable as in an install."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "benchsuite" / "tracks").symlink_to(folder / "tracks")
    (folder / "benchsuite" / "mixers").symlink_to(folder / "plugins")
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    if declared := project.get("entry-points", {}).get("benchsuite"):
        # a revision before the built-ins were registered in code found them as entry points:
        # its own metadata, first on PYTHONPATH, declares them (the install here no longer does)
        info = folder / f"benchsuite-{project['version']}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Name: benchsuite\nVersion: {project['version']}\n")
        lines = [f"{name} = {module}" for name, module in declared.items()]
        (info / "entry_points.txt").write_text("[benchsuite]\n" + "\n".join(lines) + "\n")
    return folder


def relative_difference(a: dict[str, float], b: dict[str, float]) -> float:
    return max(abs(b[k] - v) / max(abs(v), 1e-12) for k, v in a.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="d01a95f")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tracks", default=TRACKS)
    parser.add_argument("--mixers", default="dense,identity,attention")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child()
    jobs = [f"{t}/{m}/{args.seed}" for t in args.tracks.split(",") for m in args.mixers.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        children = {"A": Child(extract(args.base, Path(folder))), "B": Child(ROOT)}
        for child_ in children.values():
            child_(jobs[0])  # warm up: imports, data caches
        totals = {k: defaultdict(lambda: [0.0, 0.0]) for k in children}  # track -> wall, cpu
        ratios: dict[str, list[float]] = defaultdict(list)
        worst = 0.0
        for repeat in range(args.repeats):
            for number, job in enumerate(jobs):
                order = "AB" if (number + repeat) % 2 == 0 else "BA"
                done = {side: children[side](job) for side in order}
                worst = max(worst, relative_difference(done["A"][2], done["B"][2]))
                for side in children:
                    for part in (0, 1):
                        totals[side][job.split("/")[0]][part] += done[side][part]
                        totals[side]["total"][part] += done[side][part]
            line = []
            for track, (wall_a, cpu_a) in totals["A"].items():
                wall_b, cpu_b = totals["B"][track]
                ratios[f"{track} wall"].append(wall_b / wall_a)
                ratios[f"{track} cpu"].append(cpu_b / cpu_a)
                if track == "total":
                    line = [f"A {cpu_a:.1f} cpu-s, B {cpu_b:.1f} cpu-s, B/A {cpu_b / cpu_a:.3f}"]
            print(
                f"run {repeat + 1}: {line[0]}; largest relative metric difference so far "
                f"{worst:.2e}",
                flush=True,
            )
            totals = {k: defaultdict(lambda: [0.0, 0.0]) for k in children}
        for child_ in children.values():
            child_.close()
    for name, values in ratios.items():
        print(f"B/A job-seconds {name}: {statistics.median(values):.3f} (median of {len(values)})")


if __name__ == "__main__":
    main()
