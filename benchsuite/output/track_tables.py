"""Rich tables of one track (its comparisons against the baseline, largest effect first) and of
the mechanism signatures, each in a wide layout and a narrow one.

The narrow layout splits a table in two, with short verdict labels and a legend;
:class:`~benchsuite.output.widths.FirstFitting` draws the wide one when it fits the terminal, so
that at 80 columns no verdict, word or number is split across lines. Numbers are written by
:mod:`benchsuite.output.numbers`, as in the HTML page and the figures; verdicts carry a symbol as
well as a colour (:mod:`benchsuite.output.palette`).
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape as html_escape

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table

from benchsuite.output import numbers
from benchsuite.output.captions import (
    CONFIG_NOTE,
    POINTS_NOTE,
    RESOLUTION,
    SCALE_NOTE,
    SCALE_WORD,
    TRACK_FAMILY,
    TRACK_UNDECIDED,
)
from benchsuite.output.numbers import marked_interval, num, pct
from benchsuite.output.palette import VERDICTS, verdict
from benchsuite.output.widths import FirstFitting
from benchsuite.protocol.stats import Comparison, interval_seeds
from benchsuite.results.axes import AxisCell, AxisGroup, axis_groups
from benchsuite.results.cell_schema import MixerResult, SignatureCheck, TrackResult
from benchsuite.results.flags import IDENTITY, same_as_identity
from benchsuite.results.schema import Analysis, Design
from benchsuite.vocabulary import Flag, Verdict


def verdict_text(name: str) -> str:
    """A verdict with its symbol, in its colour: ``▲ significant_win``."""
    look = verdict(name)
    return f"[{look.style}]{look.symbol} {name}[/]"


def verdict_cell(c: Comparison) -> str:
    """A comparison's verdict, with how many seeds agree where they cannot decide it (``…
    needs_more_seeds, 2 of 3 ahead``) or where the futility look stopped it."""
    text = verdict_text(c.verdict)
    if c.stopped_at:
        return f"{text}, stopped at {c.stopped_at} seeds ({c.wins} ahead)"
    if c.verdict != Verdict.NEEDS_MORE_SEEDS:
        return text
    return f"{text}, {c.wins} of {c.n} ahead" + (f" ({c.ties} tied)" if c.ties else "")


def p_text(c: Comparison) -> str:
    """A comparison's p; where the futility look stopped it, the rule's 1 with its seeds' own p
    beside it (``1 (stopped at 6 seeds; its 6 seeds: p 0.41)``)."""
    if not c.stopped_at:
        return num(c.p_value, 3)
    own = num(c.p_at_stop, 3)
    return (
        f"{num(c.p_value, 3)} (stopped at {c.stopped_at} seeds; its {c.stopped_at} seeds: p {own})"
    )


def legend(names: list[str]) -> str:
    """What each short verdict label shown stands for."""
    return "; ".join(
        f"{look.symbol} {look.short}: {name}" for name, look in VERDICTS.items() if name in names
    )


def new_table(
    title: str,
    caption: str,
    columns: list[str],
    no_wrap: tuple[str, ...] = (),
    narrow: bool = False,
) -> Table:
    """A table whose cells fold only as a last resort; ``narrow``: no outer border or padding."""
    table = Table(title=title, caption=caption, show_edge=not narrow, pad_edge=not narrow)
    for column in columns:
        table.add_column(column, no_wrap=column in no_wrap, overflow="fold")
    return table


def _cfg(config: dict, grid: list[dict]) -> str:
    """The hyperparameters that vary over the grid (all of them if none varies)."""
    varying = [k for k in config if len({repr(point.get(k)) for point in grid}) > 1] or list(config)
    return numbers.config({k: config[k] for k in varying})


def choice(arm: MixerResult, grid: list[dict]) -> str:
    """The config most seeds chose, with how many of them did; where some seeds' choice was an
    exact tie, how many of the config's seeds decided and how many seeds tied."""
    picked = arm.selection
    total = sum(picked.counts)
    if not picked.tied_seeds:
        return f"{_cfg(arm.best_cfg, grid)} ({picked.counts[picked.modal]}/{total})"
    decided = sum(
        index == picked.modal and seed not in picked.tied_seeds
        for seed, index in picked.chosen.items()
    )
    return f"{_cfg(arm.best_cfg, grid)} ({decided}/{total} decided, {len(picked.tied_seeds)} tied)"


def improvement(c: Comparison) -> str:
    """``+1.2% [-0.3%, +2.8%]``: the effect and its exact 95% interval, or what bounding it
    needs (``+1.2% [interval needs 6 seeds]``)."""
    return f"{pct(c.improvement_rel_pct)} {_bounds(c, list(c.ci95_rel_pct), pct)}"


def in_points(c: Comparison) -> str:
    """The effect in points of the metric (difference scale) with its interval."""
    scaled = [100 * v for v in c.ci95_diff]
    return f"{num(100 * c.improvement_diff, 3)} {_bounds(c, scaled, lambda v: num(v, 3))}"


def _bounds(c: Comparison, bounds: list[float], write: Callable[[float], str]) -> str:
    """The interval (marked † where it excludes 0 but the verdict is not significant)."""
    if not c.interval_bounded:
        return f"[interval needs {interval_seeds()} seeds]"
    return marked_interval(bounds, c.verdict.better or c.verdict.worse, write)


def mde(c: Comparison) -> str:
    """The MDE, or ``none`` when no sign pattern of the seeds reaches the verdict's alpha."""
    return "none" if c.detectable is False else pct(c.mde_rel_pct, signed=False)


def _scale(entry: TrackResult) -> str:
    note = SCALE_NOTE.get(entry.facts.scale, "")
    return f"{note}; {POINTS_NOTE}" if entry.in_points() else note


def _family(entry: TrackResult, design: Design | None) -> str:
    """The Holm family and the alpha of the verdicts, as the comparisons record them."""
    first = entry.fullest()
    if first is None:
        return ""
    c = first.comparison
    partial = ""
    if design and design.partial:
        partial = f" (partial: {design.finished} of {design.comparisons} finished)"
    if not c.detectable and c.n >= 2:
        need = (
            f" at least {design.min_seeds_for_significance}"
            if design and design.min_seeds_for_significance
            else " more"
        )
        return TRACK_UNDECIDED.format(
            family=c.family, partial=partial, n=c.n, alpha=num(c.mde_alpha, 2), need=need
        )
    return TRACK_FAMILY.format(
        family=c.family, partial=partial, alpha=num(c.alpha, 2), mde=num(c.mde_alpha, 2)
    )


def resolution_text(entry: TrackResult) -> str:
    """The track's resolving power and MDEs in words, on the comparisons' scale ("" without a
    comparison)."""
    found = entry.resolution
    if found is None:
        return ""
    return RESOLUTION.format(
        power=num(found.resolving_power, 3),
        spread=num(found.spread, 3),
        noise=num(found.noise, 3),
        mixers=len(found.mixers),
        scale=SCALE_WORD.get(found.scale, found.scale),
        alpha=num(found.mde_alpha, 2),
        measured=_detectable(found.mde_measured),
        planned=_detectable(found.mde_planned),
    )


def _detectable(value: float | None) -> str:
    """An MDE of the track's resolution, ``none`` where the seeds cannot reach its alpha."""
    return "none" if value is None else num(value, 3)


def _flags(entry: TrackResult, mixer: str) -> str:
    """The raised flags; learnt nothing with its hint where the scores are identity's."""
    cell = entry.comparisons.get(mixer)
    if cell is None:
        return Flag.UNDERTRAINED if entry.mixers[mixer].undertrained else ""
    same = same_as_identity(entry.mixers[mixer], entry.mixers.get(IDENTITY))
    return ", ".join(
        f"{flag} (scores = identity's: nothing passes between tokens)"
        if flag == Flag.NO_BETTER_THAN_TRIVIAL and same
        else flag
        for flag in cell.comparison.flags
    )


def _scale_and_budget(entry: TrackResult) -> str:
    """The scale that produced the track's results, then its budget signature."""
    budget = f"budget {entry.facts.budget_signature}"
    return f"{entry.scale_note}; {budget}" if entry.scale_note else budget


def _spread(arm: MixerResult) -> str:
    return f"{num(arm.full.mean)} ± {num(arm.full.std, 2)}"


def _label(entry: TrackResult, mixer: str) -> str:
    name = escape(mixer)
    return f"[bold]{name}[/] (baseline)" if mixer == entry.baseline else name


def _title(name: str, entry: TrackResult) -> str:
    """The track's name, then its data (whose description may itself start with the name)."""
    dataset = entry.facts.dataset.removeprefix(f"{name}: ")
    return f"[bold]{escape(name)}[/] — {escape(dataset)}"


def rows_by_effect(entry: TrackResult) -> list[str]:
    """The baseline, then the compared mixers by effect (largest first), then the others."""
    compared = entry.by_effect()
    rest = [m for m in entry.ordered() if m not in compared]
    return rest[:1] + compared + rest[1:] if entry.baseline in rest else compared + rest


def track_table(name: str, entry: TrackResult, design: Design | None = None) -> Table:
    """The comparison table of one track (baseline first, then by effect), wide layout."""
    points = entry.in_points()
    table = new_table(
        _title(name, entry),
        clauses(
            f"{entry.facts.metric} ({entry.facts.direction})",
            f"improvement > 0 means better than {entry.baseline}",
            _scale(entry),
            _family(entry, design),
            resolution_text(entry),
            CONFIG_NOTE,
            _scale_and_budget(entry),
        )
        + _param_ratios(entry),
        [
            "mixer",
            "config",
            f"{entry.facts.metric} mean ± sd",
            "improvement [95% CI]",
            *(["Δ pt [95% CI]"] if points else []),
            "p",
            "Holm p",
            "MDE",
            "verdict",
            "flags",
        ],
        no_wrap=("verdict",),
    )
    for mixer in rows_by_effect(entry):
        arm, cell = entry.mixers[mixer], entry.comparisons.get(mixer)
        row = [_label(entry, mixer), choice(arm, entry.facts.grid), _spread(arm)]
        if cell is None:
            table.add_row(*row, *[""] * (6 if points else 5), _flags(entry, mixer))
            continue
        c = cell.comparison
        table.add_row(
            *row,
            escape(improvement(c)),
            *([escape(in_points(c))] if points else []),
            p_text(c),
            num(c.p_holm, 3),
            mde(c),
            verdict_cell(c),
            _flags(entry, mixer),
        )
    return table


def track_tables_narrow(
    name: str,
    entry: TrackResult,
    design: Design | None = None,
) -> list[Table]:
    """The same figures in two narrower tables: each mixer's result, then its comparison."""
    results = new_table(
        _title(name, entry),
        f"{entry.facts.metric} ({entry.facts.direction}) on the test split; {CONFIG_NOTE}; "
        f"{_scale_and_budget(entry)}",
        ["mixer", "config", f"{entry.facts.metric} mean ± sd", "flags"],
        narrow=True,
    )
    for mixer in rows_by_effect(entry):
        arm = entry.mixers[mixer]
        results.add_row(
            _label(entry, mixer), choice(arm, entry.facts.grid), _spread(arm), _flags(entry, mixer)
        )
    tables = [results]
    if entry.comparisons:
        shown = [cell.comparison.verdict for cell in entry.comparisons.values()]
        points = entry.in_points()
        against = new_table(
            f"[bold]{escape(name)}[/]: against {escape(entry.baseline)}",
            clauses(
                f"improvement > 0 means better than {entry.baseline}",
                _scale(entry),
                _family(entry, design),
                resolution_text(entry),
                f"verdicts: {legend(shown)}",
            )
            + _param_ratios(entry),
            [
                "mixer",
                "improvement [95% CI]",
                *(["Δ pt [95% CI]"] if points else []),
                "p",
                "Holm p",
                "MDE",
                "verdict",
            ],
            no_wrap=("verdict",),
            narrow=True,
        )
        for mixer in entry.by_effect():
            c = entry.comparisons[mixer].comparison
            against.add_row(
                escape(mixer),
                escape(improvement(c)),
                *([escape(in_points(c))] if points else []),
                p_text(c),
                num(c.p_holm, 3),
                mde(c),
                verdict_cell(c),
            )
        tables.append(against)
    return tables


def track_views(tracks: dict[str, TrackResult], design: Design | None = None) -> RenderableType:
    """Every track's table in one layout: wide where each track's wide table fits the terminal,
    else the narrow pair for every track (a reader compares tracks; one table shape and one
    verdict label make that easy)."""
    return FirstFitting(
        [
            lambda _width: [track_table(name, entry, design) for name, entry in tracks.items()],
            lambda _width: [
                table
                for name, entry in tracks.items()
                for table in track_tables_narrow(name, entry, design)
            ],
        ]
    )


def clauses(*parts: str) -> str:
    """A caption's clauses joined by "; ", empty ones left out (no "; ;")."""
    return "; ".join(part for part in parts if part)


def _param_ratios(entry: TrackResult) -> str:
    """For a caption: each comparison's parameters over the baseline's (docs/protocol.md)."""
    ratios = [
        f"{escape(mixer)} {cell.param_ratio:.2f}x"
        for mixer, cell in entry.comparisons.items()
        if cell.param_ratio
    ]
    return f"; parameters vs {entry.baseline}: {', '.join(ratios)}" if ratios else ""


def signatures(report: Analysis) -> list[tuple[str, str, str, float, SignatureCheck]]:
    """(track, mixer, probe, predicted value, the check) of every mixer with a signature."""
    return [
        (track, mixer, key, value, cell.signature)
        for track, entry in report.tracks.items()
        for mixer, cell in entry.comparisons.items()
        if cell.signature
        for key, value in cell.signature.predicted.items()
    ]


def signature_table(report: Analysis) -> Table | None:
    """Predicted vs observed mechanism signatures, for the mixer and the baseline (wide)."""
    rows = signatures(report)
    if not rows:
        return None
    table = new_table(
        "[bold]mechanism signatures[/] (trained model, first evaluation seed)",
        report.scale.note,
        ["track", "mixer", "probe", "predicted", "observed", "baseline", "confirmed"],
    )
    for track, mixer, key, value, sig in rows:
        ok = "[blue]yes[/]" if sig.confirmed else "[red]no[/]"
        table.add_row(
            escape(track),
            escape(mixer),
            key,
            num(value),
            num(sig.observed[key], 6),
            num(sig.baseline_observed[key], 6),
            ok,
        )
    return table


def signature_tables_narrow(report: Analysis) -> list[Table]:
    """The signatures, one table per track, the baseline's value beside the observed one."""
    tables: dict[str, Table] = {}
    for track, mixer, key, value, sig in signatures(report):
        if track not in tables:
            tables[track] = new_table(
                f"[bold]mechanism signatures[/]: {escape(track)}",
                "observed on the mixer (on the baseline); first evaluation seed; "
                + report.tracks[track].scale_note,
                ["mixer", "probe", "predicted", "observed (baseline)", "held"],
                narrow=True,
            )
        observed = f"{num(sig.observed[key], 6)} ({num(sig.baseline_observed[key], 6)})"
        tables[track].add_row(
            escape(mixer), key, num(value), observed, "yes" if sig.confirmed else "no"
        )
    return list(tables.values())


# ----------------------------------------------------------------------------- track variants


def _cell(cell: AxisCell | None) -> str:
    if cell is None:
        return ""
    if cell.verdict is None:
        return num(cell.mean)
    look = verdict(cell.verdict)
    return f"{num(cell.mean)} [{look.style}]{look.symbol}[/]"


def _header(group: AxisGroup) -> list[str]:
    return ["mixer", *group.keys, *(f"{group.column}={v}" for v in group.values)]


def axis_table(group: AxisGroup) -> Table:
    """One group as a rich table: rows mixer x the other varying keys, columns the axis."""
    table = Table(
        title=f"{group.track}: {group.metric} against {group.column}",
        caption=(
            f"each cell is one track variant's mean over seeds, its symbol the verdict against "
            f"{group.baseline} on that variant (Holm over the run's family); rows: mixer"
            + "".join(f" x {k}" for k in group.keys)
        ),
    )
    for name in _header(group):
        table.add_column(name, no_wrap=True)
    for row in group.rows:
        label = escape(row.mixer)
        if row.mixer == group.baseline:
            label = f"[bold]{label}[/] (baseline)"
        table.add_row(
            label,
            *(escape(row.setting[k]) for k in group.keys),
            *(_cell(row.cells.get(v)) for v in group.values),
        )
    return table


def _html_cell(cell: AxisCell | None) -> str:
    if cell is None:
        return "<td></td>"
    if cell.verdict is None:
        return f"<td class=num>{num(cell.mean)}</td>"
    look = verdict(cell.verdict)
    return (
        f'<td class=num title="{html_escape(cell.verdict)}">{num(cell.mean)} '
        f'<span class=verdict style="background:{look.colour}">'
        f"{html_escape(look.symbol)}</span></td>"
    )


def axes_section(report: Analysis) -> str:
    """The HTML page's section of the axis tables ("" when the run has no track variants)."""
    parts = []
    for group in axis_groups(report):
        header = _header(group)
        rows = "".join(
            "<tr><td>"
            + html_escape(row.mixer)
            + "</td>"
            + "".join(f"<td>{html_escape(row.setting[k])}</td>" for k in group.keys)
            + "".join(_html_cell(row.cells.get(v)) for v in group.values)
            + "</tr>"
            for row in group.rows
        )
        table = axis_table(group)
        parts.append(
            f"<h3>{html_escape(str(table.title))}</h3><table><caption>"
            f"{html_escape(str(table.caption))}</caption><thead><tr>"
            + "".join(f"<th>{html_escape(h)}</th>" for h in header)
            + f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    if not parts:
        return ""
    return "<section id=axes><h2>Track variants side by side</h2>" + "".join(parts) + "</section>"
