"""How the CLI prints what the API returns: a run's progress line and an experiment's report."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if unit == "bps":
            return f"{value / 1e6:.3f} Mbit/s"
        if unit == "s":
            return f"{value * 1000:.1f} ms"
        return f"{value:.4g}"
    if isinstance(value, int) and unit == "bps":
        return f"{value / 1e6:.3f} Mbit/s"
    return str(value)


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
                f"  flow {flow['flow']} {flow['algorithm']:<8} goodput_bps="
                f"{fmt(flow.get('goodput_bps'), 'bps')}  rtt_mean_s="
                f"{fmt(flow.get('rtt_mean_s'), 's')}  retransmits={fmt(flow.get('retransmits'))}"
                f"  queue_delay_mean_s={fmt(flow.get('queue_delay_mean_s'), 's')}"
                f"  loss_rate={fmt(flow.get('loss_rate'))}"
            )
        aggregate = run.get("aggregate") or {}
        if aggregate:
            units = {"goodput_bps": "bps", "rtt_mean_s": "s", "queue_delay_mean_s": "s"}
            keys = [
                "utilization",
                "jain_index",
                "queue_mean_pkts",
                "power",
                "drops",
                "goodput_bps",
                "rtt_mean_s",
            ]
            # Shown when the run has them (roles, several flows).
            optional = [
                "normalized_fairness",
                "friendliness_ratio",
                "equivalence_ratio",
                "fc_ratio",
                "convergence_time_s",
            ]
            keys += [k for k in optional if aggregate.get(k) is not None]
            units["convergence_time_s"] = "s"
            print(
                "  aggregate: "
                + "  ".join(
                    f"{k}={fmt(aggregate.get(k), units.get(k, ''))}" for k in keys if k in aggregate
                )
            )
        applied = run.get("applied") or {}
        if applied:
            buffer = (
                f"{applied['buffer_pkts']} pkts"
                if applied.get("buffer_pkts") is not None
                else f"{applied.get('buffer_bytes')} B"
            )
            print(
                f"  applied: {fmt(applied['rate_bps'], 'bps')}, "
                f"{fmt(applied['delay_s'], 's')} one way "
                f"(base RTT {fmt(applied['base_rtt_s'], 's')}), "
                f"buffer {buffer}, delay via {applied.get('delay_mechanism')}; measured: min RTT "
                f"{fmt(applied.get('measured_min_rtt_s'), 's')}, bottleneck "
                f"{fmt(applied.get('measured_rate_bps'), 'bps')} while backlogged"
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
            for name in ("goodput_bps", "utilization", "jain_index", "queue_mean_pkts", "power"):
                if f"{name}_median" in metrics:
                    shown.append(
                        f"{name}={fmt(metrics[f'{name}_median'])}±{fmt(metrics.get(f'{name}_siqr'))}"
                    )
            print(f"  {axes} (n={group['n']}): " + "  ".join(shown))
