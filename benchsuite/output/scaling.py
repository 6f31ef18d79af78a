"""What ``benchsuite scale`` shows: tables relative to the baseline, log-log plots, ``scaling.json``
and its own page ``scaling.html``, "Cost against sequence length" (report.html links it; neither
command renders the other's page).

Everything here reads the scaling record of :func:`benchsuite.commands.scale.scale` (or the
``OUT/scaling.json`` it was written to); docs/performance.md explains how to read it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchsuite.measures import COSTS, FIGURED, Cost, Unit, unit_of
from benchsuite.output import numbers
from benchsuite.output.canvas import Plot, new_figure
from benchsuite.output.canvas import render as render_plot
from benchsuite.output.html import render
from benchsuite.output.numbers import finite
from benchsuite.output.palette import mixer_styles
from benchsuite.vocabulary import PointStatus

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import Console
    from rich.table import Table

FILENAME = "scaling.json"
PAGE = "scaling.html"


def quantities(result: dict[str, Any]) -> dict[str, Cost]:
    """The costs drawn, one per figure (:data:`benchsuite.measures.FIGURED`; of the memory
    costs, the one the record's device measures, ``result["memory"]``): the plot of cost
    ``name`` is ``plots/scaling-<figure>.png``."""
    drawn: dict[str, str] = {}
    for name in FIGURED:
        figure = COSTS[name].figure
        if figure not in drawn or name == result.get("memory"):
            drawn[figure] = name
    return {name: COSTS[name] for name in drawn.values()}


UNIT_WORDS = {Unit.SECONDS: "s", Unit.BYTES: "bytes", Unit.FLOPS: "FLOPs"}
STATUS_TEXT = {
    PointStatus.OVER_BUDGET: "over budget",
    PointStatus.UNSUPPORTED: "n/a",
    PointStatus.FAILED: "failed",
}


def write_scaling(result: dict[str, Any], out_dir: Path | str) -> list[Path]:
    """Write ``OUT/scaling.json``, ``OUT/plots/scaling-*.png`` and ``OUT/scaling.html`` (beside
    the JSON); returns the paths of the JSON and the figures."""
    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    path = out / FILENAME
    path.write_text(json.dumps(result, indent=2) + "\n")
    plots = scaling_plots(result)
    write_scaling_page(result, out, plots)
    written = [path]
    for plot in plots:
        written.append(out / "plots" / f"{plot.name}.png")
        written[-1].write_bytes(plot.png)
    return written


def _amount(value: float, key: str, unit: bool = True) -> str:
    """An absolute value, written as everywhere else (:mod:`benchsuite.output.numbers`):
    ``12.3 ms``, ``4.59MB``, ``3.2G FLOPs`` (``3.2G`` without ``unit``)."""
    written = numbers.cost(key, value)
    return f"{written} FLOPs" if unit and unit_of(key) == Unit.FLOPS else written


def _lengths(result: dict[str, Any]) -> list[int]:
    return list(result["settings"]["tokens"])


def relative_rows(result: dict[str, Any], key: str) -> list[tuple[str, list[str], str]]:
    """Per mixer: its name, one plain-text cell per length and its exponent.

    The baseline's cells are absolute values; another mixer's are its value over the baseline's
    at that length (``0.52x``), or absolute where the baseline has none; a point that was not
    measured shows its status (``over budget``, ``n/a``: unsupported, ``failed``).
    """
    baseline = result["baseline"]
    base = {p["tokens"]: p for p in result["mixers"].get(baseline, {}).get("points", [])}
    rows = []
    for name, entry in result["mixers"].items():
        points = {p["tokens"]: p for p in entry["points"]}
        cells = []
        for tokens in _lengths(result):
            point = points.get(tokens)
            if point is None:
                cells.append("")
            elif point["status"] != PointStatus.OK:
                cells.append(STATUS_TEXT.get(point["status"], point["status"]))
            else:
                value, same = point[key], base.get(tokens) or {}
                reference = finite(same.get(key)) if same.get("status") == PointStatus.OK else None
                if name == baseline or not reference:
                    cells.append(_amount(value, key, unit=False))
                else:
                    cells.append(f"{value / reference:.3g}x")
        slope = finite(entry["exponents"].get(key))
        rows.append((name, cells, "–" if slope is None else f"{slope:.2f}"))
    return rows


def notes(result: dict[str, Any]) -> list[str]:
    """One line per point that was not measured, with its reason."""
    return [
        f"{name} at {point['tokens']} tokens: {point['status']}: {point.get('reason', '')}"
        for name, entry in result["mixers"].items()
        for point in entry["points"]
        if point["status"] != PointStatus.OK
    ]


def setup_line(result: dict[str, Any]) -> str:
    """What was measured, on what, how (one line)."""
    s = result["settings"]
    return (
        f"{result['input']}; width {s['width']}, depth {s['depth']}, batch {s['batch']}, "
        f"{s['device']}, {s['threads']} thread(s); median step after {s['warmup']} warm-up "
        f"step(s), over at least {s['steps']} steps; limits {s['max_seconds']:g} s per step, "
        f"{s['max_memory'] / 2**30:.3g} GiB"
    )


def _caption(result: dict[str, Any]) -> str:
    return (
        f"cells: the baseline ({result['baseline']}) as measured, the others as x the baseline at "
        "the same length (as measured where it has no value); exponent: log-log slope over the "
        "upper half of the measured ladder"
    )


def scaling_tables(result: dict[str, Any]) -> list[Table]:
    """One rich table per quantity: lengths as columns, values relative to the baseline."""
    from rich.markup import escape as escape_markup
    from rich.table import Table

    tables = []
    for key, quantity in quantities(result).items():
        table = Table(
            title=f"[bold]{quantity.label}[/] against sequence length",
            caption=_caption(result),
        )
        table.add_column("mixer")
        for tokens in _lengths(result):
            table.add_column(str(tokens), justify="right")
        table.add_column("exponent", justify="right")
        for name, cells, slope in relative_rows(result, key):
            failed = (PointStatus.OVER_BUDGET, PointStatus.FAILED)
            shown = [f"[red]{c}[/]" if c in failed else c for c in cells]
            label = escape_markup(name)
            table.add_row(
                f"[bold]{label}[/]" if name == result["baseline"] else label, *shown, slope
            )
        tables.append(table)
    return tables


def print_scaling(result: dict[str, Any], console: Console) -> None:
    """The tables of a scaling record, then why each missing point is missing."""
    from rich.markup import escape as escape_markup

    console.print(escape_markup(setup_line(result)), style="dim")
    for table in scaling_tables(result):
        console.print(table)
    for line in notes(result):
        console.print(f"[yellow]{escape_markup(line)}[/]")


def point_line(mixer: str, point: dict[str, Any]) -> str:
    """A one-line progress report of a finished point (plain text)."""
    head = f"{mixer} at {point['tokens']} tokens:"
    if point["status"] != PointStatus.OK:
        return f"{head} {point['status']} ({point.get('reason', '')})"
    return f"{head} " + ", ".join(
        f"{COSTS[name].label} {_amount(point[name], name)}" for name in FIGURED if name in point
    )


def scaling_plots(result: dict[str, Any]) -> list[Plot]:
    """One log-log figure per quantity (``scaling-time``, ``-memory``, ``-flops``): a line with
    markers per mixer, its exponent in the legend, and dashed guides of slope 1 and 2."""
    plots = []
    lengths = _lengths(result)
    styles = mixer_styles(list(result["mixers"]))
    for key, quantity in quantities(result).items():
        fig, (ax,) = new_figure(6.0, 4.0)
        first = None
        for name, entry in result["mixers"].items():
            done = [
                (p["tokens"], p[key])
                for p in entry["points"]
                if p["status"] == PointStatus.OK and (finite(p.get(key)) or 0) > 0
            ]
            if not done:
                continue
            first = first or done[0]
            slope = finite(entry["exponents"].get(key))
            extras = [] if slope is None else [f"exponent {slope:.2f}"]
            extras += [
                f"over budget at {p['tokens']}"
                for p in entry["points"]
                if p["status"] == PointStatus.OVER_BUDGET
            ]
            label = f"{name} ({'; '.join(extras)})" if extras else name
            style = styles[name]
            ax.plot(
                *zip(*done, strict=True), color=style.colour, marker=style.marker, ms=4, label=label
            )
        if first is None:
            continue
        for power, style in ((1, "--"), (2, ":")):
            guide = [first[1] * (t / first[0]) ** power for t in lengths if t >= first[0]]
            ax.plot(
                [t for t in lengths if t >= first[0]],
                guide,
                style,
                color="0.6",
                lw=1,
                label=f"slope {power} (∝ tokens{'²' if power == 2 else ''})",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(lengths, [str(t) for t in lengths], fontsize=7)
        ax.set_xlabel("tokens")
        label = quantity.label
        ax.set_ylabel(f"{label} ({UNIT_WORDS.get(quantity.unit, quantity.unit)})")
        ax.set_title(f"{label} against sequence length (log-log)", fontsize=10)
        ax.legend(fontsize=7)
        plots.append(
            render_plot(
                f"scaling-{quantity.figure}", "scaling", quantity.figure, f"scaling: {label}", fig
            )
        )
    return plots


def write_scaling_page(
    result: dict[str, Any], out_dir: Path | str, plots: Sequence[Plot] | None = None
) -> Path:
    """Write ``OUT/scaling.html``, "Cost against sequence length", from a scaling record
    (``plots``: the figures when already drawn by :func:`scaling_plots`); the run's
    report.html links it. Returns the page."""
    by_stem = {p.kind: p for p in (scaling_plots(result) if plots is None else plots)}
    drawn = [
        {
            "label": quantity.label,
            "rows": relative_rows(result, key),
            "plot": by_stem.get(quantity.figure),
        }
        for key, quantity in quantities(result).items()
    ]
    path = Path(out_dir) / PAGE
    path.write_text(
        render(
            "scaling.html.j2",
            date=str(result["environment"]["date"]),
            setup=setup_line(result),
            caption=_caption(result),
            lengths=[str(t) for t in _lengths(result)],
            quantities=drawn,
            missing=notes(result),
        ),
        encoding="utf-8",
    )
    return path
