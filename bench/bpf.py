"""CPU cost of ccbench's BPF congestion controllers against the kernel's built-in reno (issue:
kernel agent), at the highest rate this host sustains: one bulk kernel-TCP flow over an
unshaped veth pair between two network namespaces, per controller:

- goodput (Gbit/s) of the flow;
- CPU per ACK the sender received: the CPU time of the flow's own processes (sender and
  receiver, with the TCP/IP work the kernel does in their context, from wait4's rusage) and of
  the softirq threads (ksoftirqd), over the sender's TcpInSegs. Other work on the machine is
  not counted, as a host-wide busy time would count it;
- its ratio to built-in reno. The bench runs several rounds; each round runs every controller
  once and built-in reno twice, in a shuffled order (so a drift of the machine's speed does
  not favour whoever runs first), and each controller's ratio is to the mean of its round's
  two reno runs. The figures are the median over rounds with the spread (min-max); the noise
  is the spread of reno against reno (|a - b| / mean of a round's two runs: the median and the
  largest over rounds). A ratio whose whole spread lies beyond 1 + the largest noise is a real
  difference;
- the controller's own time per ACK, from the kernel's BPF run statistics
  (kernel.bpf_stats_enabled: run_time_ns of its struct_ops programs).

    make bench-bpf                                   # every BPF controller, 3 rounds of 5 s
    python -m bench.bpf --algorithms bfa,vegas --duration 3 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.figures import figure as emit
from ccbench.settings import REPO_ROOT
from schemas.algorithms import BPF_ALGORITHMS, PARAMETERS
from workers import bpf
from workers.plan import ControllerPlan

AGENT = REPO_ROOT / "agents" / "target" / "release" / "ccbench-agent"
PORT = 5201
BUILTIN = "builtin-reno"  # the baseline's slot in a round (the BPF reno clone is "reno")
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("bpf", name, value, unit, target)


def busy_cpu_seconds() -> float:
    """CPU time all CPUs spent busy since boot (/proc/stat, not idle or iowait)."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def softirq_threads_cpu_seconds() -> float:
    """CPU time (user + system) of the kernel's softirq threads (ksoftirqd/N) since boot: the
    network work the kernel defers there instead of doing it in the flow's processes."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        if name.startswith("ksoftirqd/"):
            fields = rest.split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


def wait_cpu_seconds(proc: subprocess.Popen[str]) -> float:
    """Reap a child and return the CPU time (user + system, all its threads) it used."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


class VethPair:
    """Two namespaces joined by a veth pair, removed on exit."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}"
        self.sender, self.receiver = f"ccbb{tag}s", f"ccbb{tag}r"

    def __enter__(self) -> VethPair:
        sh("ip", "netns", "add", self.sender)
        sh("ip", "netns", "add", self.receiver)
        sh("ip", "link", "add", "ccbbs0", "netns", self.sender, "type", "veth",
           "peer", "ccbbr0", "netns", self.receiver)  # fmt: skip
        for ns, dev, address in ((self.sender, "ccbbs0", "10.78.0.1/24"),
                                 (self.receiver, "ccbbr0", "10.78.0.2/24")):  # fmt: skip
            sh("ip", "-n", ns, "addr", "add", address, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def __exit__(self, *_exc: object) -> None:
        for ns in (self.sender, self.receiver):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)

    def in_segments(self) -> int:
        """TcpInSegs of the sender's namespace: the ACKs it received (the flow is one-way)."""
        lines = [
            line.split()
            for line in sh("ip", "netns", "exec", self.sender, "cat", "/proc/net/snmp").splitlines()
            if line.startswith("Tcp:")
        ]
        return int(lines[1][lines[0].index("InSegs")])


def controller_ns(algorithm: str) -> int:
    """run_time_ns summed over the struct_ops programs of `algorithm`'s object."""
    progs = json.loads(sh("bpftool", "-j", "prog", "show") or "[]")
    prefix = f"ccb_{algorithm}_"
    mine = [p for p in progs if p.get("type") == "struct_ops" and p["name"].startswith(prefix)]
    return sum(p.get("run_time_ns", 0) for p in mine)


def one_flow(path: VethPair, cc: str, duration_s: float, work: Path) -> dict[str, float]:
    recv_out, send_out = work / f"{cc}.recv.jsonl", work / f"{cc}.send.jsonl"
    # `ip netns exec` execs the agent in place, so each Popen is the agent itself.
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", path.receiver, str(AGENT), "recv", "--listen",
         f"10.78.0.2:{PORT}", "--interval-ms", "1000", "--out", str(recv_out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    receiver_cpu = 0.0
    try:
        assert receiver.stdout is not None
        if "listening" not in receiver.stdout.readline():
            raise SystemExit(f"{cc}: the receiver did not start")
        acks, softirq = path.in_segments(), softirq_threads_cpu_seconds()
        sender = subprocess.Popen(
            ["ip", "netns", "exec", path.sender, str(AGENT), "send", "--dst",
             f"10.78.0.2:{PORT}", "--cc", cc, "--duration-s", str(duration_s),
             "--interval-ms", "1000", "--out", str(send_out), "--flow-id", "0"],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        sender_cpu = wait_cpu_seconds(sender)
        softirq = softirq_threads_cpu_seconds() - softirq
        acks = path.in_segments() - acks
        if sender.returncode != 0:
            err = sender.stderr.read() if sender.stderr else ""
            raise SystemExit(f"{cc}: the sender exited with {sender.returncode}: {err.strip()}")
    finally:
        receiver.terminate()
        receiver_cpu = wait_cpu_seconds(receiver)
    summary = [json.loads(line) for line in send_out.read_text().splitlines()][-1]
    cpu_s = sender_cpu + receiver_cpu + softirq
    return {
        "gbps": summary["bytes_acked"] * 8 / summary_seconds(summary) / 1e9,
        "acks": acks,
        "cpu_us_per_ack": cpu_s / max(acks, 1) * 1e6,
    }


def summary_seconds(summary: dict[str, Any]) -> float:
    return max(1e-9, float(summary["end_ts"]) - float(summary["start_ts"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithms", default=",".join(sorted(a.value for a in BPF_ALGORITHMS)))
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per flow")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every controller")
    parser.add_argument("--seed", type=int, default=1, help="seeds each round's order")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-bpf needs root (namespaces and BPF)", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.duration <= 0:
        print("--rounds must be >= 1 and --duration > 0", file=sys.stderr)
        return 2
    algorithms = [a for a in args.algorithms.split(",") if a]
    unknown = sorted(set(algorithms) - {a.value for a in PARAMETERS})
    if unknown:
        print(f"--algorithms: no BPF controller {', '.join(unknown)}", file=sys.stderr)
        return 2
    names = {a: bpf.controller_name("bench-bpf", k, a) for k, a in enumerate(algorithms)}
    plans = [ControllerPlan(names[a], a, {}, {}) for a in algorithms]
    order = random.Random(args.seed)
    reno: list[list[dict[str, float]]] = []  # per round, built-in reno's two runs
    runs: dict[str, list[dict[str, float]]] = {a: [] for a in algorithms}
    stats_before = STATS.read_text().strip()
    with tempfile.TemporaryDirectory(prefix="ccbench-bench-bpf-") as tmp, VethPair() as path:
        work = Path(tmp)
        STATS.write_text("1")
        try:
            with bpf.loaded(plans, work):
                for round_no in range(args.rounds):
                    slots = [BUILTIN, BUILTIN, *algorithms]
                    order.shuffle(slots)
                    reno.append([])
                    for slot in slots:
                        if slot == BUILTIN:
                            reno[-1].append(one_flow(path, "reno", args.duration, work))
                            _progress(slot, reno[-1][-1])
                            continue
                        ns_before = controller_ns(slot)
                        result = one_flow(path, names[slot], args.duration, work)
                        result["bpf_ns_per_ack"] = (controller_ns(slot) - ns_before) / max(
                            result["acks"], 1
                        )
                        runs[slot].append(result)
                        _progress(slot, result)
                    print(f"# round {round_no + 1}: {' '.join(slots)}", file=sys.stderr)
        finally:
            STATS.write_text(stats_before)
    baselines = [statistics.mean(r["cpu_us_per_ack"] for r in pair) for pair in reno]
    noise = [
        abs(a["cpu_us_per_ack"] - b["cpu_us_per_ack"]) / base
        for (a, b), base in zip(reno, baselines, strict=True)
    ]
    every_reno = [r for pair in reno for r in pair]
    figure("reno_builtin_gbps", statistics.median(r["gbps"] for r in every_reno), "Gbit/s")
    spread("reno_builtin_cpu_us_per_ack", [r["cpu_us_per_ack"] for r in every_reno], "us")
    figure("reno_builtin_noise_median", statistics.median(noise), "ratio")
    figure("reno_builtin_noise_max", max(noise), "ratio", "<= 0.1")
    for algorithm, results in runs.items():
        ratios = [r["cpu_us_per_ack"] / base for r, base in zip(results, baselines, strict=True)]
        figure(f"{algorithm}_gbps", statistics.median(r["gbps"] for r in results), "Gbit/s")
        spread(f"{algorithm}_cpu_us_per_ack", [r["cpu_us_per_ack"] for r in results], "us")
        spread(f"{algorithm}_cpu_per_ack_vs_reno", ratios, "ratio")
        figure(
            f"{algorithm}_controller_ns_per_ack",
            statistics.median(r["bpf_ns_per_ack"] for r in results),
            "ns",
        )
    return 0


def _progress(slot: str, result: dict[str, float]) -> None:
    print(f"#   {slot}: {result['gbps']:.1f} Gbit/s, {result['cpu_us_per_ack']:.2f} us/ACK",
          file=sys.stderr, flush=True)  # fmt: skip


def spread(name: str, values: list[float], unit: str) -> None:
    """The median of a figure over rounds, and its smallest and largest value."""
    figure(f"{name}_median", statistics.median(values), unit)
    figure(f"{name}_min", min(values), unit)
    figure(f"{name}_max", max(values), unit)


if __name__ == "__main__":
    sys.exit(main())
