"""A fixed subset on a GPU and on the CPU: both timings, and whether the verdicts agree.

    python benchmarks/gpu_check.py [--device cuda] [extra benchsuite run arguments ...]

Runs :data:`SUBSET` twice, each into a fresh folder: with ``--device cuda`` (the seeds of a cell
trained as one stack, bf16 autocast where a track allows it) and on the CPU (this machine's
default execution). Rounding differs between the two (another device, another summation order),
so per-seed metrics are not compared bit for bit; the verdicts are, cell by cell, and each
side's wall time and job-seconds are printed. Sized to take under 5 minutes in all on the
2-core reference machine plus a GPU. Exits 2 without a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBSET = [
    "--tracks",
    "sequence,dynamics,tabular",
    "--mixers",
    "dense,attention,identity",
    "--seeds",
    "8",
]


def run(out: Path, device: str, extra: list[str]) -> tuple[float, dict]:
    """Wall seconds and report.json of the subset on ``device``."""
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchsuite.cli",
            "run",
            "--out",
            str(out),
            "--device",
            device,
            *SUBSET,
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        sys.exit(done.stderr)
    return time.perf_counter() - start, json.loads((out / "report.json").read_text())


def verdicts(report: dict) -> dict[str, str]:
    return {
        f"{track}/{mixer}": cell["comparison"]["verdict"]
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    args, extra = parser.parse_known_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: nothing to compare", file=sys.stderr)
        sys.exit(2)
    base = Path(tempfile.mkdtemp(prefix="benchsuite-gpu-check-"))
    gpu_seconds, gpu = run(base / "gpu", args.device, extra)
    cpu_seconds, cpu = run(base / "cpu", "cpu", extra)
    print(
        f"{torch.cuda.get_device_name()}: {gpu_seconds:.1f} s wall; "
        f"CPU ({cpu['environment']['cpus']} cores): {cpu_seconds:.1f} s wall; "
        f"CPU / GPU {cpu_seconds / gpu_seconds:.2f}"
    )
    on_gpu, on_cpu = verdicts(gpu), verdicts(cpu)
    differ = [
        f"{cell}: gpu {on_gpu[cell]}, cpu {on_cpu.get(cell)}"
        for cell in on_gpu
        if on_gpu[cell] != on_cpu.get(cell)
    ]
    print(
        f"verdicts: {len(on_gpu) - len(differ)} of {len(on_gpu)} agree"
        + "".join(f"\n  differs: {line}" for line in differ)
    )


if __name__ == "__main__":
    main()
