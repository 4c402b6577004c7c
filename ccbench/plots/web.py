"""The figures of `model.py` as Plotly figure JSON, drawn in the browser by plotly.js (served by
the API from the `plotly` package, so pages work without Internet access), with the same
palette, markers and line styles as the files (`figures.py`)."""

from __future__ import annotations

from typing import Any

from ccbench.plots.model import (
    PALETTE,
    Axis,
    FigureData,
    Trace,
    colour_of,
    dense,
    marker_of,
)

# matplotlib's markers (model.MARKERS) by their Plotly names.
_SYMBOLS = {
    "o": "circle",
    "s": "square",
    "^": "triangle-up",
    "D": "diamond",
    "v": "triangle-down",
    "P": "cross",
    "X": "x",
    "x": "x",
    "*": "star",
}
PANEL_HEIGHT_PX = 300


def _symbol(trace: Trace) -> str:
    return _SYMBOLS[marker_of(trace)]


def _trace(trace: Trace, categorical: bool, yaxis: str) -> dict[str, Any]:
    colour = colour_of(trace)
    out: dict[str, Any] = {
        "name": trace.name,
        "showlegend": trace.legend,
        "yaxis": yaxis,
        "legendgroup": trace.name.removesuffix(" (1 σ)"),
    }
    if trace.style == "box":
        samples = trace.samples or []
        out.update(
            type="box",
            x=[x for x, s in zip(trace.x, samples, strict=True) for _ in s],
            y=[v for s in samples for v in s],
            marker={"color": colour, "symbol": _symbol(trace), "size": 4},
            line={"width": 1},
            boxpoints="outliers",
            offsetgroup=trace.name,
        )
        return out
    out.update(type="scatter", x=trace.x, y=trace.y)
    if trace.hover:
        out["text"] = trace.hover
    if trace.style in ("markers", "events"):
        out["mode"] = "markers"
        symbol = _symbol(trace)
        out["marker"] = {
            "color": colour,
            "symbol": symbol,
            "size": 7 if trace.style == "events" or not dense(trace) else 4,
        }
    elif trace.style == "points":
        # Every measurement stays a vertex (Plotly drops near-collinear ones by default).
        out["mode"] = "lines+markers"
        out["marker"] = {"color": colour, "symbol": _symbol(trace), "size": 7}
        out["line"] = {"color": colour, "width": 1.5, "simplify": False}
    elif trace.style == "errorbars":
        out["mode"] = "markers" if categorical else "lines+markers"
        out["marker"] = {"color": colour, "symbol": _symbol(trace), "size": 7}
        out["line"] = {"color": colour, "width": 1.5}
        out["error_y"] = {"type": "data", "array": trace.error, "visible": True, "width": 4}
    else:
        out["mode"] = "lines"
        line: dict[str, Any] = {"color": colour, "width": 1.5}
        if trace.style == "step":
            line["shape"] = "hv"
        elif trace.style == "dashed":
            line["dash"] = "dash"
        elif trace.style == "reference":
            line["dash"] = "dot"
        elif trace.style == "aggregate":
            line["width"] = 2.5
        elif trace.style == "outline":
            line["width"] = 1
        out["line"] = line
    return out


def _axis(axis: Axis) -> dict[str, Any]:
    out: dict[str, Any] = {"title": {"text": axis.label}, "type": axis.scale, "zeroline": False}
    if axis.ticks:
        out.update(tickvals=list(axis.ticks), ticktext=[f"{v:g}" for v in axis.ticks])
    if axis.scale == "category":
        out.update(categoryorder="array", categoryarray=list(axis.categories))
    if axis.reversed:
        out["autorange"] = "reversed"
    if axis.range is not None:
        out["range"] = list(axis.range)
    elif axis.from_zero:
        out["rangemode"] = "tozero"
    return out


def plotly_figure(data: FigureData) -> dict[str, Any]:
    n = len(data.panels)
    categorical = data.x.scale == "category"
    layout: dict[str, Any] = {
        "title": {"text": data.title, "subtitle": {"text": data.subtitle}},
        "xaxis": {**_axis(data.x), "anchor": f"y{n}" if n > 1 else "y"},
        "showlegend": data.legend,
        "legend": {"title": {"text": data.legend_title}},
        "colorway": list(PALETTE),
        "margin": {"t": 70, "r": 10},
        "height": PANEL_HEIGHT_PX * n + 80,
        "boxmode": "group",
        "scattermode": "group" if categorical else "overlay",
    }
    traces = []
    gap = 0.08
    for k, panel in enumerate(data.panels):
        name = "yaxis" if k == 0 else f"yaxis{k + 1}"
        top = 1 - k * (1 + gap) / n
        layout[name] = {
            **_axis(panel.y),
            "domain": [max(0.0, top - (1 - gap) / n), top],
            "anchor": "x",
        }
        ref = "y" if k == 0 else f"y{k + 1}"
        traces += [_trace(t, categorical, ref) for t in panel.traces]
    return {"name": data.name, "data": traces, "layout": layout}
