"""Experiments per hour at the same fidelity: one 24-run matrix (12 points x 2 repetitions:
bottleneck 10, 15 and 20 Mbit/s x buffer 0.5, 1, 2 and 4 BDP, reno against cubic, 20 s) run by
one worker sequentially (one run at a time) and then packed (`--concurrency` runs at once
within the host's CPU budget, workers/packing.py), in one invocation, against the same
PostgreSQL, Redis and API (tests/scaleout.py's lab, one worker "machine").

Figures: the wall-time ratio packed / sequential (target <= 0.35); per mode the fraction of
runs whose checks all passed at their first attempt and at the end (after the automatic
re-runs of runs whose load-sensitive checks failed; target 1.0 in both modes), the re-runs,
and the runs beside each run; and the largest relative difference between the modes of any
point's median aggregate goodput and of its median mean queue (target <= 3%), beside each
mode's own largest and median difference between a point's two repetitions (the run-to-run
noise) and the bottleneck emulator's p99 release lateness. Needs root.
About 8 min sequential + 2-3 min packed on the 2-core VM.

    make bench-throughput
    python -m bench.throughput --concurrency 4 --duration 20
    python -m bench.throughput --packed-only --delay 5ms   # the noise on a shorter path
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.figures import figure as emit
from ccbench.rundir import link_name

RATES = ["10Mbit", "15Mbit", "20Mbit"]
BUFFERS = ["0.5bdp", "1bdp", "2bdp", "4bdp"]
REPETITIONS = 2
DELAY = "10ms"  # the bottleneck's one-way delay


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("throughput", name, value, unit, target)


def matrix(duration_s: float, delay: str = DELAY) -> dict[str, Any]:
    return {
        "kind": "matrix",
        "name": "throughput",
        "base": {
            "name": "throughput",
            "testbed": {"kind": "mininet"},
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {"rate": RATES[0], "delay": delay, "buffer": BUFFERS[0]},
            },
            "flows": [{"algorithm": "reno"}, {"algorithm": "cubic"}],
            "duration": f"{duration_s:g}s",
            "measurement": {"skip_start": "2s"},
            "seed": 1,
        },
        "axes": [
            {"path": "topology.bottleneck.rate", "values": RATES},
            {"path": "topology.bottleneck.buffer", "values": BUFFERS},
        ],
        "repetitions": REPETITIONS,
    }


@dataclass
class Mode:
    name: str
    wall_s: float
    runs: list[dict[str, Any]]  # the report's runs, with the run rows' packing fields

    def passed_first(self) -> float:
        return sum(1 for r in self.runs if r["checks_ok"] and not r["load_reruns"]) / len(self.runs)

    def passed(self) -> float:
        return sum(1 for r in self.runs if r["checks_ok"]) / len(self.runs)

    def per_point(self, metric: str) -> dict[int, list[float]]:
        values: dict[int, list[float]] = {}
        for r in self.runs:
            value = (r.get("aggregate") or {}).get(metric)
            if value is not None:
                values.setdefault(int(r["point_index"]), []).append(float(value))
        return values

    def medians(self, metric: str) -> dict[int, float]:
        return {p: statistics.median(v) for p, v in self.per_point(metric).items()}

    def repetition_spreads(self, metric: str) -> list[float]:
        """Per point, the relative difference between its repetitions: run-to-run noise, the
        floor for the difference between the modes."""
        return [max(v) / min(v) - 1 for v in self.per_point(metric).values() if min(v) > 0]


def run_mode(name: str, concurrency: int, duration_s: float, delay: str, work: Path) -> Mode:
    from tests.scaleout import Lab

    runs = len(RATES) * len(BUFFERS) * REPETITIONS
    with Lab(work, workers=1, tag=name[:4], concurrency=concurrency) as lab, \
            lab.client() as api:  # fmt: skip
        started = time.monotonic()
        made = api.post("/v1/experiments", json=matrix(duration_s, delay))
        made.raise_for_status()
        experiment = made.json()["id"]
        detail = lab.wait_final(experiment, timeout_s=runs * (duration_s + 60))
        wall = time.monotonic() - started
        report = api.get(f"/v1/experiments/{experiment}/report").json()
        rows = {r["id"]: r for r in api.get(f"/v1/experiments/{experiment}").json()["runs"]}
        provenance = {
            run_id: api.get(f"/v1/runs/{run_id}", params={"series": False}).json()["provenance"]
            for run_id in rows
        }
    results = []
    for r in report["runs"]:
        row = rows[r["run_id"]]
        checks = r.get("checks") or []
        counters = provenance[r["run_id"]].get("emulator_counters", {}).get(link_name(0, True))
        results.append({
            **r,
            "checks_ok": r["status"] == "done" and bool(checks) and all(c["ok"] for c in checks),
            "failed_checks": [c["name"] for c in checks if not c["ok"]],
            "runs_beside": row["runs_beside"],
            "load_reruns": row["load_reruns"],
            "late_us_p99": (counters or {}).get("late_us_p99"),
        })  # fmt: skip
    print(f"# {name}: {runs} runs in {wall:.1f} s, {detail['status_counts']}, load average "
          f"{os.getloadavg()}", flush=True)  # fmt: skip
    for r in results:
        if not r["checks_ok"]:
            print(f"#   {name} run {r['run_id']} point {r['point_index']}: {r['status']} "
                  f"{r['failed_checks']} {r.get('error') or ''}", flush=True)  # fmt: skip
    return Mode(name, wall, results)


def largest_difference(a: dict[int, float], b: dict[int, float]) -> float | None:
    diffs = [abs(b[p] / a[p] - 1) for p in a if p in b and a[p] > 0]
    return max(diffs) if diffs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--concurrency", type=int, default=4, help="packed: runs at once at most")
    parser.add_argument("--delay", default=DELAY, help="the bottleneck's one-way delay")
    parser.add_argument("--packed-only", action="store_true", help="skip the sequential mode")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-throughput needs root (network namespaces)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ccbench-bench-throughput-"))
    print(f"# load average at start {os.getloadavg()}", flush=True)
    modes = []
    if not args.packed_only:
        modes.append(run_mode("sequential", 1, args.duration, args.delay, work / "sequential"))
    modes.append(run_mode("packed", args.concurrency, args.duration, args.delay, work / "packed"))
    for mode in modes:
        figure(f"{mode.name}_wall_time", mode.wall_s, "s")
        figure(f"{mode.name}_checks_pass_first_attempt", mode.passed_first(), "fraction")
        figure(f"{mode.name}_checks_pass", mode.passed(), "fraction", "1.0")
        figure(f"{mode.name}_load_reruns", sum(r["load_reruns"] for r in mode.runs), "runs")
        late = [float(r["late_us_p99"]) for r in mode.runs if r["late_us_p99"] is not None]
        if late:
            # The bottleneck emulator's release lateness (data direction), p99 of each run.
            figure(f"{mode.name}_emulator_late_p99_median", statistics.median(late), "us")
            figure(f"{mode.name}_emulator_late_p99_max", max(late), "us", "<= 1000")
        for metric in ("goodput_bps", "queue_mean_pkts"):
            spreads = mode.repetition_spreads(metric)
            if spreads:
                figure(f"{mode.name}_largest_repetition_spread_{metric}", max(spreads), "ratio")
                figure(f"{mode.name}_median_repetition_spread_{metric}",
                       statistics.median(spreads), "ratio")  # fmt: skip
        beside = [r["runs_beside"] for r in mode.runs if r["runs_beside"] is not None]
        if beside:
            figure(f"{mode.name}_runs_beside_median", statistics.median(beside), "runs")
            figure(f"{mode.name}_runs_beside_max", max(beside), "runs")
    if len(modes) == 2:
        sequential, packed = modes
        figure("wall_time_ratio", packed.wall_s / sequential.wall_s, "ratio", "<= 0.35")
        for metric in ("goodput_bps", "queue_mean_pkts"):
            figure(
                f"largest_point_difference_{metric}",
                largest_difference(sequential.medians(metric), packed.medians(metric)),
                "ratio",
                "<= 0.03",
            )
    figure("cores", float(os.cpu_count() or 0), "cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
