"""The figures of an experiment's matrix, from its report (GET /v1/experiments/{id}/report)
and comparisons (GET .../compare), and of comparisons across experiments (GET /v1/compare):

- a metric against an axis, median ± SIQR over repetitions, a series per value of another axis
  (seed 000 Figs. 5-9: metric against buffer per algorithm; seed 001 Figs. 1, 8, 15:
  utilization or fairness against buffer or the number of flows; seed 004 Figs. 2-4), on a
  numeric axis when the axis values are quantities (log scale where they span decades), else
  as grouped points without lines;
- the same metric as box plots over the repetitions;
- per scheme (a flow's algorithm): goodput against 95th-percentile RTT, each flow of each
  run a point, with an ellipse of one standard deviation per scheme and the delay axis
  reversed so that better is up and right (after Pantheon's throughput-delay plots, Yan et al.,
  USENIX ATC 2018), and the CDF of per-flow goodput; one of each per combination of the
  matrix's other axes (Pantheon compares schemes under one condition at a time)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ccbench.plots.axes import MatrixAxis, file_value, matrix_axis, short_names
from ccbench.plots.conditions import SEPARATOR, conditions, stored_spec
from ccbench.plots.model import CDF, Axis, FigureData, Panel, Trace, cdf, log_scale, scaled, times
from schemas.metrics import DIMENSIONLESS, METRICS, Quantity

# Pantheon draws one standard deviation of each scheme's runs.
ELLIPSE_SIGMAS = 1.0
ELLIPSE_POINTS = 73  # every 5 degrees, closed
# A numeric matrix axis with at most this many values has a tick at each.
MAX_TICKS = 12
# With more combinations of the other axes than this, the scheme figures pool every run.
MAX_CONDITIONS = 12


def _key(value: Any) -> str:
    return repr(value)


def _axes(report: Mapping[str, Any]) -> dict[str, MatrixAxis]:
    """The report's axes, with their values in the matrix's own order (point indexes)."""
    paths: list[str] = list(report.get("axes") or [])
    runs = sorted(report.get("runs") or [], key=lambda r: r.get("point_index", 0))
    shorts = short_names(paths)
    out = {}
    for path in paths:
        seen: dict[str, Any] = {}
        for run in runs:
            value = (run.get("axis_values") or {}).get(path)
            seen.setdefault(_key(value), value)
        out[path] = matrix_axis(path, list(seen.values()), shorts[path])
    return out


def matrix_subtitle(submission: Mapping[str, Any] | None) -> str:
    """The conditions a matrix keeps fixed (its base less what its axes vary), or an
    experiment's."""
    if not submission:
        return ""
    if submission.get("kind") == "matrix":
        varying = [a["path"] for a in submission.get("axes") or []]
        return conditions(stored_spec(submission.get("base") or {}), None, varying)
    return conditions(stored_spec(submission), None)


def _x_axis(axis: MatrixAxis, values: Sequence[Any]) -> tuple[Axis, list[Any]]:
    """The figure axis of a matrix axis and the x coordinate of each value: numbers in the
    axis's unit with an SI prefix, or category labels."""
    if axis.unit is not None:
        numbers = [axis.number(v) for v in values]
        quantity = Quantity(axis.path, axis.unit, axis.label, axis.path)
        label, factor = scaled(quantity, numbers)
        xs = times(numbers, factor)
        present = sorted({x for x in xs if x is not None})
        ticks = tuple(present) if len(present) <= MAX_TICKS else ()
        return Axis(label, "log" if log_scale(present) else "linear", ticks=ticks), xs
    texts = [axis.text(v) for v in values]
    return Axis(axis.label, "category", categories=tuple(dict.fromkeys(texts))), texts


def comparison_figure_data(
    comparison: Mapping[str, Any], report: Mapping[str, Any] | None = None, subtitle: str = ""
) -> FigureData:
    """GET /v1/experiments/{id}/compare as a figure: the metric's median with SIQR error bars
    against axis `x`, a series per value of axis `by`. `report` gives the axes' short names
    for the figure's name (file names); without it the field names are used."""
    metric = METRICS[comparison["metric"]]
    x_path, by_path = comparison["x"], comparison.get("by")
    shorts = short_names(list(report.get("axes") or []) if report else [x_path, by_path or ""])
    points = [p for s in comparison["series"] for p in s["points"]]
    x_axis = matrix_axis(x_path, [p["x"] for p in points], shorts.get(x_path, x_path))
    by_axis = (
        matrix_axis(by_path, [s["by"] for s in comparison["series"]], shorts.get(by_path, by_path))
        if by_path
        else None
    )
    shown = [p for p in points if p["median"] is not None]
    y_label, y_factor = scaled(metric, [p["median"] + (p["siqr"] or 0) for p in shown])
    axis, _ = _x_axis(x_axis, [p["x"] for p in points])
    traces = []
    for k, series in enumerate(comparison["series"]):
        kept = [p for p in series["points"] if p["median"] is not None]
        _, xs = _x_axis(x_axis, [p["x"] for p in kept])
        traces.append(
            Trace(
                by_axis.text(series["by"]) if by_axis else "all runs",
                xs,
                [p["median"] * y_factor for p in kept],
                style="errorbars",
                colour=k,
                error=[(p["siqr"] or 0) * y_factor for p in kept],
                hover=[f"n = {p['n']}" for p in kept],
            )
        )
    name = f"{metric.name}_vs_{x_axis.short}" + (f"_by_{by_axis.short}" if by_axis else "")
    counts = sorted({p["n"] for p in shown})
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}" if counts else "0"
    return FigureData(
        name,
        f"{metric.label} against {x_axis.label}",
        SEPARATOR.join(s for s in (subtitle, f"median ± SIQR, n = {n}") if s),
        axis,
        [Panel(Axis(y_label), traces)],
        legend=by_axis is not None,
        legend_title=by_axis.label if by_axis else "",
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cross_x(
    comparison: Mapping[str, Any], points: Sequence[Mapping[str, Any]], short: str
) -> tuple[Axis, Callable[[Mapping[str, Any]], Any]]:
    """The x axis of a comparison across experiments and each point's x on it. Numbers (spec
    fields are stored in SI units: `x_unit`) and quantities as matrix axes write them
    (`0.5bdp`, `25pkt`, lists of flows) lie on a numeric axis; anything else (algorithms,
    experiments, flows by index) is a category, shown by its label."""
    path, values = comparison["x"], [p["x"] for p in points]
    matrix = matrix_axis(path, values, short)
    unit: str | None = None
    number: Callable[[Any], float | None] = matrix.number
    if path != "flow" and values and all(_is_number(v) for v in values):
        unit, number = comparison.get("x_unit") or DIMENSIONLESS, float
    elif path != "flow":
        unit = matrix.unit
    if unit is None:
        labels = tuple(dict.fromkeys(str(p["label"]) for p in points))
        return Axis(matrix.label, "category", categories=labels), lambda p: p["label"]
    numbers = [number(v) for v in values]
    label, factor = scaled(Quantity(path, unit, matrix.label, path), numbers)
    present = sorted({n * factor for n in numbers if n is not None})
    ticks = tuple(present) if len(present) <= MAX_TICKS else ()
    axis = Axis(label, "log" if log_scale(present) else "linear", ticks=ticks)

    def x_of(point: Mapping[str, Any]) -> float | None:
        n = number(point["x"])
        return None if n is None else n * factor

    return axis, x_of


def cross_comparison_figure_data(comparison: Mapping[str, Any], subtitle: str = "") -> FigureData:
    """GET /v1/compare (runs, matrix points and experiments of any teams that shared them) as a
    figure: the metric's median with SIQR error bars against `x` (numeric where the values are
    quantities, as a matrix's figures), a series per value of `by` (per experiment when
    several are compared). Without a `subtitle` it names the compared experiments unless the
    series already do."""
    metric = METRICS[comparison["metric"]]
    x_path, by_path = comparison["x"], comparison.get("by")
    shorts = short_names([x_path, by_path] if by_path and by_path != x_path else [x_path])
    points = [p for s in comparison["series"] for p in s["points"]]
    axis, x_of = _cross_x(comparison, points, shorts[x_path])
    by_axis = (
        matrix_axis(by_path, [s["by"] for s in comparison["series"]], shorts[by_path])
        if by_path
        else None
    )
    shown = [p for p in points if p["median"] is not None]
    y_label, y_factor = scaled(metric, [p["median"] + (p["siqr"] or 0) for p in shown])
    traces = []
    for k, series in enumerate(comparison["series"]):
        kept = [p for p in series["points"] if p["median"] is not None]
        # Quantities as a matrix's legends show them ("0.5 BDP"); else the comparison's label.
        written = by_axis is not None and by_axis.unit is not None and not _is_number(series["by"])
        traces.append(
            Trace(
                by_axis.text(series["by"]) if by_axis and written else series["label"],
                [x_of(p) for p in kept],
                [p["median"] * y_factor for p in kept],
                style="errorbars",
                colour=k,
                error=[(p["siqr"] or 0) * y_factor for p in kept],
                hover=[f"{p['label']}: n = {p['n']}" for p in kept],
            )
        )
    if not subtitle and by_path != "experiment":
        subtitle = ", ".join(f"{e['name']} ({e['short_id']})" for e in comparison["experiments"])
    counts = sorted({p["n"] for p in shown})
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}" if counts else "0"
    per_flow = comparison.get("scope") == "flow"
    name = f"{metric.name}{'_per_flow' if per_flow else ''}_vs_{shorts[x_path]}" + (
        f"_by_{shorts[by_path]}" if by_path else ""
    )
    x_label = matrix_axis(x_path, [p["x"] for p in points], shorts[x_path]).label
    return FigureData(
        name,
        f"{'per-flow ' if per_flow else ''}{metric.label} against {x_label}",
        SEPARATOR.join(s for s in (subtitle, f"median ± SIQR, n = {n}") if s),
        axis,
        [Panel(Axis(y_label), traces)],
        legend=by_axis is not None,
        legend_title=by_axis.label if by_axis else "",
    )


def _done(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    runs = [r for r in report.get("runs") or [] if r.get("status") == "done"]
    return sorted(runs, key=lambda r: (r.get("point_index", 0), r.get("repetition", 0)))


def box_figure_data(
    report: Mapping[str, Any], metric_name: str, x: str, by: str | None, subtitle: str = ""
) -> FigureData:
    """`metric_name` (an aggregate metric) over the repetitions of each matrix point as box
    plots: one box per value of axis `x`, grouped by the values of axis `by`."""
    metric = METRICS[metric_name]
    axes = _axes(report)
    x_axis, by_axis = axes[x], axes[by] if by else None
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    x_order: dict[str, Any] = {}
    by_order: dict[str, Any] = {}
    for run in sorted(report.get("runs") or [], key=lambda r: r.get("point_index", 0)):
        values = run.get("axis_values") or {}
        x_order.setdefault(_key(values.get(x)), values.get(x))
        by_order.setdefault(_key(values.get(by) if by else None), values.get(by) if by else None)
    for run in _done(report):
        values = run.get("axis_values") or {}
        value = (run.get("aggregate") or {}).get(metric.name)
        if value is not None:
            by_value = values.get(by) if by else None
            cells[_key(by_value)][_key(values.get(x))].append(float(value))
    y_label, y_factor = scaled(metric, [v for c in cells.values() for vs in c.values() for v in vs])
    categories = tuple(x_axis.text(v) for v in x_order.values())
    traces = []
    for k, (by_key, by_value) in enumerate(by_order.items()):
        per_x = cells.get(by_key, {})
        samples = [[v * y_factor for v in per_x.get(x_key, [])] for x_key in x_order]
        traces.append(
            Trace(
                by_axis.text(by_value) if by_axis else "all runs",
                list(categories),
                [float(np.median(s)) if s else None for s in samples],
                style="box",
                colour=k,
                samples=samples,
            )
        )
    name = f"{metric.name}_box_vs_{x_axis.short}" + (f"_by_{by_axis.short}" if by_axis else "")
    box = "over repetitions: quartiles, whiskers to 1.5 IQR"
    return FigureData(
        name,
        f"{metric.label} against {x_axis.label}",
        SEPARATOR.join(s for s in (subtitle, box) if s),
        Axis(x_axis.label, "category", categories=categories),
        [Panel(Axis(y_label), traces)],
        legend=by_axis is not None,
        legend_title=by_axis.label if by_axis else "",
    )


def _ellipse(
    xs: Sequence[float], ys: Sequence[float], log_x: bool
) -> tuple[list[float], list[float]] | None:
    """One standard deviation of the points' bivariate spread: the ellipse of their covariance
    around their mean (computed in the axis's own terms, log10 x on a log axis)."""
    if len(xs) < 3:
        return None
    u = np.log10(np.asarray(xs)) if log_x else np.asarray(xs, dtype=float)
    points = np.vstack([u, np.asarray(ys, dtype=float)])
    centre = points.mean(axis=1)
    cov = np.cov(points)
    eigenvalues, eigenvectors = np.linalg.eigh(cov)
    radii = ELLIPSE_SIGMAS * np.sqrt(np.clip(eigenvalues, 0.0, None))
    angles = np.linspace(0.0, 2 * math.pi, ELLIPSE_POINTS)
    circle = np.vstack([np.cos(angles), np.sin(angles)])
    curve = centre[:, None] + eigenvectors @ (radii[:, None] * circle)
    x = 10 ** curve[0] if log_x else curve[0]
    return [float(v) for v in x], [float(v) for v in curve[1]]


def _conditions(
    report: Mapping[str, Any], axes: Mapping[str, MatrixAxis]
) -> list[tuple[str, str, dict[str, Any]]]:
    """(file-name part, subtitle part, axis values) of each combination of the axes that are
    not a flow's algorithm, in the matrix's order; one pooled entry without such axes or with
    more than MAX_CONDITIONS combinations."""
    other = [p for p in axes if not p.endswith("algorithm")]
    combos: dict[str, dict[str, Any]] = {}
    for run in sorted(report.get("runs") or [], key=lambda r: r.get("point_index", 0)):
        values = run.get("axis_values") or {}
        chosen = {p: values.get(p) for p in other}
        combos.setdefault(_key(chosen), chosen)
    if not other or len(combos) > MAX_CONDITIONS:
        return [("", "", {})]
    out = []
    for chosen in combos.values():
        part = "_".join(f"{axes[p].short}-{file_value(v)}" for p, v in chosen.items())
        shown = ", ".join(f"{axes[p].label} {axes[p].text(v)}" for p, v in chosen.items())
        out.append((part, shown, chosen))
    return out


# A point of a scheme: (delay, goodput, what it is) of one run.
_Point = tuple[float | None, float, str]


def scheme_figure_data(report: Mapping[str, Any], subtitle: str = "") -> list[FigureData]:
    """Per combination of the matrix's other axes: goodput against 95th-percentile RTT per
    scheme, one point per finished run (the scheme's forward flows: their goodput summed, their
    95th-percentile RTTs averaged), with an ellipse per scheme; and the CDF of per-flow goodput
    per scheme. A scheme keeps its colour in every figure."""
    goodput, delay = METRICS["goodput_bps"], METRICS["rtt_p95_s"]
    axes = _axes(report)
    forward = {
        r["run_id"]: [
            f
            for f in r.get("flows") or []
            if f.get("direction", "forward") == "forward" and f.get(goodput.name) is not None
        ]
        for r in _done(report)
    }
    schemes = list(dict.fromkeys(str(f["algorithm"]) for fs in forward.values() for f in fs))
    figures = []
    for part, shown, chosen in _conditions(report, axes):
        runs = [
            r
            for r in _done(report)
            if all(_key((r.get("axis_values") or {}).get(p)) == _key(v) for p, v in chosen.items())
        ]
        per_run: dict[str, list[_Point]] = defaultdict(list)
        per_flow: dict[str, list[float]] = defaultdict(list)
        for run in runs:
            where = ", ".join(
                f"{axes[p].label} {axes[p].text(v)}"
                for p, v in (run.get("axis_values") or {}).items()
                if p in axes
            )
            hover = f"{where}, repetition {run.get('repetition', 0) + 1}".lstrip(", ")
            for scheme in schemes:
                flows = [f for f in forward[run["run_id"]] if f["algorithm"] == scheme]
                if not flows:
                    continue
                delays = [f[delay.name] for f in flows if f.get(delay.name) is not None]
                mean_delay = sum(delays) / len(delays) if delays else None
                per_run[scheme].append((mean_delay, sum(f[goodput.name] for f in flows), hover))
                per_flow[scheme] += [f[goodput.name] for f in flows]
        if not per_flow:
            continue
        name_part = f"_{part}" if part else ""
        sub = SEPARATOR.join(s for s in (subtitle, shown) if s)
        figures.append(_throughput_delay(per_run, schemes, goodput, delay, name_part, sub))
        label, factor = scaled(goodput, [g for gs in per_flow.values() for g in gs])
        traces = []
        for scheme, values in per_flow.items():
            x, y = cdf([g * factor for g in values])
            traces.append(Trace(scheme, x, list(y), style="step", colour=schemes.index(scheme)))
        figures.append(
            FigureData(
                f"goodput_cdf{name_part}",
                f"per-flow {goodput.label}: CDF per scheme",
                sub,
                Axis(label),
                [Panel(CDF, traces)],
                legend_title="scheme",
            )
        )
    return figures


def _throughput_delay(
    points: Mapping[str, list[_Point]],
    schemes: list[str],
    goodput: Quantity,
    delay: Quantity,
    name_part: str,
    subtitle: str,
) -> FigureData:
    with_delay = {
        s: [(d, g, h) for d, g, h in ps if d is not None and d > 0] for s, ps in points.items()
    }
    delays = [d for ps in with_delay.values() for d, _, _ in ps]
    x_label, x_factor = scaled(delay, delays)
    y_label, y_factor = scaled(goodput, [g for ps in with_delay.values() for _, g, _ in ps])
    log_x = log_scale([d * x_factor for d in delays])
    traces = []
    for scheme, ps in with_delay.items():
        k = schemes.index(scheme)
        xs = [d * x_factor for d, _, _ in ps]
        ys = [g * y_factor for _, g, _ in ps]
        traces.append(
            Trace(scheme, xs, list(ys), style="markers", colour=k, hover=[h for _, _, h in ps])
        )
        ellipse = _ellipse(xs, ys, log_x)
        if ellipse is not None:
            curve_y: list[float | None] = list(ellipse[1])
            traces.append(
                Trace(
                    f"{scheme} (1 σ)",
                    ellipse[0],
                    curve_y,
                    style="outline",
                    colour=k,
                    legend=False,
                )
            )
    return FigureData(
        f"throughput_delay{name_part}",
        f"{goodput.label} against {delay.label} per scheme",
        subtitle,
        Axis(x_label, "log" if log_x else "linear", reversed=True),
        [Panel(Axis(y_label), traces)],
        legend_title="scheme",
    )


def experiment_figure_data(
    report: Mapping[str, Any],
    comparisons: Sequence[Mapping[str, Any]],
    submission: Mapping[str, Any] | None = None,
) -> list[FigureData]:
    """Every figure of a matrix for files: each comparison (metric against x by `by`) with the
    same metric's box plots, then the scheme figures."""
    subtitle = matrix_subtitle(submission)
    figures = []
    for comparison in comparisons:
        figures.append(comparison_figure_data(comparison, report, subtitle))
        figures.append(
            box_figure_data(
                report, comparison["metric"], comparison["x"], comparison.get("by"), subtitle
            )
        )
    figures += scheme_figure_data(report, subtitle)
    return [f for f in figures if f.has_data()]
