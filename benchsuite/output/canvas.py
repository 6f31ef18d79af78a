"""What every figure shares: a matplotlib figure without pyplot state, its PNG bytes, the
:class:`Plot` that carries them, the captions' notes, and its HTML `<figure>`.

matplotlib is imported inside the functions: importing it costs about half a second.
"""

from __future__ import annotations

import base64
import io
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 150


@dataclass(frozen=True)
class Plot:
    """One rendered figure: ``name`` is the file stem under ``OUT/plots/``; ``note`` says what
    the figure leaves out (the HTML caption repeats it)."""

    name: str
    section: str  # a track name, or "across"
    kind: str  # seeds | sweep | curves | forest | cost | heatmap | iqm | ranks
    title: str
    png: bytes
    width: int  # pixels
    height: int
    note: str = ""


def slug(text: str) -> str:
    """A file-name-safe version of a track or mixer name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "track"


def new_figure(
    width: float, height: float, columns: int = 1, rows: int = 1
) -> tuple[Figure, list[Axes]]:
    """A figure (inches) with ``columns`` side-by-side axes (``rows`` of them, sharing their
    y axis, row by row)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False, sharey=rows > 1)
    return fig, list(axes.ravel())


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes: 256 colours (a third of the size; the figures use few colours)
    and no timestamp metadata, so identical data gives identical bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    image = Image.open(buffer).quantize(256, method=Image.Quantize.FASTOCTREE)
    packed = io.BytesIO()
    image.save(packed, format="PNG")
    return packed.getvalue()


def render(name: str, section: str, kind: str, title: str, fig: Figure, note: str = "") -> Plot:
    """A drawn figure as a :class:`Plot`."""
    width, height = (round(v * DPI) for v in fig.get_size_inches())
    return Plot(name, section, kind, title, to_png(fig), width, height, note)


def titled(fig: Figure, *parts: str) -> str:
    """A title made of ``parts`` (the title, then notes such as what the figure leaves out),
    each wrapped to the figure's width at 9 points."""
    width = max(40, round(fig.get_figwidth() * 13))
    return "\n".join(line for part in parts if part for line in textwrap.wrap(part, width))


def data_uri(plot: Plot) -> str:
    """The PNG of a figure as a ``data:`` URI, for a self-contained page."""
    return "data:image/png;base64," + base64.b64encode(plot.png).decode("ascii")


def css_pixels(pixels: int) -> int:
    """A figure's size on the page: its pixels at 100 dpi (figures are drawn at ``DPI``)."""
    return round(pixels * 100 / DPI)
