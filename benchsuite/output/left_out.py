"""The suite verdicts' robustness, track by track (``-v`` in the terminal, and the page): per
mixer, its suite effect with each track left out and that test's Holm p; the tracks a verdict
rests on (docs/statistics.md: leaving one out changes the effect's sign or halves it) marked."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from benchsuite.output import captions
from benchsuite.output.numbers import num
from benchsuite.output.track_tables import new_table
from benchsuite.results.schema import AcrossMixer, AcrossTracks


def left_out_cell(row: AcrossMixer, track: str, digits: int = 2) -> str:
    """``-0.046 (p 0.007)``: the effect without ``track`` and its Holm p, ``rests on`` where
    the verdict rests on it; ``–`` where the mixer has no such test."""
    held = row.without_track.get(track)
    if held is None:
        return "–"
    mark = ", rests on it" if track in row.rests_on else ""
    return f"{num(held.effect, digits)} (p {num(held.p_holm, digits)}{mark})"


def needs(row: AcrossMixer) -> str:
    """What the row's robustness needs: the seeds per track, where it says."""
    return f"{row.robustness_seeds} seeds" if row.robustness_seeds else "–"


def left_out_header(across: AcrossTracks) -> list[str]:
    """The columns of the table: mixer, verdict, each track, what robustness needs."""
    return ["mixer", "verdict", *across.tracks, "robustness needs"]


def left_out_rows(across: AcrossTracks | None, digits: int = 2) -> list[tuple[str, ...]]:
    """Per mixer of two tracks or more, largest suite effect first: its verdict, its effect
    without each track (Holm p), the seeds its robustness needs (as text)."""
    if across is None:
        return []
    mixers = [m for m, row in across.mixers.items() if len(row.without_track) > 1]
    return [
        (
            mixer,
            row.shown_verdict(),
            *(left_out_cell(row, track, digits) for track in across.tracks),
            needs(row),
        )
        for mixer in sorted(mixers, key=lambda m: -across.mixers[m].suite_effect)
        for row in [across.mixers[mixer]]
    ]


def left_out_table(across: AcrossTracks | None) -> Table | None:
    """Per mixer of two tracks or more: its verdict, then its suite effect without each track
    (Holm p), and the seeds its robustness needs."""
    rows = left_out_rows(across)
    if across is None or not rows:
        return None
    table = new_table(
        "[bold]without each track[/]: the suite effect with one track left out",
        captions.LEFT_OUT.format(alpha=num(across.alpha, 3), mixers=across.holm_family),
        [escape(column) for column in left_out_header(across)],
    )
    for row in rows:
        table.add_row(*map(escape, row))
    return table
