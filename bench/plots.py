"""Figures of runs and matrices (issue 20): how long a run page's figures take to build (the
figure model and its Plotly JSON, server side), and writing PNG, SVG and PDF files for one run
and for a 12-run matrix as `ccbench report --plot` does. The runs are made up at full stored
size (2 flows, 20 s at 10 ms: 2,000 samples per series, the storage's down-sampling limit), so
the bench needs no database or root. Medians over several repetitions, with min and max.

    make bench-plots
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.figures import figure as emit
from ccbench.analysis.series import MAX_SERIES_POINTS

DT = 0.01
FLOWS = 2
REPEAT_FAST = 7
REPEAT_FILES = 3


def made_up_run(seed: int) -> dict[str, Any]:
    """GET /v1/runs/{id} of a 20 s reno-vs-cubic run at 10 Mbit/s, 40 ms, 1 BDP: sawtooth
    windows, a queue that fills and drains, goodput sharing the link."""
    n = MAX_SERIES_POINTS
    t = [round(DT * (k + 1), 6) for k in range(n)]
    series: dict[str, dict[str, list[Any]]] = {}
    for i in range(FLOWS):
        phase = 0.37 * (i + seed)
        cwnd = [12 + 20 * ((k * DT / 1.6 + phase) % 1) for k in range(n)]
        rate = [5e6 * (1 + 0.3 * math.sin(k / 25 + phase)) for k in range(n)]
        received, sent, total, total_sent = [], [], 0.0, 0.0
        for r in rate:
            total += r * DT / 8
            total_sent += 1.02 * r * DT / 8
            received.append(round(total))
            sent.append(round(total_sent))
        series[f"flow-{i}.goodput"] = {"t_s": t, "goodput_bps": rate, "bytes_received": received}
        series[f"flow-{i}.tcp_info"] = {
            "t_s": t,
            "cwnd_pkts": cwnd,
            "ssthresh_pkts": [c * 0.7 for c in cwnd],
            "srtt_s": [0.04 + 0.0015 * c for c in cwnd],
            "delivery_rate_bps": rate,
            "retransmits": [k // 160 for k in range(n)],
            "bytes_sent": sent,
        }
    queue = [int(33 * ((k * DT / 1.6) % 1)) for k in range(n)]
    series["queue"] = {
        "t_s": t,
        "qlen_pkts": queue,
        "drops": [k // 160 for k in range(n)],
        "queue_delay_s": [q * 1500 * 8 / 10e6 for q in queue],
    }
    series["fairness"] = {"t_s": [float(s) for s in range(1, 21)], "jain_index": [0.97] * 20}
    spec = {
        "name": "bench", "topology": {"kind": "dumbbell", "bottleneck": {
            "rate": 10e6, "delay": 0.02, "buffer": "1bdp"}},
        "flows": [{"algorithm": "reno"}, {"algorithm": "cubic"}], "duration": 20.0,
        "measurement": {"skip_start": 2.0},
    }  # fmt: skip
    applied = {"rate_bps": 10e6, "delay_s": 0.02, "base_rtt_s": 0.04, "buffer_pkts": 33,
               "buffer_bytes": None}  # fmt: skip
    return {
        "id": f"run-{seed}",
        "spec": spec,
        "aggregate": {"applied": applied, "aggregate": {}, "checks": []},
        "flows": [
            {"flow_index": i, "algorithm": a, "metrics": {"direction": "forward"}}
            for i, a in enumerate(("reno", "cubic"))
        ],  # fmt: skip
        "series": series,
    }


def timed(action: Callable[[], Any], repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return seconds


def report(name: str, seconds: list[float], unit: str, scale: float, target: str) -> None:
    emit("plots", f"{name}_median", statistics.median(seconds) * scale, unit, target)
    emit("plots", f"{name}_min", min(seconds) * scale, unit)
    emit("plots", f"{name}_max", max(seconds) * scale, unit)


def main() -> int:
    from ccbench.plots.figures import write_experiment_figures, write_figures
    from ccbench.plots.run import run_figure_data
    from ccbench.plots.web import plotly_figure

    run = made_up_run(1)
    figures = run_figure_data(run)

    def page() -> None:
        for data in run_figure_data(run):
            json.dumps(plotly_figure(data), allow_nan=False)

    report("run_model_ms", timed(lambda: run_figure_data(run), REPEAT_FAST), "ms", 1e3,
           "<= 300")  # fmt: skip
    report("run_page_figures_ms", timed(page, REPEAT_FAST), "ms", 1e3, "<= 500")

    with tempfile.TemporaryDirectory(prefix="ccbench-bench-plots-") as tmp:
        directory = Path(tmp)
        one_process = timed(
            lambda: [write_figures([f], directory / "one") for f in figures], REPEAT_FILES
        )
        per_figure = [s / len(figures) for s in one_process]
        report("file_figure_three_formats_s", per_figure, "s", 1.0, "<= 1")

        axes = ["flows[*].algorithm", "topology.bottleneck.buffer"]
        runs = [made_up_run(seed) for seed in range(12)]
        matrix = {
            "axes": axes,
            "runs": [{"run_id": r["id"], "status": "done", "repetition": k // 6,
                      "axis_values": {axes[0]: ("reno", "cubic")[k % 2],
                                      axes[1]: ("0.25bdp", "1bdp", "4bdp")[k % 3]}}
                     for k, r in enumerate(runs)],
        }  # fmt: skip
        details = {r["id"]: r for r in runs}
        files: list[int] = []

        def write_matrix() -> None:
            files.append(len(write_experiment_figures(matrix, details, [], directory / "m")))

        report("matrix_12_runs_files_s", timed(write_matrix, REPEAT_FILES), "s", 1.0, "<= 120")
        emit("plots", "matrix_12_runs_files", files[0], "files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
