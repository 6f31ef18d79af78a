"""Seconds per training step of each track's real model across width and depth (issue 49, item 1).

    python benchmarks/model_size.py [--widths 16,32,64,128] [--depths 1,2,4]
        [--mixers dense,attention,gla,mamba] [--tracks sequence,...] [--out FILE]

For every track of the quick preset and every width x depth, the models a run builds for the
track variant ``TRACK[dim=W,depth=D]`` (its data, tokenizer, head and batch), each mixer sized as
declared (``match="none"``: the cost of the size itself, not of the equal-size rule's MLP), timed
by ``benchsuite list --costs``'s own counters (:func:`benchsuite.commands.costs.costs_table`:
median of 5 training steps after 2 of warm-up, one thread, as a run's jobs train). Printed per
track: ms per step per mixer at each size, and each size's cost over the track's current quick
size (the mean over the mixers of their step-time ratios). ``--out`` writes every row as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics

from benchsuite.commands.costs import costs_table
from benchsuite.registry import load_registry

QUANTITY = "seconds_per_step"


def measure(
    tracks: list[str], widths: list[int], depths: list[int], mixers: list[str]
) -> list[dict]:
    """One costs row per track x width x depth x mixer."""
    registry = load_registry()
    rows = []
    for track in tracks:
        for depth in depths:
            for width in widths:
                variant = f"{track}[depth={depth},dim={width}]"
                for row in costs_table(
                    registry, tracks=[variant], mixers=mixers, baseline=None, match="none"
                ):
                    rows.append({**row, "base": track, "width": width, "depth": depth})
    return rows


def show(rows: list[dict], current: dict[str, tuple[int, int]]) -> None:
    """Per track: ms per step per mixer at each size, and the size's cost over the current one."""
    for track in dict.fromkeys(r["base"] for r in rows):
        mine = [r for r in rows if r["base"] == track and r.get(QUANTITY)]
        mixers = list(dict.fromkeys(r["mixer"] for r in mine))
        at = {(r["mixer"], r["width"], r["depth"]): r[QUANTITY] for r in mine}
        now_w, now_d = current[track]
        print(f"\n{track} (quick preset now: width {now_w}, depth {now_d}); ms per step")
        print(f"{'width x depth':>14} " + " ".join(f"{m:>10}" for m in mixers) + "   vs now")
        for width, depth in sorted({(r["width"], r["depth"]) for r in mine}, key=lambda k: k[::-1]):
            cells = [at.get((m, width, depth)) for m in mixers]
            ratios = [
                c / at[(m, now_w, now_d)]
                for m, c in zip(mixers, cells, strict=True)
                if c and (m, now_w, now_d) in at
            ]
            shown = " ".join(f"{1e3 * c:>10.2f}" if c else f"{'-':>10}" for c in cells)
            ratio = f"{statistics.mean(ratios):.2f}x" if ratios else "-"
            print(f"{f'{width} x {depth}':>14} {shown}   {ratio:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", default="16,32,64,128")
    parser.add_argument("--depths", default="1,2,4")
    parser.add_argument("--mixers", default="dense,attention,gla,mamba")
    parser.add_argument("--tracks", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    registry = load_registry()
    tracks = (
        args.tracks.split(",")
        if args.tracks
        else sorted(name for name, track in registry.tracks.items() if "quick" in track.budgets)
    )
    current = {
        t: (registry.tracks[t].budget("quick").dim, registry.tracks[t].budget("quick").depth)
        for t in tracks
    }
    rows = measure(
        tracks,
        [int(w) for w in args.widths.split(",")],
        [int(d) for d in args.depths.split(",")],
        args.mixers.split(","),
    )
    show(rows, current)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(rows, handle, indent=1, default=str)


if __name__ == "__main__":
    main()
