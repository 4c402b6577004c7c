"""Tables of an experiment for spreadsheets and dataframes (CSV), and one metric against one
matrix axis, a series per value of another axis, with median and SIQR over repetitions."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel

from ccbench.analysis.metrics import median, siqr
from ccbench.errors import ValidationFailed
from schemas import ExperimentReport, FlowMetrics
from schemas.metrics import metrics_of

# Metric columns, named as the metrics, in the catalogue's order (a flow's direction stays
# where the report model has it, between its metrics).
AGGREGATE_COLUMNS = [m.name for m in metrics_of("aggregate")]
FLOW_COLUMNS = [name for name in FlowMetrics.model_fields if name not in ("flow", "algorithm")]

Table = Literal["runs", "flows", "series"]
# A run's stored series by name, each {"t_s": [...], "<column>": [...]}.
RunSeriesData = dict[str, dict[str, dict[str, Any]]]


def _cell(value: Any) -> Any:
    return "" if value is None else value


def export_rows(
    report: ExperimentReport, table: Table, series: RunSeriesData | None = None
) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) of a table. `runs`: one row per run with its axes and aggregate
    metrics; `flows`: one row per flow with its run's axes and the flow's metrics; `series`:
    the runs' time series in long form, one row per (run, series, variable, time) — e.g.
    series `flow-0.tcp_info`, variable `cwnd_pkts` — from `series` (run id -> its series).
    Axis values are written as text (an axis may mix types)."""
    axes = report.axes
    rows: list[list[Any]] = []
    if table == "series":
        columns = ["run_id", "status", "point_index", "repetition", *axes,
                   "series", "variable", "t_s", "value"]  # fmt: skip
        for run in report.runs:
            head = [run.run_id, run.status, run.point_index, run.repetition]
            head += [_axis_text(run.axis_values.get(a)) for a in axes]
            for name, data in sorted((series or {}).get(run.run_id, {}).items()):
                times = data.get("t_s") or []
                for variable, column in sorted(data.items()):
                    if variable == "t_s":
                        continue
                    rows.extend(
                        [*head, name, variable, t, _number(v)]
                        for t, v in zip(times, column, strict=False)
                    )
        return columns, rows
    if table == "runs":
        columns = ["run_id", "status", "point_index", "repetition", "seed", *axes,
                   *AGGREGATE_COLUMNS]  # fmt: skip
        for run in report.runs:
            values = run.aggregate.model_dump() if run.aggregate else {}
            rows.append([run.run_id, run.status, run.point_index, run.repetition, run.seed,
                         *(_axis_text(run.axis_values.get(a)) for a in axes),
                         *(values.get(k) for k in AGGREGATE_COLUMNS)])  # fmt: skip
        return columns, rows
    columns = ["run_id", "status", "point_index", "repetition", *axes, "flow", "algorithm",
               *FLOW_COLUMNS]  # fmt: skip
    for run in report.runs:
        for flow in run.flows:
            values = flow.model_dump()
            row: list[Any] = [run.run_id, run.status, run.point_index, run.repetition]
            row += [_axis_text(run.axis_values.get(a)) for a in axes]
            row += [flow.flow, flow.algorithm, *(values.get(c) for c in FLOW_COLUMNS)]
            rows.append(row)
    return columns, rows


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _axis_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def export_csv(report: ExperimentReport, table: Table, series: RunSeriesData | None = None) -> str:
    columns, rows = export_rows(report, table, series)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return out.getvalue()


def export_parquet(
    report: ExperimentReport, table: Table, series: RunSeriesData | None = None
) -> bytes:
    """The same table as Parquet (columns typed from their values; nulls kept)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, rows = export_rows(report, table, series)
    arrow = pa.table({name: [row[i] for row in rows] for i, name in enumerate(columns)})
    out = io.BytesIO()
    pq.write_table(arrow, out)
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
    if metric not in AGGREGATE_COLUMNS:
        errors.append({"field": "metric", "reason": f"unknown metric {metric!r}; one of: "
                       + ", ".join(AGGREGATE_COLUMNS)})  # fmt: skip
    for name, axis in (("x", x), ("by", by)):
        if axis is not None and axis not in report.axes:
            errors.append({"field": name, "reason": f"{axis!r} is not an axis of this "
                           f"experiment (axes: {', '.join(report.axes) or 'none'})"})  # fmt: skip
    if errors:
        raise ValidationFailed.of(errors, "invalid comparison")
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
