"""The figures of `model.py` as Plotly figure JSON, drawn in the browser by plotly.js (served by
the API from the `plotly` package, so pages work without Internet access)."""

from __future__ import annotations

from typing import Any

from ccbench.plots.model import FigureData, Trace


def _trace(trace: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "scatter", "name": trace.name, "x": trace.x, "y": trace.y}
    if trace.style == "markers":
        drops = trace.name == "drops"
        out["mode"] = "markers"
        out["marker"] = {"symbol": "x", "color": "red", "size": 7} if drops else {"size": 3}
    elif trace.style == "errorbars":
        out["mode"] = "lines+markers"
        out["error_y"] = {"type": "data", "array": trace.error, "visible": True}
    else:
        out["mode"] = "lines"
        out["line"] = {"width": 1}
        if trace.style == "step":
            out["line"]["shape"] = "hv"
        elif trace.style == "dashed":
            out["line"]["dash"] = "dash"
    return out


def plotly_figure(data: FigureData) -> dict[str, Any]:
    return {
        "name": data.name,
        "data": [_trace(t) for t in data.traces],
        "layout": {
            "title": {"text": data.title},
            "xaxis": {
                "title": {"text": data.xlabel},
                **({"type": "category"} if data.categorical_x else {}),
            },  # fmt: skip
            "yaxis": {"title": {"text": data.ylabel}},
            "showlegend": data.legend,
            "margin": {"t": 40, "r": 10},
            "height": 360,
        },
    }
