"""The figures a researcher reads first: learning curves (is the budget long enough, did it
diverge?), a forest plot of every comparison (an interval each, not a colour), and quality
against cost (is the win bought with parameters, FLOPs or step time?).

Each reads only the typed report (:class:`~benchsuite.results.schema.Analysis` and its parts)
and returns a matplotlib figure, or None when it has nothing to draw; each ``*_note`` says in
words what its figure leaves out, for the figure's title and the HTML caption.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchsuite.measures import COSTS
from benchsuite.output import numbers
from benchsuite.output.canvas import new_figure, titled
from benchsuite.output.numbers import finite
from benchsuite.output.palette import Style, verdict
from benchsuite.protocol.stats import Comparison
from benchsuite.results.cell_schema import LearningCurve, TrackResult
from benchsuite.results.schema import CostPoint, Tradeoff
from benchsuite.vocabulary import Scale

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

EDGE = "0.15"


def _curves(entry: TrackResult) -> dict[str, LearningCurve]:
    return {
        name: curve
        for name in entry.ordered()
        if (curve := entry.mixers[name].learning_curve) is not None and curve.median
    }


def curves_note(entry: TrackResult) -> str:
    """Which cells the learning-curve figure flags, and which seeds it leaves out."""
    found = _curves(entry)
    parts = []
    flagged = [name for name, curve in found.items() if curve.undertrained]
    if flagged:
        parts.append(f"undertrained (dashed): {', '.join(flagged)}")
    left = [
        f"{name} {c.left_out} of {c.left_out + len(c.seeds)}"
        for name, c in found.items()
        if c.left_out
    ]
    if left:
        parts.append(f"seeds left out for a non-finite loss (diverged): {', '.join(left)}")
    missing = [name for name in entry.mixers if name not in found]
    if missing:
        parts.append(f"no stored curve: {', '.join(missing)}")
    return "; ".join(parts)


def curves_figure(
    track: str, entry: TrackResult, styles: dict[str, Style], tail: float = 0.2
) -> Figure | None:
    """Per mixer, the median training-loss curve of the chosen configs over the seeds, with the
    25-75% band (log scale when the losses span more than a decade); dashed when the cell is
    undertrained; the shaded end is where the rule looks."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    found = _curves(entry)
    if not found:
        return None
    fig, (ax,) = new_figure(7.5, 4.2)
    lowest, highest, steps = math.inf, -math.inf, 1
    for name, curve in found.items():
        median = np.array([finite(v) for v in curve.median], dtype=float)
        low = np.array([finite(v) for v in curve.q25 or curve.median], dtype=float)
        high = np.array([finite(v) for v in curve.q75 or curve.median], dtype=float)
        n = len(median)
        steps = curve.steps or n
        x = (np.arange(n) + 0.5) / n * steps
        style = styles.get(name, Style("0.3", "o"))
        lowest, highest = min(lowest, float(np.nanmin(low))), max(highest, float(np.nanmax(high)))
        ax.fill_between(x, low, high, color=style.colour, alpha=0.15, lw=0)
        flagged = bool(curve.undertrained)
        ax.plot(
            x,
            median,
            color=style.colour,
            marker=style.marker,
            markevery=max(1, n // 8),
            ms=4,
            lw=1.3,
            ls="--" if flagged else "-",
            label=name + (" (undertrained)" if flagged else ""),
        )
    ax.axvspan((1 - tail) * steps, steps, color="0.9", zorder=0, lw=0)
    if lowest > 0 and highest > 10 * lowest:  # log scale for a fall over more than a decade
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: numbers.num(value, 2)))
    ax.set_xlim(0, steps)
    ax.set_xlabel(f"training step (shaded: the last {tail:.0%}, where the undertrained rule looks)")
    ax.set_ylabel("training loss (median; band 25–75% of seeds)")
    ax.set_title(
        titled(fig, f"{track}: learning curves of the chosen configs", curves_note(entry)),
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def margin_band(comparison: Comparison) -> tuple[float, float] | None:
    """The ±margin of a comparison as % of the baseline (lower, upper)."""
    margin = finite(comparison.margin)
    if margin is None:
        return None
    if comparison.scale == Scale.LOG:
        return 100 * (1 - math.exp(margin)), 100 * (1 - math.exp(-margin))
    base = finite(comparison.baseline_mean)
    return (-100 * margin / abs(base), 100 * margin / abs(base)) if base else None


def _marker(ax: Axes, x: float, y: float, name: str | None, size: float = 60) -> None:
    look = verdict(name)
    ax.scatter(
        [x],
        [y],
        marker=look.marker,
        s=size,
        zorder=4,
        edgecolor=EDGE,
        linewidth=1,
        facecolor="white" if look.hollow else look.colour,
    )


def forest_figure(track: str, entry: TrackResult) -> Figure | None:
    """Every comparison's improvement with its 95% CI, ordered; a line at 0, the ±margin band,
    the verdict as marker shape, colour and text."""
    from matplotlib.lines import Line2D

    rows = [
        (mixer, cell.comparison)
        for mixer, cell in entry.comparisons.items()
        if finite(cell.comparison.improvement_rel_pct) is not None
    ]
    if not rows:
        return None
    rows.sort(key=lambda row: row[1].improvement_rel_pct)
    fig, (ax,) = new_figure(7.5, 0.38 * len(rows) + 1.5)
    band = margin_band(rows[0][1])
    if band:
        ax.axvspan(*band, color="0.88", zorder=0, lw=0)
    ax.axvline(0, color="0.2", lw=1, zorder=1)
    for y, (_, c) in enumerate(rows):
        lo, hi = (finite(v) for v in c.ci95_rel_pct)
        if lo is not None and hi is not None:
            ax.hlines(y, lo, hi, color="0.3", lw=1.6, zorder=2)
        _marker(ax, c.improvement_rel_pct, y, c.verdict)
        look = verdict(c.verdict)
        text = f"{look.symbol} {look.short}  {numbers.pct(c.improvement_rel_pct)}"
        ax.annotate(text, (1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), labels=[mixer for mixer, _ in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    scale = "1 − geometric-mean ratio, %" if entry.facts.scale == Scale.LOG else "% of its mean"
    ax.set_xlabel(f"improvement over {entry.baseline} ({scale}; > 0 is better) with 95% CI")
    used = dict.fromkeys(c.verdict for _, c in rows)
    handles = [
        Line2D(
            [],
            [],
            ls="",
            marker=verdict(v).marker,
            markersize=7,
            markeredgecolor=EDGE,
            markerfacecolor="white" if verdict(v).hollow else verdict(v).colour,
            label=f"{verdict(v).symbol} {v}",
        )
        for v in used
    ]
    if band:
        from matplotlib.patches import Patch

        handles.append(
            Patch(color="0.88", label=f"±margin ({numbers.pct(band[0])}, {numbers.pct(band[1])})")
        )
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncols=3)
    ax.set_title(
        titled(fig, f"{track}: every comparison with its 95% CI", "(Holm-adjusted verdicts)"),
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    return fig


def _used_costs(points: dict[str, CostPoint], costs: list[str]) -> list[str]:
    return [k for k in costs if sum(finite(p.get(k)) is not None for p in points.values()) >= 2]


def cost_note(tradeoff: Tradeoff | None, costs: list[str]) -> str:
    """The Pareto front for each cost, in words; the costs not recorded."""
    if not tradeoff:
        return ""
    points = tradeoff.points
    used = _used_costs(points, costs)
    parts = [f"Pareto front by {k}: {', '.join(tradeoff.pareto.get(k) or ['–'])}" for k in used]
    missing = [k for k in costs if k not in used]
    if missing:
        parts.append(f"not drawn (recorded for fewer than 2 mixers): {', '.join(missing)}")
    return "; ".join(parts)


def _cost_ticks(ax: Axes, cost: str, relative: bool) -> None:
    """Tick labels written as the tables write costs (``10.1k``, ``1.2 ms``, ``1.5×``), at 1, 2
    and 5 times powers of ten when the axis spans less than two decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def write(value: float, _position: int) -> str:
        return f"{numbers.num(value, 2)}×" if relative else numbers.cost(cost, value)

    low, high = ax.get_xlim()
    if high < low * 100:
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(write))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=7)


def cost_figure(
    title: str,
    tradeoff: Tradeoff | None,
    costs: list[str],
    styles: dict[str, Style],
    ylabel: str,
    relative: bool = False,
) -> Figure | None:
    """One panel per cost: each mixer's score (with its CI) against that cost, log x; the
    Pareto front ringed and joined by a dashed line."""
    points = tradeoff.points if tradeoff else {}
    used = _used_costs(points, costs)
    if not used or tradeoff is None:
        return None
    fig, axes = new_figure(3.3 * len(used) + 1.6, 3.6, columns=len(used))
    for ax, cost in zip(axes, used, strict=True):
        front = tradeoff.pareto.get(cost) or []
        for name, point in points.items():
            x, y = finite(point.get(cost)), finite(point.score)
            if x is None or y is None:
                continue
            style = styles.get(name, Style("0.3", "o"))
            lo, hi = (finite(v) for v in (point.ci95 or (None, None)))
            if lo is not None and hi is not None:
                ax.vlines(x, lo, hi, color=style.colour, lw=1.2, alpha=0.8)
            ax.scatter(
                [x],
                [y],
                color=style.colour,
                marker=style.marker,
                s=36,
                zorder=3,
                edgecolor=EDGE,
                linewidth=0.5,
                label=name,
            )
            if name in front:
                ax.scatter([x], [y], s=160, facecolor="none", edgecolor="black", lw=1, zorder=4)
        line = [(points[n].get(cost), points[n].score) for n in front]
        if len(line) > 1:
            ax.plot(
                *zip(*line, strict=True),
                ls="--",
                color="0.35",
                lw=1,
                zorder=1,
                drawstyle="steps-post",
            )
        ax.axhline(0, color="0.5", lw=0.8)
        if relative:
            ax.axvline(1, color="0.5", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.margins(x=0.1)
        _cost_ticks(ax, cost, relative)
        label = COSTS[cost].label
        ax.set_xlabel(f"{label}, relative to the baseline" if relative else label, fontsize=8)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel(ylabel, fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside right upper")
    fig.suptitle(f"{title} (ring and dashed line: Pareto front)", fontsize=9)
    return fig
