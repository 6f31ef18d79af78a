"""Rich tables of a report: one per track, the mechanism signatures, across tracks, problems;
and the table of ``benchsuite compare``.

Each table comes in a wide layout and a narrow one (split in two, short verdict labels with a
legend, numbers in fewer digits), drawn by :class:`~benchsuite.output.widths.FirstFitting`: the
wide one when it fits the terminal, so that at 80 columns no verdict, word or number is split
across lines. Numbers are written by :mod:`benchsuite.output.numbers`, as in the HTML page and
the figures; verdicts carry a symbol as well as a colour (:mod:`benchsuite.output.palette`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from benchsuite.output import numbers
from benchsuite.output.axes import axis_groups, axis_table
from benchsuite.output.numbers import interval, num, pct
from benchsuite.output.palette import VERDICTS, verdict
from benchsuite.output.widths import FirstFitting, fit

SCALE_NOTE = {
    "log": "improvement, CI and MDE on the log-ratio scale, shown as 1 − the geometric-mean "
    "ratio mixer/baseline in % (never beyond +100%)",
    "difference": "improvement, CI and MDE on the difference scale, shown as % of the "
    "baseline's mean",
}
POINTS_NOTE = "Δ pt: the same paired difference in percentage points, with its 95% CI"
SUITE_STYLE = {"better": "bold blue", "worse": "bold red", "mixed": "magenta",
               "inconclusive": "yellow"}  # fmt: skip


def _verdict(name: str, short: bool = False) -> str:
    """A verdict with its symbol, in its colour: ``▲ significant_win`` (``▲ win`` if short)."""
    look = verdict(name)
    return f"[{look.style}]{look.symbol} {look.short if short else name}[/]"


def _legend(names: list[str]) -> str:
    """What each short verdict label shown stands for."""
    return "; ".join(
        f"{look.symbol} {look.short}: {name}" for name, look in VERDICTS.items() if name in names
    )


def _cfg(config: dict, grid: list[dict]) -> str:
    """The hyperparameters that vary over the grid (all of them if none varies)."""
    varying = [k for k in config if len({repr(point.get(k)) for point in grid}) > 1] or list(config)
    return numbers.config({k: config[k] for k in varying})


def _choice(arm: dict, grid: list[dict]) -> str:
    """The config most seeds chose, with how many of them did."""
    counts = arm["selection"]["counts"]
    return f"{_cfg(arm['best_cfg'], grid)} ({max(counts)}/{sum(counts)})"


def _improvement(c: dict) -> str:
    return f"{pct(c['improvement_rel_pct'])} {interval(c['ci95_rel_pct'], pct)}"


def in_points(entry: dict) -> bool:
    """An accuracy-type metric (higher is better, ideal 1): effects also in percentage points."""
    return bool(entry.get("higher_is_better")) and entry.get("ideal") == 1.0


def _points(c: dict) -> str:
    lo, hi = c.get("ci95_diff") or (None, None)
    scaled = [None if v is None else 100 * v for v in (lo, hi)]
    value = c.get("improvement_diff")
    shown = num(None if value is None else 100 * value, 3)
    return f"{shown} {interval(scaled, lambda v: num(v, 3))}"


def _mde(c: dict) -> str:
    """The MDE, or ``none`` when no sign pattern of the seeds reaches the verdict's alpha."""
    return "none" if c.get("detectable") is False else pct(c["mde_rel_pct"], signed=False)


def _scale(entry: dict) -> str:
    note = SCALE_NOTE.get(entry.get("scale", "difference"), "")
    return f"{note}; {POINTS_NOTE}" if in_points(entry) else note


def _family(entry: dict, design: dict | None) -> str:
    """The Holm family and the alpha of the verdicts, as the comparisons record them."""
    first = next(iter(entry["comparisons"].values()), None)
    if first is None:
        return ""
    c = first["comparison"]
    partial = ""
    if design and design.get("partial"):
        partial = f" (partial: {design['finished']} of {design['comparisons']} finished)"
    return (
        f"Holm over {c.get('family', '–')} comparisons{partial}; significant: Holm p < "
        f"{num(c['alpha'], 2)} and the 95% CI excludes 0; MDE at alpha {num(c['mde_alpha'], 2)} "
        "(Holm's first step), none: the seeds cannot reach that alpha"
    )


def _flags(entry: dict, mixer: str) -> str:
    cell = entry["comparisons"].get(mixer)
    if cell is not None:
        return ", ".join(cell["comparison"]["flags"])
    return "undertrained" if entry["mixers"][mixer].get("undertrained") else ""


def _scale_and_budget(entry: dict) -> str:
    """The scale that produced the track's results, then its budget signature."""
    budget = f"budget {entry['budget_signature']}"
    return f"{note}; {budget}" if (note := entry.get("scale_note")) else budget


def _spread(arm: dict) -> str:
    return f"{num(arm['full']['mean'])} ± {num(arm['full']['std'], 2)}"


def _label(entry: dict, mixer: str) -> str:
    name = escape(mixer)
    return f"[bold]{name}[/] (baseline)" if mixer == entry["baseline"] else name


def _new(title: str, caption: str, columns: list[str], no_wrap: tuple[str, ...] = (),
         narrow: bool = False) -> Table:  # fmt: skip
    """A table whose cells fold only as a last resort; ``narrow``: no outer border or padding."""
    table = Table(title=title, caption=caption, show_edge=not narrow, pad_edge=not narrow)
    for column in columns:
        table.add_column(column, no_wrap=column in no_wrap, overflow="fold")
    return table


def _title(name: str, entry: dict) -> str:
    """The track's name, then its data (whose description may itself start with the name)."""
    dataset = entry["dataset"].removeprefix(f"{name}: ")
    return f"[bold]{escape(name)}[/] — {escape(dataset)}"


CONFIG_NOTE = (
    "config: the one most seeds chose on their validation split (seeds agreeing / seeds; a tie "
    "goes to the best validation mean)"
)


def track_table(name: str, entry: dict, design: dict | None = None) -> Table:
    """The comparison table of one track (baseline first), wide layout."""
    points = in_points(entry)
    table = _new(
        _title(name, entry),
        f"{entry['metric']} ({entry['direction']}); improvement > 0 means better than "
        f"{entry['baseline']}; {_scale(entry)}; {_family(entry, design)}; {CONFIG_NOTE}; "
        f"{_scale_and_budget(entry)}{_param_ratios(entry)}",
        ["mixer", "config", f"{entry['metric']} mean ± sd", "improvement [95% CI]",
         *(["Δ pt [95% CI]"] if points else []), "p", "Holm p", "MDE", "verdict", "flags"],
        no_wrap=("verdict",),
    )  # fmt: skip
    for mixer, arm in entry["mixers"].items():
        cell = entry["comparisons"].get(mixer)
        row = [_label(entry, mixer), _choice(arm, entry["grid"]), _spread(arm)]
        if cell is None:
            table.add_row(*row, *[""] * (6 if points else 5), _flags(entry, mixer))
            continue
        c = cell["comparison"]
        table.add_row(*row, _improvement(c), *([_points(c)] if points else []),
                      num(c["p_value"], 3), num(c["p_holm"], 3), _mde(c),
                      _verdict(c["verdict"]), _flags(entry, mixer))  # fmt: skip
    return table


def track_tables_narrow(name: str, entry: dict, design: dict | None = None) -> list[Table]:
    """The same figures in two narrower tables: each mixer's result, then its comparison."""
    results = _new(
        _title(name, entry),
        f"{entry['metric']} ({entry['direction']}) on the test split; {CONFIG_NOTE}; "
        f"{_scale_and_budget(entry)}",
        ["mixer", "config", f"{entry['metric']} mean ± sd", "flags"],
        narrow=True,
    )  # fmt: skip
    for mixer, arm in entry["mixers"].items():
        results.add_row(_label(entry, mixer), _choice(arm, entry["grid"]), _spread(arm),
                        _flags(entry, mixer))  # fmt: skip
    tables = [results]
    if entry["comparisons"]:
        shown = [cell["comparison"]["verdict"] for cell in entry["comparisons"].values()]
        points = in_points(entry)
        against = _new(
            f"[bold]{escape(name)}[/]: against {escape(entry['baseline'])}",
            f"improvement > 0 means better than {entry['baseline']}; {_scale(entry)}; "
            f"{_family(entry, design)}; verdicts: {_legend(shown)}{_param_ratios(entry)}",
            ["mixer", "improvement [95% CI]", *(["Δ pt [95% CI]"] if points else []), "p",
             "Holm p", "MDE", "verdict"],
            no_wrap=("verdict",),
            narrow=True,
        )  # fmt: skip
        for mixer, cell in entry["comparisons"].items():
            c = cell["comparison"]
            against.add_row(escape(mixer), _improvement(c), *([_points(c)] if points else []),
                            num(c["p_value"], 3), num(c["p_holm"], 3), _mde(c),
                            _verdict(c["verdict"], short=True))  # fmt: skip
        tables.append(against)
    return tables


def _param_ratios(entry: dict) -> str:
    """For a caption: each comparison's parameters over the baseline's (docs/protocol.md)."""
    ratios = [f"{escape(mixer)} {size['params_ratio']:.2f}x"
              for mixer, cell in entry["comparisons"].items()
              if (size := cell.get("size")) and size.get("params_ratio")]  # fmt: skip
    return f"; parameters vs {entry['baseline']}: {', '.join(ratios)}" if ratios else ""


def track_view(name: str, entry: dict, design: dict | None = None) -> RenderableType:
    """One track's table, wide or narrow as the terminal allows."""
    return FirstFitting([
        lambda _width: [track_table(name, entry, design)],
        lambda _width: track_tables_narrow(name, entry, design),
    ])  # fmt: skip


def _signatures(report: dict) -> list[tuple[str, str, str, Any, dict]]:
    return [
        (track, mixer, key, value, cell["signature"])
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
        if cell.get("signature")
        for key, value in cell["signature"]["predicted"].items()
    ]


def signature_table(report: dict) -> Table | None:
    """Predicted vs observed mechanism signatures, for the mixer and the baseline (wide)."""
    rows = _signatures(report)
    if not rows:
        return None
    table = _new(
        "[bold]mechanism signatures[/] (trained model, first evaluation seed)",
        run_scale(report),
        ["track", "mixer", "probe", "predicted", "observed", "baseline", "confirmed"],
    )
    for track, mixer, key, value, sig in rows:
        ok = "[blue]yes[/]" if sig["confirmed"] else "[red]no[/]"
        table.add_row(escape(track), escape(mixer), key, num(value), num(sig["observed"][key], 6),
                      num(sig["baseline_observed"][key], 6), ok)  # fmt: skip
    return table


def signature_tables_narrow(report: dict) -> list[Table]:
    """The signatures, one table per track, the baseline's value beside the observed one."""
    tables: dict[str, Table] = {}
    for track, mixer, key, value, sig in _signatures(report):
        if track not in tables:
            tables[track] = _new(
                f"[bold]mechanism signatures[/]: {escape(track)}",
                "observed on the mixer (on the baseline); first evaluation seed; "
                + report["tracks"][track].get("scale_note", ""),
                ["mixer", "probe", "predicted", "observed (baseline)", "held"],
                narrow=True,
            )
        observed = f"{num(sig['observed'][key], 6)} ({num(sig['baseline_observed'][key], 6)})"
        tables[track].add_row(escape(mixer), key, num(value), observed,
                              "yes" if sig["confirmed"] else "no")  # fmt: skip
    return list(tables.values())


def across_table(report: dict) -> Table | None:
    """Per mixer across tracks: the suite effect, the per-track effects beside it, the combined
    test, the verdict and whether it survives leaving any one track out (wide layout)."""
    across = report.get("across_tracks")
    if not across or not across["mixers"]:
        return None
    tracks = across["tracks"]
    table = _new(
        "[bold]across tracks[/] (score: fraction of the gap from the trivial predictor to the "
        "ideal value closed)",
        _across_caption(across, report),
        ["mixer", "suite effect [95% CI]", *map(escape, tracks), "p of the effect (Holm)",
         "verdict", "robust"],
    )  # fmt: skip
    for mixer, row in across["mixers"].items():
        effects = row.get("per_track_effect") or {}
        name, effect, *rest = _across_row(mixer, row)
        table.add_row(name, effect, *[num(effects.get(t), 2) for t in tracks], *rest)
    return table


def run_scale(report: dict) -> str:
    """The run's scale sentence (preset, width, depth and budget per track), or ""."""
    return (report.get("scale") or {}).get("note", "")


def _across_caption(across: dict, report: dict) -> str:
    left = across.get("tracks_left_out") or {}
    dropped = "; left out: " + "; ".join(f"{t} ({why})" for t, why in left.items()) if left else ""
    return (
        "effect: mean paired score difference with the baseline (difference scale of the "
        "score), per track and (suite) the mean over tracks, each track weighing the same, "
        "with a stratified bootstrap 95% CI; p: two-sided sign-flip test of that same suite "
        f"effect (its sign is the direction tested), Holm across {len(across['mixers'])} mixers; "
        f"better/worse: Holm p < {num(across['alpha'], 2)} and the CI excludes 0; robust: the "
        "verdict holds with any one track left out (mixed: it does not; its direction in "
        "brackets); * ran on fewer "
        f"tracks; ranks: docs/statistics.md{dropped}; {run_scale(report)}"
    )


def suite_verdict(row: dict) -> str:
    """A mixer's across-tracks verdict; ``mixed`` with the direction its effect tested."""
    verdict_ = row.get("verdict", "")
    direction = (row.get("suite_test") or {}).get("direction")
    return f"mixed ({direction})" if verdict_ == "mixed" and direction else verdict_


def _across_row(mixer: str, row: dict) -> list[str]:
    suite = row.get("suite_test") or {}
    verdict_ = row.get("verdict", "")
    return [
        escape(mixer) + (" *" if row.get("fewer_tracks") else ""),
        f"{num(row.get('suite_effect'), 2)} "
        f"{interval(row.get('suite_effect_ci95'), lambda v: num(v, 2))}",
        f"{num(suite.get('p_value'), 2)} ({num(suite.get('p_holm'), 2)})",
        f"[{SUITE_STYLE.get(verdict_, '')}]{escape(suite_verdict(row))}[/]",
        "yes" if row.get("robust_without_any_track") else "no",
    ]


def across_tables_narrow(report: dict, width: int) -> list[Table]:
    """The suite figures, then the per-track effects in as many tables as the width needs."""
    across = report["across_tracks"]
    suite = _new("[bold]across tracks[/] (score: fraction of the gap from the trivial "
                 "predictor to the ideal value closed)", _across_caption(across, report),
                 ["mixer", "suite effect [95% CI]", "p of the effect (Holm)", "verdict",
                  "robust"],
                 narrow=True)  # fmt: skip
    for mixer, row in across["mixers"].items():
        suite.add_row(*_across_row(mixer, row))
    tables, pending = [suite], list(across["tracks"])
    while pending:
        size = len(pending)
        while size > 1 and not fit(_effects(across, pending[:size]), width):
            size -= 1
        tables.append(_effects(across, pending[:size]))
        pending = pending[size:]
    return tables


def _effects(across: dict, tracks: list[str]) -> Table:
    table = _new("[bold]across tracks[/]: mean paired score difference per track", "",
                 ["mixer", *map(escape, tracks)], narrow=True)  # fmt: skip
    for mixer, row in across["mixers"].items():
        effects = row.get("per_track_effect") or {}
        table.add_row(escape(mixer), *[num(effects.get(t), 2) for t in tracks])
    return table


def _problem_rows(report: dict) -> list[tuple[str, str, str, str, str, str]]:
    """(track, mixer, what, jobs, reason, traceback) of every skipped, failed or undertrained
    cell; identical failures share one row."""
    rows = [(s["track"], s["mixer"], "skipped", "", s["reason"], "") for s in report["skipped"]]
    groups: dict[tuple, list[dict]] = {}
    for f in report["failures"]:
        groups.setdefault((f["track"], f["mixer"], f["reason"]), []).append(f)
    for (track, mixer, reason), failures in groups.items():
        seeds = ", ".join(sorted({str(f["seed"]) for f in failures}))
        log = f"logs/{Path(failures[0]['traceback']).name}" if failures[0]["traceback"] else ""
        rows.append((track, mixer, "failed", f"{len(failures)} (seed {seeds})", reason, log))
    for flagged in (report.get("learning_curves") or {}).get("undertrained") or []:
        rows.append((flagged["track"], flagged["mixer"], "undertrained", "",
                     flagged.get("reason", ""), ""))  # fmt: skip
    return rows


PROBLEMS = "[bold red]skipped, failed and undertrained[/]"


def _logs_note(rows: list[tuple[str, ...]]) -> str:
    """The caption pointing to the tracebacks, when a job failed."""
    failed = any(row[2] == "failed" for row in rows)
    return "every failed job's traceback is in logs/ in the output folder" if failed else ""


def problems_table(report: dict) -> Table | None:
    """Skipped cells, failed jobs and undertrained cells with their reason (wide layout)."""
    rows = _problem_rows(report)
    if not rows:
        return None
    table = _new(PROBLEMS, _logs_note(rows),
                 ["track", "mixer", "what", "jobs", "reason", "traceback (first)"])  # fmt: skip
    for row in rows:
        table.add_row(*map(escape, row))
    return table


def problems_table_narrow(report: dict) -> Table:
    """The same rows with the cell, what happened and its reason in three columns."""
    rows = _problem_rows(report)
    table = _new(PROBLEMS, _logs_note(rows), ["cell", "what", "reason"], narrow=True)
    table.show_lines = True  # a cell spans two lines (track, mixer): rules keep rows apart
    for track, mixer, what, jobs, reason, log in rows:
        table.add_row(
            f"{escape(track)}\n{escape(mixer)}",
            f"{what} {jobs}".strip(),
            escape(reason) + (f"\ntraceback: {escape(log)}" if log else ""),
        )
    return table


def print_design(design: dict, console: Console) -> None:
    """The design check, before training: seeds, family size and the planned MDE per track."""
    m = design["comparisons"]
    why = (
        "as given" if design["seeds_given"]
        else f"the fewest with which a comparison with one discordant seed passes Holm over {m} "
        "comparisons, and at least 12"
    )  # fmt: skip
    console.print(
        f"design: {design['seeds']} paired seeds ({why}), {m} comparisons (Holm needs at least "
        f"{design['min_seeds_for_significance']} seeds; verdicts at alpha "
        f"{num(design['alpha'], 2)}, its first step; the analysis uses this family less any "
        "cell a track's data rules out, as every table states); each seed tunes on its own "
        "validation split"
    )
    if design["warning"]:
        console.print(f"[yellow]warning:[/] {design['warning']}")
    for track, plan in design["tracks"].items():
        scale = "geometric-mean ratio" if plan.get("scale") == "log" else "of the baseline mean"
        mde = (
            f"planned MDE {pct(plan['planned_mde_rel_pct'], signed=False)} ({scale}) at that alpha"
            if plan["planned_mde_rel_pct"] is not None
            else f"nothing detectable: the smallest sign-flip p of {design['seeds']} seeds is "
            "not below that alpha"
        )  # fmt: skip
        console.print(
            f"  {escape(track)}: {mde} (sd of paired differences "
            f"{pct(100 * plan['planning_sd_rel'], signed=False)}, {plan['source']})"
        )


def print_report(report: dict, console: Console) -> None:
    """Print every table of a report, each in the widest layout the terminal fits."""
    design = report["design"]
    if design.get("partial"):
        console.print(
            f"[yellow]partial:[/] {design['finished']} of the design's {design['comparisons']} "
            f"comparisons finished; Holm over all {design['comparisons']}"
        )
    for warning in report.get("warnings", []):
        console.print(f"[yellow]warning:[/] {warning}")
    for name, entry in report["tracks"].items():
        console.print(track_view(name, entry, design))
    for group in axis_groups(report):
        console.print(axis_table(group))
    if _signatures(report):
        console.print(FirstFitting([lambda _w: [signature_table(report)],
                                    lambda _w: signature_tables_narrow(report)]))  # fmt: skip
    if across_table(report) is not None:
        console.print(
            FirstFitting(
                [
                    lambda _w: [across_table(report)],
                    lambda width: across_tables_narrow(report, width),
                ]
            )
        )
    if _problem_rows(report):
        console.print(FirstFitting([lambda _w: [problems_table(report)],
                                    lambda _w: [problems_table_narrow(report)]],
                                   unwrapped=1))  # fmt: skip


def _compare_tables(result: dict, narrow: bool) -> list[Table]:
    title = "[bold]compare[/]: run B against run A, paired by seed"
    rows = result["rows"]
    first = rows[0]["comparison"] if rows else {}
    caption = (
        "improvement > 0 means B is better, on each track's scale as run analyses it "
        "(log-ratio tracks: 1 − the geometric-mean ratio B/A in %; others: % of A's mean); "
        f"Holm over {len(rows)} rows; significant: Holm p < {num(first.get('alpha'), 2)} and "
        f"the 95% CI excludes 0; MDE at alpha {num(first.get('mde_alpha'), 2)}"
    )
    if not narrow:
        table = _new(title, caption, ["track", "mixer", "A mean", "B mean",
                                      "improvement [95% CI]", "p", "Holm p", "MDE", "verdict"],
                     no_wrap=("verdict",))  # fmt: skip
        for row in rows:
            c = row["comparison"]
            table.add_row(escape(row["track"]), escape(row["mixer"]), num(c["baseline_mean"]),
                          num(c["mixer_mean"]), _improvement(c), num(c["p_value"], 3),
                          num(c["p_holm"], 3), _mde(c),
                          _verdict(c["verdict"]))  # fmt: skip
        return [table]
    shown = [row["comparison"]["verdict"] for row in rows]
    means = _new(title, caption, ["track", "mixer", "A mean", "B mean", "improvement [95% CI]"],
                 narrow=True)  # fmt: skip
    tests = _new("[bold]compare[/]: tests", f"verdicts: {_legend(shown)}",
                 ["track", "mixer", "p", "Holm p", "MDE", "verdict"], no_wrap=("verdict",),
                 narrow=True)  # fmt: skip
    for row in rows:
        c = row["comparison"]
        means.add_row(escape(row["track"]), escape(row["mixer"]), num(c["baseline_mean"]),
                      num(c["mixer_mean"]), _improvement(c))  # fmt: skip
        tests.add_row(escape(row["track"]), escape(row["mixer"]), num(c["p_value"], 3),
                      num(c["p_holm"], 3), _mde(c),
                      _verdict(c["verdict"], short=True))  # fmt: skip
    return [means, tests]


def compare_table(result: dict) -> RenderableType:
    """Run B against run A, per (track, mixer): improvement > 0 means B is better; one table, or
    two when the terminal is narrow."""
    return FirstFitting([lambda _w: _compare_tables(result, narrow=False),
                         lambda _w: _compare_tables(result, narrow=True)])  # fmt: skip
