"""How the CLI prints what the API returns: a run's progress line and an experiment's report."""

from __future__ import annotations

from typing import Any

from schemas import AggregateMetrics
from schemas.metrics import (
    BIT_PER_S,
    KEY_METRICS,
    RUN_LINE_AGGREGATE,
    RUN_LINE_FLOW,
    SECOND,
    Metric,
    display_unit,
    metrics_of,
)

# Aggregate metrics a run has only sometimes (roles, several flows): shown when present.
OPTIONAL_AGGREGATE = [
    m for m in metrics_of("aggregate") if not AggregateMetrics.model_fields[m.name].is_required()
]


def fmt(value: Any, unit: str = "") -> str:
    """A value of `unit` (a catalogue unit) as the CLI prints it."""
    if value is None:
        return "-"
    if isinstance(value, float) or (isinstance(value, int) and unit == BIT_PER_S):
        symbol, factor = display_unit(unit)
        if unit == BIT_PER_S:
            return f"{value * factor:.3f} {symbol}"
        if unit == SECOND:
            return f"{value * factor:.1f} {symbol}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pairs(values: dict[str, Any], metrics: list[Metric]) -> str:
    return "  ".join(f"{m.name}={fmt(values.get(m.name), m.unit)}" for m in metrics)


def run_line(run: dict[str, Any], total: int) -> str:
    progress = run.get("progress") or {}
    where = ""
    if run["status"] == "running" and progress.get("duration_s"):
        elapsed, duration = float(progress.get("elapsed_s") or 0), float(progress["duration_s"])
        bar = int(20 * min(1.0, elapsed / duration))
        where = f" [{'#' * bar}{'.' * (20 - bar)}] {elapsed:.0f}/{duration:.0f} s"
    axes = " ".join(f"{k}={v}" for k, v in run["axis_values"].items())
    error = f" - {run['error']}" if run.get("error") and run["status"] == "failed" else ""
    return (
        f"run {run['order_index'] + 1}/{total} {axes} rep {run['repetition']}: "
        f"{run['status']}{where}{error}"
    ).replace("  ", " ")


def print_report(report: dict[str, Any]) -> None:
    """Per run: flows, aggregate, what was applied and the checks; then the matrix groups."""
    for run in report.get("runs", []):
        axes = " ".join(f"{k}={v}" for k, v in (run.get("axis_values") or {}).items())
        print(f"\nrun {run['run_id']} {axes} rep {run.get('repetition', 0)}: {run['status']}")
        if run.get("error"):
            print(f"  error: {run['error']}")
        for flow in run.get("flows", []):
            print(
                f"  flow {flow['flow']} {flow['algorithm']:<8} " + _pairs(flow, list(RUN_LINE_FLOW))
            )
        aggregate = run.get("aggregate") or {}
        if aggregate:
            listed = [*RUN_LINE_AGGREGATE]
            listed += [m for m in OPTIONAL_AGGREGATE if aggregate.get(m.name) is not None]
            print("  aggregate: " + _pairs(aggregate, [m for m in listed if m.name in aggregate]))
        applied = run.get("applied") or {}
        if applied:
            buffer = (
                f"{applied['buffer_pkts']} pkts"
                if applied.get("buffer_pkts") is not None
                else f"{applied.get('buffer_bytes')} B"
            )
            print(
                f"  applied: {fmt(applied['rate_bps'], BIT_PER_S)}, "
                f"{fmt(applied['delay_s'], SECOND)} one way "
                f"(base RTT {fmt(applied['base_rtt_s'], SECOND)}), "
                f"buffer {buffer}, delay via {applied.get('delay_mechanism')}; measured: min RTT "
                f"{fmt(applied.get('measured_min_rtt_s'), SECOND)}, bottleneck "
                f"{fmt(applied.get('measured_rate_bps'), BIT_PER_S)} while backlogged"
            )
        for check in run.get("checks") or []:
            mark = "ok " if check.get("ok") else "FAIL"
            print(f"  [{mark}] {check.get('name')}: {check.get('detail')}")
    groups = report.get("groups") or []
    if len(groups) > 1 or any(g.get("n", 1) > 1 for g in groups):
        print("\ngroups (median ± SIQR over repetitions):")
        for group in groups:
            axes = " ".join(f"{k}={v}" for k, v in group["axis_values"].items())
            metrics = group.get("metrics", {})
            shown = []
            for name in (m.name for m in KEY_METRICS):
                if f"{name}_median" in metrics:
                    shown.append(
                        f"{name}={fmt(metrics[f'{name}_median'])}±{fmt(metrics.get(f'{name}_siqr'))}"
                    )
            print(f"  {axes} (n={group['n']}): " + "  ".join(shown))
