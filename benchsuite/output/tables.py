"""Rich tables of a report: one per track, the mechanism signatures, across tracks, failures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

VERDICT_STYLE = {
    "significant_win": "bold green",
    "significant_win_below_margin": "green",
    "significant_loss": "bold red",
    "significant_loss_below_margin": "red",
    "equivalent_within_margin": "cyan",
    "inconclusive": "yellow",
}


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value:+.1f}%"


def _cfg(config: dict, grid: list[dict]) -> str:
    """The hyperparameters that vary over the grid (all of them if none varies)."""
    varying = [k for k in config if len({repr(point.get(k)) for point in grid}) > 1] or list(config)
    return " ".join(f"{k}={config[k]:g}" for k in varying)


def track_table(name: str, entry: dict) -> Table:
    """The comparison table of one track (baseline first)."""
    table = Table(
        title=f"[bold]{name}[/] — {entry['dataset']}",
        caption=f"{entry['metric']} ({entry['direction']}); improvement > 0 means better than "
        f"{entry['baseline']}; budget {entry['budget_signature']}",
    )
    for column in ("mixer", "config", f"{entry['metric']} mean ± sd", "improvement [95% CI]",
                   "p", "Holm p", "MDE", "verdict", "flags"):  # fmt: skip
        table.add_column(column, overflow="fold")
    for mixer, arm in entry["mixers"].items():
        full = arm["full"]
        spread = f"{_num(full['mean'])} ± {_num(full['std'], 2)}"
        cell = entry["comparisons"].get(mixer)
        if cell is None:
            table.add_row(
                f"[bold]{mixer}[/] (baseline)", _cfg(arm["best_cfg"], entry["grid"]), spread
            )
            continue
        c = cell["comparison"]
        lo, hi = c["ci95_rel_pct"] or (None, None)
        style = VERDICT_STYLE.get(c["verdict"], "")
        table.add_row(
            mixer,
            _cfg(arm["best_cfg"], entry["grid"]),
            spread,
            f"{_pct(c['improvement_rel_pct'])} [{_pct(lo)}, {_pct(hi)}]",
            _num(c["p_value"], 3),
            _num(c["p_holm"], 3),
            _pct(c["mde_rel_pct"]).lstrip("+"),
            f"[{style}]{c['verdict']}[/]",
            ", ".join(c["flags"]),
        )
    return table


def signature_table(report: dict) -> Table | None:
    """Predicted vs observed mechanism signatures, for the mixer and the baseline."""
    rows = [
        (track, mixer, key, value, cell["signature"])
        for track, entry in report["tracks"].items()
        for mixer, cell in entry["comparisons"].items()
        if cell.get("signature")
        for key, value in cell["signature"]["predicted"].items()
    ]
    if not rows:
        return None
    table = Table(title="[bold]mechanism signatures[/] (trained model, first evaluation seed)")
    for column in ("track", "mixer", "probe", "predicted", "observed", "baseline", "confirmed"):
        table.add_column(column)
    for track, mixer, key, value, sig in rows:
        ok = "[green]yes[/]" if sig["confirmed"] else "[red]no[/]"
        table.add_row(track, mixer, key, _num(value), _num(sig["observed"][key], 6),
                      _num(sig["baseline_observed"][key], 6), ok)  # fmt: skip
    return table


def across_table(report: dict) -> Table | None:
    """Per mixer across tracks: IQM of normalised scores, paired difference, P(improvement)."""
    across = report.get("across_tracks")
    if not across:
        return None
    table = Table(
        title="[bold]across tracks[/] (normalised score: baseline = 1, higher is better)",
        caption="IQM with stratified bootstrap 95% CI; suite p: stratified sign-flip on log-ratios,"
        " "
        "Holm across mixers; rank is descriptive",
    )
    for column in ("mixer", "IQM [95% CI]", "IQM − baseline [95% CI]", "P(improve)",
                   "suite p (Holm)", "won/lost/eq/inc", "mean rank"):  # fmt: skip
        table.add_column(column)
    ranks = (across.get("ranks") or {}).get("average_rank", {})
    for mixer, row in across["mixers"].items():
        lo, hi = row.get("iqm_ci95") or (None, None)
        dlo, dhi = row.get("iqm_diff_ci95") or (None, None)
        suite = row.get("suite_test") or {}
        table.add_row(
            mixer,
            f"{_num(row.get('iqm'), 3)} [{_num(lo, 3)}, {_num(hi, 3)}]",
            f"{_num(row.get('iqm_diff'), 3)} [{_num(dlo, 3)}, {_num(dhi, 3)}]",
            _num(row.get("prob_improvement"), 2),
            f"{_num(suite.get('p_value'), 3)} ({_num(suite.get('p_holm'), 3)})",
            "/".join(
                str(row.get(f"tracks_{k}") if row.get(f"tracks_{k}") is not None else "–")
                for k in ("won", "lost", "equivalent", "inconclusive")
            ),
            _num(ranks.get(mixer), 3),
        )
    return table


def problems_table(report: dict) -> Table | None:
    """Skipped cells and failed jobs with their reason; identical failures share one row."""
    rows = [(s["track"], s["mixer"], "skipped", "", s["reason"], "") for s in report["skipped"]]
    groups: dict[tuple, list[dict]] = {}
    for f in report["failures"]:
        groups.setdefault((f["track"], f["mixer"], f["stage"], f["reason"]), []).append(f)
    for (track, mixer, stage, reason), failures in groups.items():
        seeds = ", ".join(sorted({str(f["seed"]) for f in failures}))
        log = f"logs/{Path(failures[0]['traceback']).name}" if failures[0]["traceback"] else ""
        rows.append((track, mixer, stage, f"{len(failures)} (seed {seeds})", reason, log))
    if not rows:
        return None
    table = Table(title="[bold red]skipped and failed[/]", caption="logs/ is in the output folder")
    for column in ("track", "mixer", "stage", "jobs"):
        table.add_column(column)
    table.add_column("reason", overflow="fold", ratio=3)
    table.add_column("traceback (first)", overflow="fold", ratio=1)
    for row in rows:
        table.add_row(*row)
    return table


def print_design(design: dict, console: Console) -> None:
    """The design check, before training: seeds, family size and the planned MDE per track."""
    console.print(
        f"design: {design['seeds']} paired seeds, {design['comparisons']} comparisons "
        f"(Holm needs at least {design['min_seeds_for_significance']} seeds)"
    )
    if design["warning"]:
        console.print(f"[yellow]warning:[/] {design['warning']}")
    for track, plan in design["tracks"].items():
        console.print(
            f"  {track}: planned MDE {plan['planned_mde_rel_pct']:.1f}% of the baseline "
            f"(sd of paired differences {100 * plan['planning_sd_rel']:.1f}%, {plan['source']})"
        )


def print_report(report: dict, console: Console) -> None:
    """Print every table of a report."""
    design = report["design"]
    if design.get("warning"):
        console.print(f"[yellow]design:[/] {design['warning']}")
    for warning in report.get("warnings", []):
        console.print(f"[yellow]warning:[/] {warning}")
    for name, entry in report["tracks"].items():
        console.print(track_table(name, entry))
    for table in (signature_table(report), across_table(report), problems_table(report)):
        if table is not None:
            console.print(table)


def compare_table(result: dict) -> Table:
    """Run B against run A, per (track, mixer): improvement > 0 means B is better."""
    table = Table(
        title="[bold]compare[/]: run B against run A, paired by seed",
        caption="improvement > 0 means B is better; Holm over every row",
    )
    for column in ("track", "mixer", "A mean", "B mean", "improvement [95% CI]", "p", "Holm p",
                   "MDE", "verdict"):  # fmt: skip
        table.add_column(column)
    for row in result["rows"]:
        c = row["comparison"]
        lo, hi = c["ci95_rel_pct"] or (None, None)
        style = VERDICT_STYLE.get(c["verdict"], "")
        table.add_row(
            row["track"], row["mixer"], _num(c["baseline_mean"]), _num(c["mixer_mean"]),
            f"{_pct(c['improvement_rel_pct'])} [{_pct(lo)}, {_pct(hi)}]", _num(c["p_value"], 3),
            _num(c["p_holm"], 3), _pct(c["mde_rel_pct"]).lstrip("+"), f"[{style}]{c['verdict']}[/]",
        )  # fmt: skip
    return table
