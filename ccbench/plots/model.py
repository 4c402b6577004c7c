"""What a figure shows, independent of how it is drawn: matplotlib files (`figures.py`) and
the result pages' Plotly figures (`web.py`) draw these same descriptions, so files and pages
cannot drift apart. The figures themselves are built in `run.py` (one run) and `matrix.py`
(an experiment's matrix).

Values are already in the unit their axis names ("goodput (Mbit/s)"): the builders scale them
with the catalogue's SI prefixes (`schemas.metrics.scaled_unit`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from schemas.metrics import Quantity, heading, scaled_unit

# How a trace is drawn:
# line       a series (a flow, a matrix series) as a line through its points
# dashed     a companion of a series in its colour (ssthresh beside cwnd)
# step       a sampled level held until the next sample (the queue, controller state)
# aggregate  the sum of the series (black, heavier)
# reference  a configured value (the link rate, the buffer, the base RTT): grey dashed
# markers    points without lines (scatter; categories)
# points     discrete measurements joined by a line, each marked (a campaign's occurrences)
# events     marks of single events (drops)
# errorbars  points with error bars (median ± SIQR), joined by a line on a numeric axis only
# box        one box per category from `samples` (quartiles, whiskers at 1.5 IQR, outliers)
# outline    a closed curve in its series' colour (an ellipse), no legend entry
Style = Literal[
    "line", "dashed", "step", "aggregate", "reference", "markers", "points", "events", "errorbars",
    "box", "outline",
]  # fmt: skip
# date: x values are ISO 8601 instants (a campaign's occurrences over time).
Scale = Literal["linear", "log", "category", "date"]

# Colour-blind-safe palette (Okabe and Ito, "Color Universal Design", 2008), in the order
# series take it; yellow last, as it is faint on white. Markers vary too, for grey prints.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")  # fmt: skip
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
AGGREGATE_COLOUR = "#000000"
REFERENCE_COLOUR = "#777777"
EVENT_COLOUR = "#D55E00"


@dataclass(frozen=True)
class Axis:
    label: str  # with its unit: "goodput (Mbit/s)"
    scale: Scale = "linear"
    reversed: bool = False  # delay axes of throughput-delay plots: better to the right
    categories: tuple[str, ...] = ()  # scale "category": the categories in order
    range: tuple[float, float] | None = None  # fixed limits (CDF: 0..1)
    from_zero: bool = False  # rates, windows and queues start at 0, whatever the data
    ticks: tuple[float, ...] = ()  # ticks at these values only (a matrix axis's own values)


@dataclass(frozen=True)
class Trace:
    name: str
    x: list[Any]
    y: list[float | None]
    style: Style = "line"
    colour: int | None = None  # index into PALETTE; None: the style's own colour
    error: list[float] | None = None  # half-widths, style "errorbars"
    samples: list[list[float]] | None = None  # style "box": the values of each x
    legend: bool = True
    hover: list[str] | None = None  # a text per point (pages only): a run's axis values


@dataclass(frozen=True)
class Panel:
    """One plotting area; figures with several panels share their x axis (cwnd above the
    queue)."""

    y: Axis
    traces: list[Trace] = field(default_factory=list)


@dataclass(frozen=True)
class FigureData:
    name: str  # stable, part of file names: "goodput", "utilization_vs_buffer"
    title: str  # what it shows: "goodput per RTT (40 ms)"
    subtitle: str  # the conditions: "reno vs cubic · 10 Mbit/s · RTT 40 ms · buffer 33 pkt"
    x: Axis
    panels: list[Panel]
    legend: bool = True
    legend_title: str = ""  # what the series vary: "bottleneck buffer"

    @property
    def traces(self) -> list[Trace]:
        return [t for panel in self.panels for t in panel.traces]

    @property
    def y(self) -> Axis:
        return self.panels[0].y

    def has_data(self) -> bool:
        return any(
            any(v is not None for v in t.y) or any(t.samples or [])
            for t in self.traces
            if t.style not in ("reference", "outline")
        )


def colour_of(trace: Trace) -> str:
    """A trace's colour in both backends: its series' palette colour; black for the aggregate
    and for a series of the bottleneck itself (the queue); grey for references."""
    if trace.style == "reference":
        return REFERENCE_COLOUR
    if trace.style == "events":
        return EVENT_COLOUR
    if trace.style == "aggregate" or trace.colour is None:
        return AGGREGATE_COLOUR
    return PALETTE[trace.colour % len(PALETTE)]


def marker_of(trace: Trace) -> str:
    """A series' marker (matplotlib's name), for prints in grey."""
    return "x" if trace.style == "events" else MARKERS[(trace.colour or 0) % len(MARKERS)]


def dense(trace: Trace) -> bool:
    """A scatter of many points (samples) is drawn with small markers; one of runs with large."""
    return len(trace.x) > 100


# The y axis of every CDF.
CDF = Axis("CDF", range=(0.0, 1.0))


def scaled(quantity: Quantity, values: Sequence[float | None]) -> tuple[str, float]:
    """(axis label, factor) for values of `quantity`: the label with the SI prefix that shows
    the largest of them between 1 and 1000, "goodput (Mbit/s)"."""
    present = [abs(v) for v in values if v is not None]
    unit, factor = scaled_unit(quantity.unit, max(present) if present else None)
    return heading(quantity, unit), factor


def times(values: Sequence[float | None], factor: float) -> list[float | None]:
    return [None if v is None else v * factor for v in values]


def cdf(values: Sequence[float | None]) -> tuple[list[float], list[float]]:
    """The empirical CDF as steps: sorted values and the fraction of values at or below each."""
    ordered = sorted(v for v in values if v is not None)
    n = len(ordered)
    return ordered, [(k + 1) / n for k in range(n)]


def log_scale(values: Sequence[float]) -> bool:
    """Whether a numeric axis reads better in log scale: its values are positive, span at least
    a decade and are closer to evenly spaced in log than in linear terms (0.25, 1, 4 BDP; 5 to
    200 packets), not (1, 2, ..., 10 flows)."""
    points = sorted(set(values))
    if len(points) < 2 or points[0] <= 0 or points[-1] / points[0] < 10:
        return False

    def unevenness(xs: list[float]) -> float:
        gaps = [b - a for a, b in zip(xs, xs[1:], strict=False)]
        mean = sum(gaps) / len(gaps)
        return math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps)) / mean

    return unevenness([math.log(p) for p in points]) <= unevenness(points)
