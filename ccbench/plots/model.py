"""What each figure shows, independent of how it is drawn: the CLI renders these with matplotlib
(`figures.py`), the result pages with Plotly in the browser (`web.py`). One list of figures, so
static images and pages cannot drift apart.

- per run (seed 000 Figs. 4, 14-26; seed 002 Figs. 2-15): goodput, cwnd (with ssthresh) and
  RTT against time per flow, RTT against cwnd, the bottleneck queue against time with its drops
  marked, Jain's index per interval, and the controller's own state where the agent records it;
- per matrix: one metric against one axis, a series per value of another axis, median with
  SIQR error bars (seed 000 Figs. 5-9, seed 001 Figs. 7-8, seed 004 Figs. 2-4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from schemas.metrics import DIMENSIONLESS, METRICS, SECOND, display_unit, heading

Style = Literal["line", "step", "dashed", "markers", "errorbars"]

# The time column of a controller-state series; every other column is a state variable.
_STATE_EXCLUDED = {"t_s"}


@dataclass(frozen=True)
class Trace:
    name: str
    x: list[Any]
    y: list[float]
    style: Style = "line"
    error: list[float] | None = None  # half-widths, for style "errorbars"


@dataclass(frozen=True)
class FigureData:
    name: str
    title: str
    xlabel: str
    ylabel: str
    traces: list[Trace] = field(default_factory=list)
    categorical_x: bool = False
    legend: bool = True


def _index(flow: dict[str, Any]) -> int:
    """A flow's index in a run's detail (`flow_index`) or in a report (`flow`)."""
    return int(flow["flow_index"] if "flow_index" in flow else flow["flow"])


def flow_label(flow: dict[str, Any]) -> str:
    return f"flow {_index(flow)} {flow['algorithm']}"


def _points(
    xs: list[Any], ys: list[Any], scale: float = 1.0
) -> tuple[list[Any], list[float]] | None:
    pairs = [
        (x, y * scale) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None
    ]
    if not pairs:
        return None
    return [p[0] for p in pairs], [p[1] for p in pairs]


def run_figure_data(run: dict[str, Any]) -> list[FigureData]:
    """Figures of one run (the JSON of GET /v1/runs/{id}); figures without data are left out."""
    series: dict[str, dict[str, list[Any]]] = run.get("series") or {}
    flows = sorted(run.get("flows") or [], key=_index)
    figures: list[FigureData] = []

    def per_flow(
        name: str, title: str, source: str, column: str, ylabel: str, scale: float = 1.0
    ) -> FigureData:
        traces = []
        for flow in flows:
            data = series.get(f"flow-{_index(flow)}.{source}") or {}
            points = _points(data.get("t_s") or [], data.get(column) or [], scale)
            if points:
                traces.append(Trace(flow_label(flow), *points))
        return FigureData(name, title, "time (s)", ylabel, traces)

    goodput = METRICS["goodput_bps"]
    figures.append(
        per_flow(
            "goodput",
            goodput.label,
            "goodput",
            goodput.name,
            heading(goodput),
            display_unit(goodput.unit)[1],
        )
    )
    cwnd = per_flow("cwnd", "cwnd and ssthresh", "tcp_info", "cwnd_pkts", "cwnd (packets)")
    for flow in flows:
        data = series.get(f"flow-{_index(flow)}.tcp_info") or {}
        points = _points(data.get("t_s") or [], data.get("ssthresh_pkts") or [])
        if points:
            cwnd.traces.append(Trace(f"{flow_label(flow)} ssthresh", *points, style="dashed"))
    figures.append(cwnd)
    # The sender's smoothed RTT samples (the series behind rtt_mean_s), in the unit RTTs show in.
    rtt_unit, rtt_factor = display_unit(SECOND)
    rtt_label = f"smoothed RTT ({rtt_unit})"
    figures.append(per_flow("rtt", "smoothed RTT", "tcp_info", "srtt_s", rtt_label, rtt_factor))

    scatter = FigureData("rtt_vs_cwnd", "RTT against cwnd", "cwnd (packets)", rtt_label)
    for flow in flows:
        data = series.get(f"flow-{_index(flow)}.tcp_info") or {}
        points = _points(data.get("cwnd_pkts") or [], data.get("srtt_s") or [], rtt_factor)
        if points:
            scatter.traces.append(Trace(flow_label(flow), *points, style="markers"))
    figures.append(scatter)

    queue = series.get("queue") or {}
    queue_figure = FigureData("queue", "bottleneck queue", "time (s)", "queue (packets)")
    t, q = queue.get("t_s") or [], queue.get("qlen_pkts") or []
    if t:
        queue_figure.traces.append(Trace("queue", t, q, style="step"))
        drops = queue.get("drops") or []
        marks = [t[k] for k in range(1, len(drops)) if drops[k] > drops[k - 1]]
        if marks:
            top = max(q) if q else 1
            queue_figure.traces.append(Trace("drops", marks, [top * 1.05] * len(marks), "markers"))
    figures.append(queue_figure)

    fairness = series.get("fairness") or {}
    jain = METRICS["jain_index"]
    points = _points(fairness.get("t_s") or [], fairness.get(jain.name) or [])
    figures.append(
        FigureData(
            "fairness",
            f"{jain.label} per interval",
            "time (s)",
            heading(jain),
            [Trace(jain.label, *points)] if points else [],
            legend=False,
        )
    )

    # Controller state: BPF controllers (issue 4) and userspace agents write `flow-{i}.cc_state`,
    # one column per variable of the algorithm; built-in kernel controllers expose only tcp_info.
    # One figure per variable, a trace per flow that has it (scales differ between variables).
    states = {_index(f): series.get(f"flow-{_index(f)}.cc_state") or {} for f in flows}
    for column in sorted({c for data in states.values() for c in data} - _STATE_EXCLUDED):
        figure = FigureData(f"state_{column}", f"controller state: {column}", "time (s)", column)
        for flow in flows:
            data = states[_index(flow)]
            points = _points(data.get("t_s") or [], data.get(column) or [])
            if points:
                figure.traces.append(Trace(flow_label(flow), *points, style="step"))
        figures.append(figure)
    return [f for f in figures if f.traces]


def comparison_figure_data(comparison: dict[str, Any]) -> FigureData:
    """GET /v1/experiments/{id}/compare: median with SIQR error bars, a series per `by` value,
    in the metric's own (SI) unit."""
    name = comparison["metric"]
    metric = METRICS.get(name)
    label = metric.label if metric else name
    unit = f" ({metric.unit})" if metric and metric.unit != DIMENSIONLESS else ""
    figure = FigureData(
        "compare",
        f"{label} against {comparison['x']}",
        comparison["x"],
        f"{label}{unit}, median ± SIQR",
        categorical_x=True,
        legend=bool(comparison.get("by")),
    )
    for series in comparison["series"]:
        points = [p for p in series["points"] if p["median"] is not None]
        figure.traces.append(
            Trace(
                f"{comparison['by']} = {series['by']}" if comparison.get("by") else "all runs",
                [str(p["x"]) for p in points],
                [p["median"] for p in points],
                style="errorbars",
                error=[p["siqr"] or 0 for p in points],
            )
        )
    return figure


def cross_comparison_figure_data(comparison: dict[str, Any]) -> FigureData:
    """GET /v1/compare (across experiments): as `comparison_figure_data`, with the points and
    series named by their labels (values with units, experiments by name and short id)."""
    return comparison_figure_data(
        {
            "metric": comparison["metric"],
            "x": comparison["x"],
            "by": comparison.get("by"),
            "series": [
                {"by": s["label"],
                 "points": [{**p, "x": p["label"]} for p in s["points"]]}
                for s in comparison["series"]
            ],
        }
    )  # fmt: skip
