"""The jinja2 environment of the HTML pages (``templates/``): autoescape on, so every value is
escaped unless a template builds the markup itself; undefined names are errors; the number
filters are those of the tables (:mod:`.numbers`)."""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from benchsuite.output import captions, numbers
from benchsuite.output.canvas import DPI, Plot, slug
from benchsuite.output.palette import verdict


def data_uri(plot: Plot) -> str:
    """The PNG of a figure as a ``data:`` URI."""
    return "data:image/png;base64," + base64.b64encode(plot.png).decode("ascii")


def css_pixels(pixels: int) -> int:
    """A figure's size on the page: its pixels at 100 dpi (figures are drawn at ``DPI``)."""
    return round(pixels * 100 / DPI)


@cache
def environment() -> Any:
    """The template environment (jinja2 is imported on first use, never at start-up)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("benchsuite.output", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)  # fmt: skip
    env.filters.update(num=numbers.num, pct=numbers.pct, config=numbers.config, slug=slug,
                       data_uri=data_uri, css_px=css_pixels)  # fmt: skip
    env.globals.update(captions=captions, verdict_look=verdict)
    return env


def render(template: str, **context: Any) -> str:
    """``templates/<template>`` rendered with ``context``."""
    return environment().get_template(template).render(**context)
