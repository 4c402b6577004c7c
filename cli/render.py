"""How the CLI prints what the API returns: consoles, runs, tables, an experiment's report.
Every value goes through the catalogue's `format_quantity` (SI prefix and unit)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ccbench.plots.axes import value_text
from schemas import AggregateMetrics
from schemas.metrics import (
    BIT_PER_S,
    BYTE,
    KEY_METRICS,
    PACKET,
    RUN_LINE_AGGREGATE,
    RUN_LINE_FLOW,
    SECOND,
    Metric,
    format_quantity,
    metrics_of,
)

# Aggregate metrics a run has only sometimes (roles, several flows): shown when present.
OPTIONAL_AGGREGATE = [
    m for m in metrics_of("aggregate") if not AggregateMetrics.model_fields[m.name].is_required()
]
# Characters of an id the CLI shows; any unique prefix is accepted back (cli/ids.py).
SHORT_ID = 8
# Width of output that goes to a file or a pipe: lines are never wrapped there.
PIPE_WIDTH = 1000
STATUS_STYLE = {
    "done": "green",
    "failed": "bold red",
    "cancelled": "yellow",
    "running": "cyan",
    "queued": "dim",
}


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr): styles and the terminal's width on a terminal; plain,
    unwrapped lines otherwise. Markup is off: names and messages print as they are."""
    terminal = Console(stderr=stderr).is_terminal
    return Console(
        stderr=stderr,
        highlight=False,
        markup=False,
        emoji=False,
        width=None if terminal else PIPE_WIDTH,
    )


def print_json(data: Any) -> None:
    """JSON on stdout as the API sent it, indented; never wrapped or styled."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def short(identifier: str) -> str:
    return identifier[:SHORT_ID]


def when(timestamp: str | None) -> str:
    """An RFC 3339 time of the API in the local time zone, to the minute."""
    if not timestamp:
        return "-"
    return datetime.fromisoformat(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


def team_text(item: dict[str, Any]) -> str:
    """The team that owns an experiment or a campaign, marked when the caller's team reads it
    as another team's: "netlab (shared)", "netlab (public)"."""
    access = item.get("access", "own")
    return item["team"] if access == "own" else f"{item['team']} ({access})"


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def axes_text(axis_values: dict[str, Any]) -> str:
    """`topology.bottleneck.buffer=2bdp flows=2 × bfa`: values as figures' legends show them
    (a `flows` axis's lists of flows by their algorithms, not as raw specs)."""
    return " ".join(f"{k}={value_text(v)}" for k, v in axis_values.items())


def run_label(run: dict[str, Any], total: int) -> str:
    """`run 3/12 topology.bottleneck.buffer=2bdp rep 1`: a run by its place in the matrix."""
    axes = axes_text(run.get("axis_values") or {})
    return " ".join(
        part
        for part in (f"run {run['order_index'] + 1}/{total}", axes, f"rep {run['repetition']}")
        if part
    )


def run_progress(run: dict[str, Any]) -> str:
    """`12/20 s` of a running run, else ""."""
    progress = run.get("progress") or {}
    if run["status"] != "running" or not progress.get("duration_s"):
        return ""
    elapsed, duration = float(progress.get("elapsed_s") or 0), float(progress["duration_s"])
    return f"{elapsed:.0f}/{duration:.0f} s"


def table(*columns: str, right: tuple[str, ...] = ()) -> Table:
    """A borderless table with these column headings (those in `right` aligned right)."""
    grid = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in columns:
        grid.add_column(name, justify="right" if name in right else "left")
    return grid


def runs_table(runs: list[dict[str, Any]], axes: list[str]) -> Table:
    """An experiment's runs: place, id, axis values, repetition, status, progress or error."""
    grid = table("#", "run", *axes, "rep", "status", "", right=("#", "rep"))
    for run in runs:
        detail = run_progress(run) or (run.get("error") or "" if run["status"] == "failed" else "")
        grid.add_row(
            str(run["order_index"] + 1),
            short(run["id"]),
            *(value_text(run["axis_values"].get(axis, "")) for axis in axes),
            str(run["repetition"]),
            status_text(run["status"]),
            detail,
        )
    return grid


def _value(values: dict[str, Any], metric: Metric) -> str:
    return format_quantity(values.get(metric.name), metric.unit)


def _pairs(values: dict[str, Any], metrics: list[Metric]) -> str:
    return " · ".join(f"{m.label} {_value(values, m)}" for m in metrics)


def print_report(out: Console, report: dict[str, Any]) -> None:
    """Per run: its flows (and their aggregate) in a table, the other aggregate metrics, what
    was applied and the checks; then the matrix points over repetitions."""
    for run in report.get("runs", []):
        heading = Text(f"\nrun {short(run['run_id'])}", style="bold")
        heading.append(f" {axes_text(run.get('axis_values') or {})}".rstrip())
        heading.append(f" rep {run.get('repetition', 0)}: ")
        heading.append_text(status_text(run["status"]))
        out.print(heading)
        if run.get("error"):
            out.print(f"  error: {run['error']}")
        aggregate = run.get("aggregate") or {}
        flows = run.get("flows", [])
        if flows:
            columns = list(RUN_LINE_FLOW)
            grid = table(
                "flow",
                "algorithm",
                *(m.label for m in columns),
                right=("flow", *(m.label for m in columns)),
            )
            for flow in flows:
                reverse = " (reverse)" if flow.get("direction") == "reverse" else ""
                grid.add_row(
                    str(flow["flow"]),
                    flow["algorithm"] + reverse,
                    *(_value(flow, m) for m in columns),
                )
            if aggregate:
                grid.add_row(
                    "all",
                    "",
                    *(_value(aggregate, m) if m.in_scope("aggregate") else "" for m in columns),
                )
            out.print(Padding(grid, (0, 0, 0, 2), expand=False))
        if aggregate:
            shown = {m.name for m in RUN_LINE_FLOW}
            listed = [m for m in RUN_LINE_AGGREGATE if m.name not in shown]
            listed += [m for m in OPTIONAL_AGGREGATE if aggregate.get(m.name) is not None]
            pairs = _pairs(aggregate, [m for m in listed if m.name in aggregate])
            out.print(f"  aggregate: {pairs}")
        applied = run.get("applied") or {}
        if applied:
            out.print("  " + applied_line(applied))
        for check in run.get("checks") or []:
            mark = Text("[ok ]", style="green") if check.get("ok") else Text("[FAIL]", style="red")
            out.print(
                Text("  ").append_text(mark).append(f" {check.get('name')}: {check.get('detail')}")
            )
    groups = report.get("groups") or []
    if len(groups) > 1 or any(g.get("n", 1) > 1 for g in groups):
        out.print(Text("\nmatrix points (median ± SIQR over repetitions)", style="bold"))
        axes = list(report.get("axes") or [])
        metrics = [m for m in KEY_METRICS]
        grid = table(
            *axes, "n", *(m.label for m in metrics), right=("n", *(m.label for m in metrics))
        )
        for group in groups:
            values = group.get("metrics", {})
            grid.add_row(
                *(str(group["axis_values"].get(axis, "")) for axis in axes),
                f"{group['n']}/{group['runs']}",
                *(
                    format_quantity(
                        values.get(f"{m.name}_median"), m.unit, values.get(f"{m.name}_siqr")
                    )
                    for m in metrics
                ),
            )
        out.print(grid)


def applied_line(applied: dict[str, Any]) -> str:
    """What the testbed configured, and what was measured against it."""
    if applied.get("buffer_pkts") is not None:
        buffer = format_quantity(applied["buffer_pkts"], PACKET)
    else:
        buffer = format_quantity(applied.get("buffer_bytes"), BYTE)
    return (
        f"applied: {format_quantity(applied.get('rate_bps'), BIT_PER_S)}, "
        f"{format_quantity(applied.get('delay_s'), SECOND)} one way "
        f"(base RTT {format_quantity(applied.get('base_rtt_s'), SECOND)}), "
        f"buffer {buffer}, delay via {applied.get('delay_mechanism') or '-'}; measured: min RTT "
        f"{format_quantity(applied.get('measured_min_rtt_s'), SECOND)}, bottleneck "
        f"{format_quantity(applied.get('measured_rate_bps'), BIT_PER_S)} while backlogged"
    )
