"""How mixers and verdicts look, the same in every figure, table and page.

Mixers: the baseline is black circles; every other mixer gets a colour from the Okabe–Ito
palette (safe for the common colour-vision deficiencies; its yellow is left out, unreadable on
white, and its black kept for the baseline) paired with a marker. Six colours and seven markers
cycle together, so the first 42 other mixers all differ in (colour, marker) and neighbours differ
in both. Each mixer keeps its style across every figure of a report: the style is given by its
place in the run's mixer list.

Verdicts: never colour alone. Each has a colour (a blue–red diverging scale, not red–green), a
marker shape for the figures, a symbol and a short label for text.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchsuite.vocabulary import Verdict as Word

BASELINE = ("#000000", "o")
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7")
MARKERS = ("s", "^", "D", "v", "P", "X", "o")


@dataclass(frozen=True)
class Style:
    """A mixer's colour and marker."""

    colour: str
    marker: str


def mixer_styles(names: list[str]) -> dict[str, Style]:
    """A distinct (colour, marker) per mixer, in the order given: the first (the baseline)
    black circles, the others cycling through the colours and markers together."""
    ordered = list(dict.fromkeys(names))
    styles = {
        name: Style(OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)])
        for i, name in enumerate(ordered[1:])
    }
    return {ordered[0]: Style(*BASELINE), **styles} if ordered else {}


@dataclass(frozen=True)
class Verdict:
    """How one verdict is shown: colour, figure marker (drawn with a dark edge so pale colours
    stay visible; ``hollow``: white inside, for the effects below the margin), symbol, a short
    label for narrow text, the terminal's rich style, and the colour of text on ``colour`` (empty:
    the page's own)."""

    colour: str
    marker: str
    hollow: bool
    symbol: str
    short: str
    style: str
    ink: str = ""


VERDICTS = {
    Word.SIGNIFICANT_WIN: Verdict("#2c7bb6", "^", False, "▲", "win", "bold blue", "#fff"),
    Word.SIGNIFICANT_WIN_BELOW_MARGIN: Verdict("#abd9e9", "^", True, "△", "small win", "blue"),
    Word.EQUIVALENT: Verdict("#c2a5cf", "D", False, "=", "equivalent", "magenta"),
    Word.INCONCLUSIVE: Verdict("#ffffbf", "o", False, "?", "inconclusive", "yellow"),
    Word.NEEDS_MORE_SEEDS: Verdict("#e0e0e0", "o", True, "…", "more seeds", "dim"),
    Word.SIGNIFICANT_LOSS_BELOW_MARGIN: Verdict("#fdae61", "v", True, "▽", "small loss", "red"),
    Word.SIGNIFICANT_LOSS: Verdict("#d7191c", "v", False, "▼", "loss", "bold red", "#fff"),
}
UNKNOWN = Verdict("#eeeeee", "o", True, "·", "–", "")
VERDICT_COLOURS = {name: verdict.colour for name, verdict in VERDICTS.items()}
MISSING_COLOUR = "#eeeeee"
BETTER, WORSE, EQUAL = "#2c7bb6", "#d7191c", "#999999"  # one seed: mixer better / worse / equal


def verdict(name: str | None) -> Verdict:
    """The look of a verdict (a neutral one for a missing or unknown verdict)."""
    return VERDICTS.get(name or "", UNKNOWN)
