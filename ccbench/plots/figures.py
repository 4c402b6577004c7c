"""Figures a researcher puts in a paper, from the API's JSON:

- per run (seed 000 Figs. 4, 14-26; seed 002 Figs. 2-15): goodput, cwnd (with ssthresh) and
  RTT against time per flow, RTT against cwnd, and the bottleneck queue against time with its
  drops marked;
- per matrix: one metric against one axis, a series per value of another axis, median with
  SIQR error bars (seed 000 Figs. 5-9, seed 001 Figs. 7-8, seed 004 Figs. 2-4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _index(flow: dict[str, Any]) -> int:
    """A flow's index in a run's detail (`flow_index`) or in a report (`flow`)."""
    return int(flow["flow_index"] if "flow_index" in flow else flow["flow"])


def _flow_label(flow: dict[str, Any]) -> str:
    return f"flow {_index(flow)} {flow['algorithm']}"


def run_figures(run: dict[str, Any]) -> dict[str, Figure]:
    """Figures of one run (GET /v1/runs/{id}), by name."""
    series: dict[str, dict[str, list[Any]]] = run.get("series") or {}
    flows = sorted(run.get("flows") or [], key=_index)
    figures: dict[str, Figure] = {}

    def flow_plot(name: str, source: str, column: str, ylabel: str, scale: float = 1.0) -> None:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for flow in flows:
            data = series.get(f"flow-{_index(flow)}.{source}") or {}
            t, y = data.get("t_s") or [], data.get(column) or []
            points = [(a, b * scale) for a, b in zip(t, y, strict=False) if b is not None]
            if points:
                ax.plot(*zip(*points, strict=True), label=_flow_label(flow), linewidth=1)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel)
        ax.set_title(name.replace("_", " "))
        ax.legend(loc="best", fontsize="small")
        ax.grid(alpha=0.3)
        figures[name] = fig

    flow_plot("goodput", "goodput", "goodput_bps", "goodput (Mbit/s)", 1e-6)
    flow_plot("rtt", "tcp_info", "srtt_s", "smoothed RTT (ms)", 1e3)
    flow_plot("cwnd", "tcp_info", "cwnd_pkts", "cwnd (packets)")
    cwnd = figures["cwnd"].axes[0]
    for flow in flows:
        data = series.get(f"flow-{_index(flow)}.tcp_info") or {}
        points = [(t, s) for t, s in zip(data.get("t_s") or [], data.get("ssthresh_pkts") or [],
                                         strict=False) if s is not None]  # fmt: skip
        if points:
            cwnd.plot(*zip(*points, strict=True), linestyle="--", linewidth=0.8,
                      label=f"{_flow_label(flow)} ssthresh")  # fmt: skip
    cwnd.legend(loc="best", fontsize="small")

    fig, ax = plt.subplots(figsize=(5, 4))
    for flow in flows:
        data = series.get(f"flow-{_index(flow)}.tcp_info") or {}
        pairs = [(c, r * 1e3) for c, r in zip(data.get("cwnd_pkts") or [],
                                              data.get("srtt_s") or [], strict=False)
                 if c is not None and r is not None]  # fmt: skip
        if pairs:
            xs, ys = zip(*pairs, strict=True)
            ax.scatter(xs, ys, s=3, label=_flow_label(flow))
    ax.set_xlabel("cwnd (packets)")
    ax.set_ylabel("smoothed RTT (ms)")
    ax.set_title("RTT against cwnd")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    figures["rtt_vs_cwnd"] = fig

    queue = series.get("queue") or {}
    fig, ax = plt.subplots(figsize=(7, 3.5))
    t, q = queue.get("t_s") or [], queue.get("qlen_pkts") or []
    ax.step(t, q, where="post", label="queue", linewidth=1)
    drops = queue.get("drops") or []
    marks = [t[k] for k in range(1, len(drops)) if drops[k] > drops[k - 1]]
    if marks:
        top = max(q) if q else 1
        ax.scatter(marks, [top * 1.05] * len(marks), marker="x", color="red", s=12,
                   label="drops")  # fmt: skip
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (packets)")
    ax.set_title("bottleneck queue")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    figures["queue"] = fig
    return figures


def comparison_figure(comparison: dict[str, Any]) -> Figure:
    """GET /v1/experiments/{id}/compare as a figure: median with SIQR error bars."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for series in comparison["series"]:
        points = [p for p in series["points"] if p["median"] is not None]
        labels = [str(p["x"]) for p in points]
        ax.errorbar(
            labels,
            [p["median"] for p in points],
            yerr=[p["siqr"] or 0 for p in points],
            marker="o",
            capsize=3,
            label=f"{comparison['by']} = {series['by']}" if comparison.get("by") else None,
        )
    ax.set_xlabel(comparison["x"])
    ax.set_ylabel(f"{comparison['metric']} (median ± SIQR)")
    ax.set_title(f"{comparison['metric']} against {comparison['x']}")
    if comparison.get("by"):
        ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def save(figures: dict[str, Figure], directory: Path, prefix: str, fmt: str = "png") -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        path = directory / f"{prefix}{name}.{fmt}"
        fig.tight_layout()
        fig.savefig(path, dpi=150)
        plt.close(fig)
        written.append(path)
    return written
