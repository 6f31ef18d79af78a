"""Figures of a run's report, drawn with matplotlib (Agg, no pyplot state) as PNG bytes.

Every figure reads only the typed report that :func:`benchsuite.results.analysis.analyse` returns
(or :meth:`~benchsuite.results.schema.Analysis.from_dict` reads from ``report.json``). A figure
whose data is missing (a track without comparisons, a run without across-track figures) is not
drawn; a figure that leaves tracks or seeds out says so in its title and its :class:`Plot`'s
``note``. Mixers keep one colour and marker across every figure (:mod:`.palette`); numbers are
written by :mod:`.numbers`, as in the tables.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from benchsuite import measures
from benchsuite.output import numbers
from benchsuite.output.canvas import Plot, new_figure, render, slug, titled
from benchsuite.output.diagnostics import (
    cost_figure,
    cost_note,
    curves_figure,
    curves_note,
    forest_figure,
)
from benchsuite.output.numbers import finite
from benchsuite.output.palette import (
    BETTER,
    EQUAL,
    MISSING_COLOUR,
    VERDICT_COLOURS,
    WORSE,
    Style,
    mixer_styles,
    verdict,
)
from benchsuite.results.cell_schema import TrackResult
from benchsuite.results.schema import AcrossTracks, Analysis
from benchsuite.vocabulary import Split, Verdict

SCALING_PREFIX = "scaling-"  # benchsuite scale's figures (output/scaling.py)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _metric_label(entry: TrackResult, split: Split) -> str:
    return f"{measures.key(split, entry.facts.metric)} ({entry.facts.direction})"


PANEL_MIXERS = 8  # the per-seed figure puts at most this many mixers in one panel


def seeds_figure(track: str, entry: TrackResult) -> Figure | None:
    """Per-seed test metric of every mixer, each beside the baseline's paired seeds; past
    ``PANEL_MIXERS`` mixers, in panels of as many each, one above the other on one y scale.

    For a mixer at x = j the baseline's seeds sit at j - 0.2 and the mixer's at j + 0.2; a line
    joins the two runs of the same seed (solid blue: the mixer is better on that seed, dashed red:
    worse, dotted grey: equal, as when both diverged and were imputed with the same cap).
    """
    names = entry.ordered()
    if not names:
        return None
    panels = math.ceil(len(names) / PANEL_MIXERS)
    per = math.ceil(len(names) / panels)
    groups = [names[i : i + per] for i in range(0, len(names), per)]
    fig, axes = new_figure(max(4.5, 1.3 * per + 1.5), 3.8 * len(groups), rows=len(groups))
    omitted = sum(_seed_panel(ax, entry, group) for ax, group in zip(axes, groups, strict=True))
    for ax in axes:
        ax.set_ylabel(_metric_label(entry, Split.TEST))
        ax.grid(axis="y", alpha=0.3)
    note = f"; {omitted} non-finite omitted" if omitted else ""
    axes[0].set_title(
        titled(
            fig,
            f"{track}: per-seed test metric",
            f"(hollow: baseline {entry.baseline}, "
            f"paired by seed; solid blue: mixer better, dashed red: worse{note})",
        ),
        fontsize=9,
    )
    return fig


def _seed_panel(ax: Axes, entry: TrackResult, names: list[str]) -> int:
    """One panel of :func:`seeds_figure`: ``names`` at x = 0, 1, …; returns the non-finite
    values it omitted."""
    from matplotlib.collections import LineCollection

    higher = bool(entry.facts.higher_is_better)
    omitted = 0
    for x, name in enumerate(names):
        cell = entry.comparisons.get(name)
        if cell is None:  # the baseline itself, or a track without comparisons
            values = [finite(v) for v in entry.mixers[name].full.per_seed]
            omitted += values.count(None)
            shown = [v for v in values if v is not None]
            ax.scatter([x] * len(shown), shown, color="0.35", zorder=3, s=22)
            if shown:
                ax.hlines(sum(shown) / len(shown), x - 0.25, x + 0.25, color="0.2", lw=2)
            continue
        pairs = zip(cell.baseline_values, cell.mixer_values, strict=False)
        segments, colours, styles = [], [], []
        for base_raw, mix_raw in pairs:
            base, mix = finite(base_raw), finite(mix_raw)
            if base is None or mix is None:
                omitted += 1
                continue
            better = mix > base if higher else mix < base
            colour, style = (
                (EQUAL, ":") if mix == base else (BETTER, "-") if better else (WORSE, "--")
            )
            colours.append(colour)
            styles.append(style)
            segments.append([(x - 0.2, base), (x + 0.2, mix)])
        if segments:  # one artist per kind and mixer: drawing thousands of points stays fast
            ax.add_collection(
                LineCollection(
                    segments, colors=colours, linestyles=styles, lw=1, alpha=0.8, zorder=2
                )
            )
            bases, mixes = [s[0][1] for s in segments], [s[1][1] for s in segments]
            ax.scatter(
                [x - 0.2] * len(bases), bases, facecolor="white", edgecolor="0.35", zorder=3, s=22
            )
            ax.scatter([x + 0.2] * len(mixes), mixes, color="0.15", zorder=3, s=22)
    ax.set_xticks(range(len(names)), labels=names, rotation=20 if len(names) > 5 else 0)
    ax.set_xlim(-0.6, len(names) - 0.4)
    return omitted


def sweep_figure(track: str, entry: TrackResult, styles: dict[str, Style]) -> Figure | None:
    """Validation metric of every sweep config per mixer: mean line, seed dots, chosen ringed."""
    names = entry.ordered()
    sweeps = {n: entry.mixers[n].sweep for n in names}
    if not any(sweeps.values()):
        return None
    grid = max((len(rows) for rows in sweeps.values()), default=0)
    fig, (ax,) = new_figure(max(4.5, 1.4 * grid + 2.5), 3.8)
    width = 0.5 / max(len(names), 1)
    for i, name in enumerate(names):
        offset = (i - (len(names) - 1) / 2) * width
        style = styles.get(name, Style("0.3", "o"))
        colour = style.colour
        xs, means = [], []
        for x, row in enumerate(sweeps[name]):
            values = [v for v in map(finite, row.val) if v is not None]
            ax.scatter([x + offset] * len(values), values, color=colour, s=10, alpha=0.5)
            mean = finite(row.mean)
            if mean is not None:
                xs.append(x + offset)
                means.append(mean)
        ax.plot(xs, means, color=colour, marker=style.marker, ms=4, lw=1.2, label=name)
        best = entry.mixers[name].best_index
        if best < len(sweeps[name]):
            mean = finite(sweeps[name][best].mean)
            if mean is not None:
                ax.scatter(
                    [best + offset],
                    [mean],
                    s=140,
                    facecolor="none",
                    edgecolor=colour,
                    lw=1.5,
                    zorder=4,
                )
    configs = entry.facts.grid or next(
        ([row.cfg for row in rows] for rows in sweeps.values() if len(rows) == grid), []
    )
    ax.set_xticks(range(grid), labels=[numbers.config(c, "\n") for c in configs[:grid]], fontsize=7)
    ax.set_ylabel(_metric_label(entry, Split.VAL))
    ax.set_title(
        titled(fig, f"{track}: sweep", "(mean over the seeds; ring = the config most seeds chose)"),
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", alpha=0.3)
    return fig


def heatmap_order(report: Analysis) -> tuple[list[str], list[str]]:
    """(tracks with a comparison, mixers): the mixers in the headline's order (largest suite
    effect first), then any other."""
    from benchsuite.output.headline import headline

    tracks = [t for t, e in report.tracks.items() if e.comparisons]
    mixers = [line.mixer for line in headline(report)]
    return tracks, mixers


def heatmap_figure(report: Analysis) -> Figure | None:
    """Relative improvement over the baseline (mixer x track), each cell coloured by its verdict
    and headed by the verdict's symbol."""
    from matplotlib.patches import Patch, Rectangle

    tracks, mixers = heatmap_order(report)
    if not mixers:
        return None
    fig, (ax,) = new_figure(max(4.5, 1.5 * len(tracks) + 3.5), 0.45 * len(mixers) + 1.8)
    for row, mixer in enumerate(mixers):
        for col, track in enumerate(tracks):
            cell = report.tracks[track].comparisons.get(mixer)
            name = cell.comparison.verdict if cell else None
            colour = VERDICT_COLOURS.get(name or "", MISSING_COLOUR)
            ax.add_patch(Rectangle((col, row), 1, 1, facecolor=colour, edgecolor="white", lw=2))
            value = finite(cell.comparison.improvement_rel_pct) if cell else None
            symbol = verdict(name).symbol
            text = numbers.MISSING if value is None else f"{symbol} {numbers.pct(value)}"
            dark = name in (Verdict.SIGNIFICANT_WIN, Verdict.SIGNIFICANT_LOSS)
            ax.text(
                col + 0.5,
                row + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
    ax.set_xlim(0, len(tracks))
    ax.set_ylim(len(mixers), 0)
    ax.set_xticks([c + 0.5 for c in range(len(tracks))], labels=tracks)
    ax.set_yticks([r + 0.5 for r in range(len(mixers))], labels=mixers)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    used = {c.comparison.verdict for t in tracks for c in report.tracks[t].comparisons.values()}
    handles = [
        Patch(color=c, label=f"{verdict(v).symbol} {v.replace('_', ' ')}")
        for v, c in VERDICT_COLOURS.items()
        if v in used
    ]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(
        f"improvement over {report.baseline or 'the baseline'} (%, > 0 is better), "
        "coloured by verdict",
        fontsize=9,
    )
    return fig


def across_note(across: AcrossTracks | None, kind: str) -> str:
    """What an across-track figure leaves out: tracks left out of the aggregation (and why),
    mixers scored on fewer tracks (``iqm``) or tracks the ranks skip (``ranks``)."""
    if across is None:
        return ""
    parts = []
    left = across.tracks_left_out
    if left:
        parts.append("tracks left out: " + "; ".join(f"{t} ({why})" for t, why in left.items()))
    if kind == "iqm":
        total = len(across.tracks)
        fewer = [
            f"{name} ({len(row.tracks)} of {total})"
            for name, row in across.mixers.items()
            if len(row.tracks) < total
        ]
        if fewer:
            parts.append(f"scored on fewer tracks: {', '.join(fewer)}")
    if kind == "ranks":
        dropped = across.ranks.tracks_dropped
        if dropped:
            parts.append(
                "not ranked (ranks use only the tracks every mixer ran on): "
                + "; ".join(f"{t} ({why})" for t, why in dropped.items())
            )
    return "; ".join(parts)


def iqm_figure(across: AcrossTracks | None, styles: dict[str, Style]) -> Figure | None:
    """IQM of normalised scores (0 = trivial predictor, 1 = ideal) with its 95% CI, per mixer;
    the dashed line is the baseline's IQM."""
    if across is None:
        return None
    rows = [(name, row) for name, row in across.mixers.items() if finite(row.iqm) is not None]
    if not rows:
        return None
    rows.sort(key=lambda item: item[1].iqm)
    fig, (ax,) = new_figure(6.5, 0.4 * len(rows) + 1.8)
    for y, (name, row) in enumerate(rows):
        lo, hi = (finite(v) for v in row.iqm_ci95 or (None, None))
        style = styles.get(name, Style("0.3", "o"))
        if lo is not None and hi is not None:
            ax.plot([lo, hi], [y, y], color=style.colour, lw=2.5, solid_capstyle="butt")
        ax.scatter(
            [row.iqm],
            [y],
            color=style.colour,
            marker=style.marker,
            edgecolor="0.15",
            zorder=3,
            s=30,
        )
    base = finite(across.baseline_iqm)
    if base is not None:
        ax.axvline(base, color="0.4", ls="--", lw=1, label=f"baseline {across.baseline}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(range(len(rows)), labels=[name for name, _ in rows])
    ax.set_xlabel("IQM of normalised score (0 = trivial predictor, 1 = ideal; higher is better)")
    ax.set_title(
        titled(
            fig, "across tracks: IQM with stratified bootstrap 95% CI", across_note(across, "iqm")
        ),
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    return fig


def _cliques(ranked: list[tuple[str, float]], cd: float) -> list[tuple[float, float]]:
    """Maximal runs of mixers whose average ranks differ by less than the critical difference."""
    spans: list[tuple[float, float]] = []
    for i in range(len(ranked)):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][1] - ranked[i][1] < cd:
            j += 1
        if j > i and not any(lo <= ranked[i][1] and ranked[j][1] <= hi for lo, hi in spans):
            spans.append((ranked[i][1], ranked[j][1]))
    return spans


def rank_figure(across: AcrossTracks | None) -> Figure | None:
    """Critical-difference diagram: average ranks (1 = best) and, when computed, Nemenyi's CD."""
    if across is None:
        return None
    ranks = across.ranks
    ranked = sorted(
        ((name, value) for name, value in ranks.average_rank.items() if finite(value) is not None),
        key=lambda item: item[1],
    )
    if not ranked:
        return None
    k = max(len(ranked), 2)
    cd = finite(ranks.nemenyi_cd)
    spans = _cliques(ranked, cd) if cd else []
    half = math.ceil(len(ranked) / 2)
    fig, (ax,) = new_figure(6.5, 1.8 + 0.3 * half)
    ax.hlines(0, 1, k, color="black", lw=1)
    for tick in range(1, k + 1):
        ax.vlines(tick, 0, 0.08, color="black", lw=1)
        ax.text(tick, 0.12, str(tick), ha="center", va="bottom", fontsize=8)
    for j, (lo, hi) in enumerate(spans):
        ax.hlines(-0.12 - 0.1 * j, lo - 0.03, hi + 0.03, color="black", lw=3)
    top = -0.25 - 0.1 * len(spans)
    for i, (name, value) in enumerate(ranked):
        left = i < half
        y = top - 0.25 * (i if left else len(ranked) - 1 - i)
        end = 1 - 0.1 if left else k + 0.1
        ax.plot([value, value, end], [0, y, y], color="0.3", lw=0.8)
        ax.text(
            end + (-0.05 if left else 0.05),
            y,
            f"{name} ({value:.2f})",
            ha="right" if left else "left",
            va="center",
            fontsize=8,
        )
    if cd:
        ax.hlines(0.45, 1, 1 + cd, color="black", lw=1.5)
        ax.text(1 + cd / 2, 0.5, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8)
        p = finite(ranks.friedman_p)
        subtitle = f"Friedman p = {p:.3g}; bars join mixers closer than the CD" if p else ""
    else:
        subtitle = ranks.reason or "no critical difference computed"
    ax.set_xlim(-1.2, k + 2.2)
    ax.set_ylim(top - 0.25 * half - 0.1, 0.8)
    ax.axis("off")
    title = f"average rank across tracks (1 = best; descriptive)\n{subtitle}"
    ax.set_title(titled(fig, *title.split("\n"), across_note(across, "ranks")), fontsize=9)
    return fig


def make_plots(report: Analysis) -> list[Plot]:
    """Every figure of a report, rendered to PNG."""
    styles = mixer_styles(report.mixer_names())
    tail = report.learning_curves.tail_fraction
    tradeoffs = report.quality_vs_cost
    costs = tradeoffs.costs
    drawn: list[tuple[str, str, str, str, Figure | None, str]] = []
    for track, entry in report.tracks.items():
        name, tradeoff = slug(track), tradeoffs.tracks.get(track)
        baseline = entry.baseline
        drawn += [
            (
                f"{name}-forest",
                track,
                "forest",
                f"{track}: comparisons with their CIs",
                forest_figure(track, entry),
                "",
            ),
            (
                f"{name}-seeds",
                track,
                "seeds",
                f"{track}: per-seed test metric",
                seeds_figure(track, entry),
                "",
            ),
            (
                f"{name}-curves",
                track,
                "curves",
                f"{track}: learning curves",
                curves_figure(track, entry, styles, tail),
                curves_note(entry),
            ),
            (
                f"{name}-cost",
                track,
                "cost",
                f"{track}: quality against cost",
                cost_figure(
                    f"{track}: improvement against cost",
                    tradeoff,
                    costs,
                    styles,
                    f"improvement over {baseline} (%), 95% CI",
                ),
                cost_note(tradeoff, costs),
            ),
            (
                f"{name}-sweep",
                track,
                "sweep",
                f"{track}: sweep",
                sweep_figure(track, entry, styles),
                "",
            ),
        ]
    across = report.across_tracks
    overall = tradeoffs.across if across else None
    baseline = report.baseline or "the baseline"
    drawn += [
        ("across-heatmap", "across", "heatmap", "improvement by track", heatmap_figure(report), ""),
        (
            "across-iqm",
            "across",
            "iqm",
            "IQM across tracks",
            iqm_figure(across, styles),
            across_note(across, "iqm"),
        ),
        (
            "across-ranks",
            "across",
            "ranks",
            "average ranks",
            rank_figure(across),
            across_note(across, "ranks"),
        ),
        (
            "across-cost",
            "across",
            "cost",
            "quality against cost across tracks",
            cost_figure(
                "across tracks: suite effect against relative cost",
                overall,
                costs,
                styles,
                f"suite effect vs {baseline} (score difference), "
                + (f"{100 * (1 - across.alpha):g}% CI" if across else "CI"),
                relative=True,
            ),
            "; ".join(filter(None, [across_note(across, "iqm"), cost_note(overall, costs)])),
        ),
    ]
    return [
        render(name, section, kind, title, fig, note)
        for name, section, kind, title, fig, note in drawn
        if fig is not None
    ]


def write_plots(plots: Iterable[Plot], out: Path, prefix: str = "") -> list[Path]:
    """Write ``OUT/plots/<name>.png`` per plot; PNGs left from an earlier render are removed
    (``prefix``: only those whose name starts with it; the report's figures and
    ``benchsuite scale``'s ``scaling-*`` ones are written apart and never remove each other's)."""
    folder = Path(out) / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for plot in plots:
        path = folder / f"{plot.name}.png"
        path.write_bytes(plot.png)
        written.append(path)
    for stale in set(folder.glob(f"{prefix}*.png")) - set(written):
        if prefix or not stale.name.startswith(SCALING_PREFIX):
            stale.unlink()
    return written
