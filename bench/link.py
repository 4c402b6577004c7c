"""The link emulator's accuracy and cost (issue: faithful network emulation), in the sandbox
with one kernel-TCP cubic flow through a 20 ms one-way delay and a 1 BDP drop-tail buffer:

- delivered rate while backlogged (actual release times in the packet log) and receiver goodput,
  each as a ratio to the configured rate (goodput against its payload share 1448/1500);
- added delay error: actual release - (departure + configured delay), mean and p99, from the
  per-packet log; and ping's minimum RTT against 2 x delay;
- CPU of the emulator per forwarded packet and per Gbit delivered;
- a fast link (5 Gbit/s, the emulator's aggregate mode: one verdict per GSO/GRO aggregate),
  several runs: delivered-rate ratio (from the log), goodput ratio and CPU per Gbit, each as
  the median with the spread (min, max);
- release timing under load: p99 release lateness (actual release - the packet's own scheduled
  release, `due_us`) at 10 and 100 Mbit/s on an idle host and while busy loops started by this
  bench keep every CPU 80% busy (normal priority, as other runs' processes would), the median
  over several interleaved runs with its spread (min, max), with the emulator's wake-up
  diagnostics, its CPU per packet, and where the releases more than 100 µs late lost their
  time (shares of that tail's lateness: timer interrupt late, waiting for a CPU, busy).

    make bench-link                       # 10 Mbit/s, 100 Mbit/s, 1 Gbit/s, 10 s each; 5 Gbit/s x3
    python -m bench.link --rates 10Mbit --duration 5 --fast-runs 0
    python -m bench.link --rates '' --fast-rate 2Gbit --emulator-mode packet
    python -m bench.link --rates '' --fast-runs 0 --timing-runs 5   # release timing only
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.figures import figure as emit
from ccbench.analysis.checks import late_release_shares
from ccbench.analysis.packetlog import queue_metrics, queue_metrics_from_file, read_packet_log
from ccbench.analysis.run import analyze_run
from ccbench.settings import get_settings
from schemas import ExperimentSpec, parse_rate
from workers.planning import plan_for_spec
from workers.testbeds.mininet.runner import MininetTestbed

DELAY_S = 0.020
# Release timing targets (issue 22): p99 lateness on an idle host, and with every CPU 80% busy.
LATE_P99_IDLE_MS = 0.1
LATE_P99_LOADED_MS = 0.2
# The background load: each CPU busy this share of every period (busy loops, normal priority).
LOAD_SHARE = 0.8
LOAD_PERIOD_S = 0.010


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("link", name, value, unit, target)


def label(rate_bps: float) -> str:
    return f"{rate_bps / 1e9:g}gbit" if rate_bps >= 1e9 else f"{rate_bps / 1e6:g}mbit"


def one_flow_run(
    rate_bps: float, duration_s: float, work: Path, run_name: str, mode: str = "auto", seed: int = 1
) -> tuple[ExperimentSpec, Path, str]:
    """One kernel cubic flow through the emulated bottleneck, run in the sandbox; returns the
    spec, the run directory and the emulator mode the plan chose."""
    spec = ExperimentSpec.model_validate(
        {
            "name": f"bench-link-{run_name}",
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {
                    "rate": f"{rate_bps:g}bit",
                    "delay": f"{DELAY_S:g}s",
                    "buffer": "1bdp",
                    "link_mechanism": "emulator",
                    "emulator_mode": mode,
                },
            },
            "flows": [{"algorithm": "cubic"}],
            "duration": f"{duration_s:g}s",
            "measurement": {"skip_start": f"{min(2.0, duration_s / 4):g}s"},
            "seed": seed,
        }
    )
    run_dir = work / run_name
    run_dir.mkdir()
    plan = plan_for_spec(spec, run_id=run_dir.name, out_dir=run_dir, settings=get_settings())
    result = MininetTestbed().run(
        plan, events=lambda _e: None, cancel=lambda: False, deadline_s=duration_s + 60
    )
    if result.status != "done":
        raise SystemExit(f"{run_name}: the run failed: {result.describe()}")
    return spec, run_dir, plan.emulator_mode


def measure(rate_bps: float, duration_s: float, work: Path) -> None:
    spec, run_dir, _ = one_flow_run(rate_bps, duration_s, work, label(rate_bps))
    analysis = analyze_run(run_dir, spec)
    flow = analysis.flows[0]
    _, records = read_packet_log(run_dir / "link-0-data.bin")
    start = records["arrival_us"][0] / 1e6 + spec.measurement.skip_start
    q = queue_metrics(
        records,
        start,
        start + duration_s - spec.measurement.skip_start,
        rate_bps,
        int(DELAY_S * 1e6),
    )
    stats = {d: json.loads((run_dir / f"link-0-{d}.json").read_text()) for d in ("data", "ack")}
    cpu_s = stats["data"]["cpu_s"] + stats["ack"]["cpu_s"]
    packets = stats["data"]["packets"] + stats["ack"]["packets"]
    provenance = json.loads((run_dir / "provenance.json").read_text())
    name = label(rate_bps)
    busy = q["busy_rate_bps"]
    figure(f"rate_ratio_{name}", busy / rate_bps if busy else None, "ratio", ">= 0.97")
    goodput = flow.goodput_bps or 0.0
    figure(f"goodput_ratio_{name}", goodput / (rate_bps * 1448 / 1500), "ratio", ">= 0.97")
    figure(f"goodput_{name}", goodput / 1e6, "Mbit/s")
    mean = q["release_late_us_mean"]
    figure(f"delay_error_mean_{name}", mean / 1e3 if mean is not None else None, "ms", "<= 0.2")
    p99 = q["release_late_us_p99"]
    figure(f"delay_error_p99_{name}", p99 / 1e3 if p99 is not None else None, "ms", "<= 1")
    ping = (provenance.get("ping_rtt_s") or {}).get("min")
    figure(f"ping_rtt_ratio_{name}", ping / (2 * DELAY_S) if ping else None, "ratio")
    figure(f"emulator_cpu_per_packet_{name}", 1e6 * cpu_s / max(packets, 1), "us")
    if goodput > 0:
        gbit = goodput * (duration_s - spec.measurement.skip_start) / 1e9
        figure(f"emulator_cpu_per_gbit_{name}", cpu_s / gbit, "s")
    figure(f"overruns_{name}", float(stats["data"].get("overruns", 0)), "count", "0")


def fast_run(
    rate_bps: float, duration_s: float, mode: str, work: Path, run: int
) -> dict[str, float | None]:
    """One run of a fast link: the delivered rate while backlogged (log) and the receiver's
    goodput as ratios to the configured rate, the emulators' CPU per Gbit of goodput, the
    packets per verdict at the bottleneck and the p99 release lateness (ms)."""
    spec, run_dir, used_mode = one_flow_run(
        rate_bps, duration_s, work, f"fast-{label(rate_bps)}-{run}", mode, seed=run + 1
    )
    goodput = analyze_run(run_dir, spec).flows[0].goodput_bps or 0.0
    start = json.loads((run_dir / "provenance.json").read_text())["start_ts"]
    window = (start + spec.measurement.skip_start, start + duration_s)
    q = queue_metrics_from_file(run_dir / "link-0-data.bin", *window, rate_bps)
    busy, late_p99 = q["busy_rate_bps"], q["release_late_us_p99"]
    stats = {d: json.loads((run_dir / f"link-0-{d}.json").read_text()) for d in ("data", "ack")}
    cpu_s = stats["data"]["cpu_s"] + stats["ack"]["cpu_s"]
    gbit = goodput * (duration_s - spec.measurement.skip_start) / 1e9
    print(f"fast {label(rate_bps)} run {run}: mode {used_mode}, busy "
          f"{(busy or 0) / 1e9:.3f} Gbit/s, goodput {goodput / 1e9:.3f} Gbit/s, emulator CPU "
          f"{cpu_s:.2f} s, {stats['data']['segments']} packets in {stats['data']['packets']} "
          f"verdicts", file=sys.stderr)  # fmt: skip
    return {
        "rate_ratio": busy / rate_bps if busy else None,
        "goodput_ratio": goodput / (rate_bps * 1448 / 1500),
        "emulator_cpu_per_gbit": cpu_s / gbit if gbit > 0 else None,
        "packets_per_verdict": stats["data"]["segments"] / max(stats["data"]["packets"], 1),
        "delay_error_p99": late_p99 / 1e3 if late_p99 is not None else None,
    }


def measure_fast(rate_bps: float, duration_s: float, mode: str, runs: int, work: Path) -> None:
    """`runs` runs of a fast link; per figure the median and the spread (min, max)."""
    results = [fast_run(rate_bps, duration_s, mode, work, run) for run in range(runs)]
    units = {"rate_ratio": "ratio", "goodput_ratio": "ratio", "emulator_cpu_per_gbit": "s",
             "packets_per_verdict": "count", "delay_error_p99": "ms"}  # fmt: skip
    targets = {"rate_ratio": ">= 0.97", "goodput_ratio": ">= 0.97", "delay_error_p99": "<= 1"}
    for key, unit in units.items():
        values = [v for r in results if (v := r[key]) is not None]
        name = f"{key}_{label(rate_bps)}"
        if mode != "auto":
            name += f"_{mode}"
        median = statistics.median(values) if len(values) == runs else None
        figure(name, median, unit, targets.get(key))
        figure(f"{name}_min", min(values) if values else None, unit)
        figure(f"{name}_max", max(values) if values else None, unit)


def _busy_loop(share: float, period_s: float) -> None:
    """Keep one CPU busy `share` of every period until killed."""
    while True:
        start = time.perf_counter()
        while time.perf_counter() - start < share * period_s:
            pass
        time.sleep((1 - share) * period_s)


@contextmanager
def background_load(share: float) -> Iterator[None]:
    """One busy loop per CPU, each busy `share` of the time, at normal priority; stopped (and
    reaped) on exit. share 0: nothing."""
    workers = [
        multiprocessing.Process(target=_busy_loop, args=(share, LOAD_PERIOD_S), daemon=True)
        for _ in range((os.cpu_count() or 1) if share > 0 else 0)
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.join()


def timing_sample(rate_bps: float, duration_s: float, run_dir: Path) -> dict[str, float | None]:
    """One run's release timing: p99 lateness from the packet log (against each packet's own
    schedule), the forward emulator's wake-up diagnostics, CPU per packet (both directions),
    and how busy the host was."""
    spec, run_dir, _ = one_flow_run(rate_bps, duration_s, run_dir.parent, run_dir.name)
    _, records = read_packet_log(run_dir / "link-0-data.bin")
    start = records["arrival_us"][0] / 1e6 + spec.measurement.skip_start
    end = start + duration_s - spec.measurement.skip_start
    q = queue_metrics(records, start, end, rate_bps, int(DELAY_S * 1e6))
    stats = {d: json.loads((run_dir / f"link-0-{d}.json").read_text()) for d in ("data", "ack")}
    data: dict[str, Any] = stats["data"]
    wakeups = data.get("wakeups") or {}
    provenance = json.loads((run_dir / "provenance.json").read_text())
    cpu_s = stats["data"]["cpu_s"] + stats["ack"]["cpu_s"]
    packets = stats["data"]["packets"] + stats["ack"]["packets"]
    spin_s = sum((stats[d].get("spin") or {}).get("cpu_s", 0.0) for d in ("data", "ack"))
    late = q["release_late_us_p99"]
    # The forward emulator's late releases (its `late_causes.above_us`), their lateness split by
    # where it was: asleep past the release time (timer), woken but without a CPU (run delay),
    # or in its own loop (busy): shares of that tail's lateness.
    causes = data.get("late_causes") or {}
    shares = late_release_shares(data) or {}
    return {
        "late_p99_ms": late / 1e3 if late is not None else None,
        "wake_late_p99_us": (wakeups.get("late") or {}).get("us_p99"),
        "run_delay_p99_us": (wakeups.get("run_delay") or {}).get("us_p99"),
        "cpu_per_packet_us": 1e6 * cpu_s / max(packets, 1),
        "spin_per_packet_us": 1e6 * spin_s / max(packets, 1),
        "host_busy": provenance.get("host_cpu_busy"),
        "late_tail_per_packet": causes.get("count", 0) / max(stats["data"]["packets"], 1),
        **{f"late_tail_{k}_share": shares.get(k) for k in ("timer", "run_delay", "busy")},
    }


def timing(rates: list[float], runs: int, duration_s: float, work: Path) -> None:
    """Release lateness idle and under LOAD_SHARE background load, `runs` times each, the
    conditions interleaved so that drift in what else the host does hits them alike."""
    conditions = [(rate, share) for rate in rates for share in (0.0, LOAD_SHARE)]
    samples: dict[tuple[float, float], list[dict[str, float | None]]] = {c: [] for c in conditions}
    for k in range(runs):
        for rate, share in conditions:
            run_dir = work / f"timing-{label(rate)}-load{share * 100:.0f}-{k}"
            with background_load(share):
                sample = timing_sample(rate, duration_s, run_dir)
            samples[(rate, share)].append(sample)
            # Each run on stderr, for the record; the figures are the summaries on stdout.
            print(json.dumps({"rate": label(rate), "load": share, **sample}), file=sys.stderr)
            shutil.rmtree(run_dir, ignore_errors=True)
    for (rate, share), values in samples.items():
        load = f"load{share * 100:.0f}"
        target = f"<= {LATE_P99_LOADED_MS if share else LATE_P99_IDLE_MS:g}"
        for key, unit, goal in (
            ("late_p99_ms", "ms", target),
            ("wake_late_p99_us", "us", None),
            ("run_delay_p99_us", "us", None),
            ("cpu_per_packet_us", "us", None),
            ("spin_per_packet_us", "us", None),
            ("host_busy", "ratio", None),
            ("late_tail_per_packet", "ratio", None),
            ("late_tail_timer_share", "ratio", None),
            ("late_tail_run_delay_share", "ratio", None),
            ("late_tail_busy_share", "ratio", None),
        ):
            seen = [v for v in (s[key] for s in values) if v is not None]
            name = f"{key}_{label(rate)}_{load}"
            figure(name, statistics.median(seen) if seen else None, unit, goal)
            figure(f"{name}_min", min(seen) if seen else None, unit)
            figure(f"{name}_max", max(seen) if seen else None, unit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="10Mbit,100Mbit,1Gbit")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--fast-rate", default="5Gbit", help="the fast link's rate")
    parser.add_argument("--fast-runs", type=int, default=3, help="fast-link runs (0: none)")
    parser.add_argument("--fast-duration", type=float, default=8.0)
    parser.add_argument(
        "--emulator-mode",
        default="auto",
        choices=["auto", "packet", "aggregate"],
        help="the fast link's emulator mode (auto: aggregate above 1 Gbit/s)",
    )
    parser.add_argument("--timing-rates", default="10Mbit,100Mbit")
    parser.add_argument("--timing-runs", type=int, default=3, help="per condition (0: none)")
    args = parser.parse_args(argv)
    if args.timing_runs < 0:
        parser.error("--timing-runs: 0 or more")
    if os.geteuid() != 0:
        print("bench-link needs root (network namespaces, NFQUEUE)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ccbench-bench-link-"))
    try:
        for rate in filter(None, args.rates.split(",")):
            measure(parse_rate(rate), args.duration, work)
        if args.fast_runs > 0:
            rate_bps = parse_rate(args.fast_rate)
            measure_fast(rate_bps, args.fast_duration, args.emulator_mode, args.fast_runs, work)
        if args.timing_runs > 0:
            rates = [parse_rate(r) for r in args.timing_rates.split(",")]
            timing(rates, args.timing_runs, args.duration, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
