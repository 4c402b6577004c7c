"""CPU cost of ccbench's BPF congestion controllers against the kernel's built-in reno (issue:
kernel agent), at the highest rate this host sustains: one bulk kernel-TCP flow over an
unshaped veth pair between two network namespaces, per controller:

- goodput (Gbit/s) of the flow;
- host CPU per ACK the sender received (all CPUs' busy time / the sender's TcpInSegs), and its
  ratio to built-in reno measured in the same process (reno runs first and last; the baseline
  is their mean, and their spread shows the noise);
- the controller's own time per ACK, from the kernel's BPF run statistics
  (kernel.bpf_stats_enabled: run_time_ns of its struct_ops programs).

    make bench-bpf                                   # every BPF controller, 5 s each
    python -m bench.bpf --algorithms bfa,vegas --duration 3
"""

from __future__ import annotations

import argparse
import json
import os
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
STATS = Path("/proc/sys/kernel/bpf_stats_enabled")


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("bpf", name, value, unit, target)


def busy_cpu_seconds() -> float:
    """CPU time all CPUs spent busy since boot (/proc/stat, not idle or iowait)."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


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
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", path.receiver, str(AGENT), "recv", "--listen",
         f"10.78.0.2:{PORT}", "--interval-ms", "1000", "--out", str(recv_out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stdout is not None
        if "listening" not in receiver.stdout.readline():
            raise SystemExit(f"{cc}: the receiver did not start")
        acks, cpu = path.in_segments(), busy_cpu_seconds()
        sh("ip", "netns", "exec", path.sender, str(AGENT), "send", "--dst", f"10.78.0.2:{PORT}",
           "--cc", cc, "--duration-s", str(duration_s), "--interval-ms", "1000",
           "--out", str(send_out), "--flow-id", "0")  # fmt: skip
        cpu_s = busy_cpu_seconds() - cpu
        acks = path.in_segments() - acks
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
    summary = [json.loads(line) for line in send_out.read_text().splitlines()][-1]
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
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per controller")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-bpf needs root (namespaces and BPF)", file=sys.stderr)
        return 2
    algorithms = [a for a in args.algorithms.split(",") if a]
    unknown = sorted(set(algorithms) - {a.value for a in PARAMETERS})
    if unknown:
        print(f"--algorithms: no BPF controller {', '.join(unknown)}", file=sys.stderr)
        return 2
    stats_before = STATS.read_text().strip()
    with tempfile.TemporaryDirectory(prefix="ccbench-bench-bpf-") as tmp, VethPair() as path:
        work = Path(tmp)
        STATS.write_text("1")
        try:
            first = one_flow(path, "reno", args.duration, work)
            results: dict[str, dict[str, float]] = {}
            for k, algorithm in enumerate(algorithms):
                name = bpf.controller_name("bench-bpf", k, algorithm)
                plan = ControllerPlan(name, algorithm, {}, {})
                with bpf.loaded([plan], work):
                    ns_before = controller_ns(algorithm)
                    results[algorithm] = one_flow(path, name, args.duration, work)
                    ns_after = controller_ns(algorithm)
                results[algorithm]["bpf_ns_per_ack"] = (ns_after - ns_before) / max(
                    results[algorithm]["acks"], 1
                )
            last = one_flow(path, "reno", args.duration, work)
        finally:
            STATS.write_text(stats_before)
    baseline = (first["cpu_us_per_ack"] + last["cpu_us_per_ack"]) / 2
    figure("reno_builtin_gbps", (first["gbps"] + last["gbps"]) / 2, "Gbit/s")
    figure("reno_builtin_cpu_us_per_ack", baseline, "us")
    figure("reno_builtin_noise", abs(first["cpu_us_per_ack"] - last["cpu_us_per_ack"]) / baseline,
           "ratio", "first vs last reno run")  # fmt: skip
    for algorithm, r in results.items():
        figure(f"{algorithm}_gbps", r["gbps"], "Gbit/s")
        figure(f"{algorithm}_cpu_us_per_ack", r["cpu_us_per_ack"], "us")
        figure(f"{algorithm}_cpu_per_ack_vs_reno", r["cpu_us_per_ack"] / baseline, "ratio")
        figure(f"{algorithm}_controller_ns_per_ack", r["bpf_ns_per_ack"], "ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
