"""Start-up: ``benchsuite --help`` and ``benchsuite list``, and whether they import torch.

python benchmarks/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {"--help": ["--help"], "list": ["list"], "list --json": ["list", "--json"]}
PROBE = "import sys, benchsuite.cli as c; c.main({args!r}); print('torch' in sys.modules)"


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchsuite.cli", *args], capture_output=True)
    return time.perf_counter() - start


def imports_torch(args: list[str]) -> bool:
    code = PROBE.format(args=args)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout.strip().endswith("True")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median(timed_python() for _ in range(args.repeats))
    print(f"python -c pass: {bare:.3f} s")
    for label, argv in COMMANDS.items():
        seconds = statistics.median(timed(argv) for _ in range(args.repeats))
        torch_loaded = imports_torch(argv) if label != "--help" else False
        print(f"benchsuite {label}: {seconds:.3f} s (imports torch: {torch_loaded})")


def timed_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
