"""What a run costs the host's CPUs, the measurements behind the packing cost model
(workers/packing.py, `RUN_COSTS`): for each kind of flow (kernel TCP with a built-in
controller, kernel TCP with a BPF controller, the userspace transport) two-flow dumbbell runs at
two rates; every CPU second of the run's process tree (the sandbox: emulators, agents,
namespaces, pings; and bpftool for BPF runs) is counted with getrusage(RUSAGE_CHILDREN) around
the testbed's run, the emulator's own from its counters. A line through the two rates gives
the CPU per packet through the bottleneck (data packets; their ACKs are included in the
per-packet figure); a run of `--many-flows` flows at the lower rate against the two-flow one
gives the CPU each further flow costs whatever its rate (its agents' report timers, the
userspace transport's ticks), and what remains of the two-flow run is the fixed CPU per run.
Needs root and the built agents (and bpftool for `bpf`).

    make bench-runcost
    python -m bench.runcost --rates 5Mbit,20Mbit --duration 8 --repetitions 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

from bench.figures import figure as emit

KINDS = ("kernel", "bpf", "userspace")
# Flows of the runs at two rates (the per-packet line); the per-flow run has more.
RATE_RUN_FLOWS = 2


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("runcost", name, value, unit, target)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(
    kind: str, rate: str, duration_s: float, seed: int, work: Path, flows: int = RATE_RUN_FLOWS
) -> dict[str, float]:
    """CPU seconds of one run's process tree and of its emulators, and the data packets that
    crossed the bottleneck."""
    from ccbench import rundir
    from ccbench.settings import get_settings
    from schemas import ExperimentSpec
    from workers.planning import plan_for_spec
    from workers.testbeds.mininet.runner import MininetTestbed

    flow: dict[str, object] = {"algorithm": "reno"}
    if kind == "bpf":
        flow["runtime"] = "bpf"
    elif kind == "userspace":
        flow["agent"] = "userspace"
    spec = ExperimentSpec.model_validate(
        {
            "name": f"runcost-{kind}",
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {"rate": rate, "delay": "10ms", "buffer": "1bdp"},
            },
            "flows": [flow] * flows,
            "duration": f"{duration_s:g}s",
            "seed": seed,
        }
    )
    run_dir = work / f"{kind}-{rate}-{flows}-{seed}"
    run_dir.mkdir(parents=True)
    plan = plan_for_spec(spec, run_id=run_dir.name, out_dir=run_dir, settings=get_settings())
    before = children_cpu_s()
    result = MininetTestbed().run(plan, lambda _e: None, lambda: False, duration_s + 90)
    total = children_cpu_s() - before
    if result.status != "done":
        raise SystemExit(f"{run_dir.name}: the run failed: {result.describe()}")
    emulator = packets = 0.0
    for path in run_dir.glob("link-*.json"):
        stats = json.loads(path.read_text())
        emulator += float(stats.get("cpu_s", 0.0))
    data = json.loads((run_dir / rundir.link_stats(0)).read_text())
    packets = float(data["packets"])
    print(
        f"# {kind:9s} {rate:7s} {flows} flows seed {seed}: {total:.3f} CPU-s in all, "
        f"emulators {emulator:.3f}, {packets:.0f} data packets",
        file=sys.stderr,
        flush=True,
    )
    return {"total": total, "emulator": emulator, "packets": packets}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="5Mbit,20Mbit", help="two bottleneck rates")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--many-flows", type=int, default=12, help="flows of the per-flow run")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-runcost needs root (network namespaces, NFQUEUE)", file=sys.stderr)
        return 2
    if args.many_flows <= RATE_RUN_FLOWS:
        parser.error(f"--many-flows must be above the rate runs' {RATE_RUN_FLOWS} flows")
    low, high = args.rates.split(",")
    work = Path(tempfile.mkdtemp(prefix="ccbench-bench-runcost-"))
    for kind in args.kinds.split(","):
        fixed, agents, emulators, per_flow = [], [], [], []
        for rep in range(args.repetitions):
            a = one_run(kind, low, args.duration, rep + 1, work)
            b = one_run(kind, high, args.duration, rep + 1, work)
            many = one_run(kind, low, args.duration, rep + 1, work, flows=args.many_flows)
            dp = b["packets"] - a["packets"]
            emulator_us = 1e6 * (b["emulator"] - a["emulator"]) / dp
            total_us = 1e6 * (b["total"] - a["total"]) / dp
            emulators.append(emulator_us)
            agents.append(total_us - emulator_us)
            # The further flows' CPU beyond their packets', per flow and second of the run.
            beyond_packets = many["total"] - a["total"]
            beyond_packets -= (many["packets"] - a["packets"]) * total_us / 1e6
            flow_cores = beyond_packets / ((args.many_flows - RATE_RUN_FLOWS) * args.duration)
            per_flow.append(flow_cores)
            flows_s = RATE_RUN_FLOWS * flow_cores * args.duration
            fixed.append(a["total"] - a["packets"] * total_us / 1e6 - flows_s)
        for name, values, unit in (
            ("emulator_cpu_per_packet", emulators, "us"),
            ("agents_cpu_per_packet", agents, "us"),
            ("flow_cpu", per_flow, "cores"),
            ("fixed_cpu_per_run", fixed, "s"),
        ):
            figure(f"{name}_{kind}_median", statistics.median(values), unit)
            figure(f"{name}_{kind}_min", min(values), unit)
            figure(f"{name}_{kind}_max", max(values), unit)
    figure("cores", float(os.cpu_count() or 0), "cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
