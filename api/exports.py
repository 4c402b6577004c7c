"""Tables of an experiment for spreadsheets and dataframes (CSV), and one metric against one
matrix axis, a series per value of another axis, with median and SIQR over repetitions."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel

from api.errors import ValidationFailed
from ccbench.analysis.metrics import median, siqr
from schemas import AggregateMetrics, ExperimentReport

Table = Literal["runs", "flows"]


def _cell(value: Any) -> Any:
    return "" if value is None else value


def export_csv(report: ExperimentReport, table: Table) -> str:
    """`runs`: one row per run with its axes and aggregate metrics; `flows`: one row per flow
    with its run's axes and the flow's metrics."""
    out = io.StringIO()
    writer = csv.writer(out)
    axes = report.axes
    if table == "runs":
        metrics = list(AggregateMetrics.model_fields)
        writer.writerow(["run_id", "status", "point_index", "repetition", "seed", *axes, *metrics])
        for run in report.runs:
            values = run.aggregate.model_dump() if run.aggregate else {}
            writer.writerow([run.run_id, run.status, run.point_index, run.repetition,
                             _cell(run.seed), *(_cell(run.axis_values.get(a)) for a in axes),
                             *(_cell(values.get(k)) for k in metrics)])  # fmt: skip
    else:
        columns: list[str] = []
        for run in report.runs:
            for flow in run.flows:
                for key in flow.model_dump():
                    if key not in columns and key not in ("flow", "algorithm"):
                        columns.append(key)
        writer.writerow(["run_id", "status", "point_index", "repetition", *axes, "flow",
                         "algorithm", *columns])  # fmt: skip
        for run in report.runs:
            for flow in run.flows:
                values = flow.model_dump()
                row = [run.run_id, run.status, run.point_index, run.repetition]
                row += [_cell(run.axis_values.get(a)) for a in axes]
                row += [flow.flow, flow.algorithm, *(_cell(values.get(c)) for c in columns)]
                writer.writerow(row)
    return out.getvalue()


class ComparePoint(BaseModel):
    x: Any
    median: float | None
    siqr: float | None
    n: int


class CompareSeries(BaseModel):
    by: Any
    points: list[ComparePoint]


class Comparison(BaseModel):
    metric: str
    x: str
    by: str | None
    series: list[CompareSeries]


def _key(value: Any) -> str:
    return repr(value)


def compare(report: ExperimentReport, metric: str, x: str, by: str | None) -> Comparison:
    """`metric` (an aggregate metric) against axis `x`, one series per value of axis `by`,
    median and SIQR over the finished repetitions of each point."""
    errors = []
    if metric not in AggregateMetrics.model_fields:
        errors.append({"field": "metric", "reason": f"unknown metric {metric!r}; one of: "
                       + ", ".join(AggregateMetrics.model_fields)})  # fmt: skip
    for name, axis in (("x", x), ("by", by)):
        if axis is not None and axis not in report.axes:
            errors.append({"field": name, "reason": f"{axis!r} is not an axis of this "
                           f"experiment (axes: {', '.join(report.axes) or 'none'})"})  # fmt: skip
    if errors:
        raise ValidationFailed(
            "invalid comparison: " + "; ".join(f"{e['field']}: {e['reason']}" for e in errors),
            errors=errors,
        )
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    labels: dict[str, Any] = {}
    # Points and series follow the matrix's own order of values (its point indexes), not
    # the shuffled execution order.
    x_order: dict[str, int] = {}
    by_order: dict[str, int] = {}
    for run in sorted(report.runs, key=lambda r: r.point_index):
        x_order.setdefault(_key(run.axis_values.get(x)), len(x_order))
        by_order.setdefault(_key(run.axis_values.get(by) if by else None), len(by_order))
    for run in report.runs:
        by_value = run.axis_values.get(by) if by else None
        x_value = run.axis_values.get(x)
        labels[_key(by_value)], labels[_key(x_value)] = by_value, x_value
        cell = values[_key(by_value)][_key(x_value)]
        value = getattr(run.aggregate, metric) if run.aggregate else None
        if run.status == "done" and value is not None:
            cell.append(float(value))
    series = []
    for by_key in sorted(values, key=lambda k: by_order.get(k, 0)):
        points = values[by_key]
        series.append(CompareSeries(
            by=labels[by_key],
            points=[ComparePoint(x=labels[x_key], median=median(points[x_key]),
                                 siqr=siqr(points[x_key]), n=len(points[x_key]))
                    for x_key in sorted(points, key=lambda k: x_order.get(k, 0))],
        ))  # fmt: skip
    return Comparison(metric=metric, x=x, by=by, series=series)
