"""Start-up: ``benchsuite --help`` and ``benchsuite list``, and whether they import torch or numpy.

python benchmarks/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {"--help": ["--help"], "list": ["list"], "list --json": ["list", "--json"]}
PROBE = (
    "import contextlib, io, sys, benchsuite.cli as c\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    c.main({args!r})\n"
    "print(' '.join(sorted({{'torch', 'numpy'}} & set(sys.modules))) or 'neither')\n"
)


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchsuite.cli", *args], capture_output=True)
    return time.perf_counter() - start


def heavy_imports(args: list[str]) -> str:
    """Which of torch and numpy the command imported ("neither" when none)."""
    code = PROBE.format(args=args)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median(timed_python() for _ in range(args.repeats))
    print(f"python -c pass: {bare:.3f} s")
    for label, argv in COMMANDS.items():
        seconds = statistics.median(timed(argv) for _ in range(args.repeats))
        print(f"benchsuite {label}: {seconds:.3f} s (imports: {heavy_imports(argv)})")


def timed_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
