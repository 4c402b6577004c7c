"""ccbench's userspace transport against kernel TCP (issue: userspace agent), one process:

- one bulk flow over an unshaped veth pair between two network namespaces, kernel TCP cubic
  (ccbench-agent send/recv) and then the userspace transport (usend/urecv) with each
  controller asked for: goodput in Gbit/s and host CPU per byte delivered (all CPUs' busy
  time / bytes received), as a ratio to kernel cubic measured in the same run (target <= 2);
- pacing accuracy: unresponsive CBR at 10 Mbit/s through the transport's pacer, packets
  timestamped by the receiving kernel (AF_PACKET, SO_TIMESTAMPNS): the error of each
  inter-departure gap against the pacer's spacing, p50/p99 (target p99 <= 50 us), with the
  sender at normal priority and under SCHED_FIFO ("rt": wake-ups not delayed by other load),
  and the sender's CPU share (what its spin before each departure costs);
- `--runs` rounds (default 3), each a userspace flow per controller between kernel cubic flows
  and both pacing modes: medians and their range (`_min`, `_max`).

    make bench-userspace
    python -m bench.userspace --algorithms reno,vegas --duration 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bpf import AGENT, VethPair, busy_cpu_seconds
from bench.figures import figure as emit

PORT = 5301
PACING_RATE_BPS = 10e6
SO_TIMESTAMPNS = 35
ETH_P_IP = 0x0800


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("userspace", name, value, unit, target)


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def one_flow(path: VethPair, kind: str, cc: str, duration_s: float, work: Path) -> dict[str, float]:
    """kind: "kernel" (send/recv) or "userspace" (usend/urecv)."""
    send_cmd, recv_cmd = ("send", "recv") if kind == "kernel" else ("usend", "urecv")
    recv_out, send_out = work / f"{kind}-{cc}.recv.jsonl", work / f"{kind}-{cc}.send.jsonl"
    receiver = subprocess.Popen(
        in_ns(path.receiver, str(AGENT), recv_cmd, "--listen", f"10.78.0.2:{PORT}",
              "--interval-ms", "1000", "--out", str(recv_out)),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stdout is not None
        if "listening" not in receiver.stdout.readline():
            raise SystemExit(f"{kind} {cc}: the receiver did not start")
        cpu = busy_cpu_seconds()
        subprocess.run(
            in_ns(path.sender, str(AGENT), send_cmd, "--dst", f"10.78.0.2:{PORT}", "--cc", cc,
                  "--duration-s", str(duration_s), "--interval-ms", "1000",
                  "--out", str(send_out)),
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        # The receiver has everything once the sender's summary is written (the transport
        # waits for the last ACK); give kernel TCP's receiver a moment to drain.
        time.sleep(0.2)
        cpu_s = busy_cpu_seconds() - cpu
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
    received = sum(
        r["bytes"] for r in map(json.loads, recv_out.read_text().splitlines())
        if r.get("type") == "recv"
    )  # fmt: skip
    summary = [json.loads(line) for line in send_out.read_text().splitlines()][-1]
    seconds = max(1e-9, float(summary["end_ts"]) - float(summary["start_ts"]))
    return {
        "gbps": received * 8 / seconds / 1e9,
        "cpu_ns_per_byte": cpu_s / max(received, 1) * 1e9,
    }


def start_capture(ns: str, dev: str, count: int, timeout_s: float) -> subprocess.Popen[str]:
    """A child Python in `ns` that records the kernel receive timestamps and IP lengths of the
    next `count` UDP data packets on `dev` (not the ACKs, which come from the receiver's
    port) and prints them when done; this process stays in its own namespace."""
    script = (
        "import socket,struct\n"
        f"s=socket.socket(socket.AF_PACKET,socket.SOCK_DGRAM,socket.htons({ETH_P_IP}))\n"
        f"s.bind(({dev!r},0))\n"
        f"s.setsockopt(socket.SOL_SOCKET,{SO_TIMESTAMPNS},1)\n"
        f"s.settimeout({timeout_s})\n"
        "print('ready',flush=True)\n"
        "out=[]\n"
        f"while len(out)<{count}:\n"
        "    data,anc,_,_=s.recvmsg(2048,64)\n"
        f"    if data[9]!=17 or data[20:22]==struct.pack('!H',{PORT}):continue\n"
        "    sec,nsec=struct.unpack('qq',anc[0][2][:16])\n"
        "    out.append(f'{sec}.{nsec:09d} {len(data)}')\n"
        "print('\\n'.join(out),flush=True)\n"
    )
    proc = subprocess.Popen(in_ns(ns, sys.executable, "-c", script),
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise SystemExit("the packet capture did not start")
    return proc


def pacing_accuracy(
    path: VethPair, work: Path, realtime: bool, packets: int = 4000
) -> dict[str, float]:
    """realtime: the sender runs under SCHED_FIFO (chrt -f 10), so other load on the host
    cannot delay its wake-ups."""
    capture = start_capture(path.receiver, "ccbbr0", packets, 30)
    receiver = subprocess.Popen(
        in_ns(path.receiver, str(AGENT), "urecv", "--listen", f"10.78.0.2:{PORT}",
              "--interval-ms", "1000", "--out", str(work / "cbr.recv.jsonl")),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stdout is not None
        if "listening" not in receiver.stdout.readline():
            raise SystemExit("cbr: the receiver did not start")
        duration = packets * 1500 * 8 / PACING_RATE_BPS * 1.3 + 1
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        subprocess.run(
            in_ns(path.sender, *(["chrt", "-f", "10"] if realtime else []), str(AGENT), "usend",
                  "--dst", f"10.78.0.2:{PORT}",
                  "--cbr-rate-bps", str(int(PACING_RATE_BPS)), "--duration-s", f"{duration:.1f}",
                  "--interval-ms", "1000", "--out", str(work / "cbr.send.jsonl")),
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started
        cpu_s = sum(getattr(after, f) - getattr(before, f) for f in ("ru_utime", "ru_stime"))
        out, _ = capture.communicate(timeout=60)
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
        if capture.poll() is None:
            capture.kill()
            capture.wait()
    rows = [line.split() for line in out.splitlines() if line]
    if len(rows) < packets:
        raise SystemExit(f"the capture saw {len(rows)} of {packets} packets")
    stamps = np.array([float(r[0]) for r in rows])
    sizes = np.array([int(r[1]) for r in rows])
    gaps = np.diff(stamps)[100:]  # skip the start
    sizes = sizes[1:][100:]
    # Timing error: each gap against the spacing the pacer keeps for that packet's size (its
    # median time per byte, whichever header bytes it counts); the rate is reported apart,
    # as the IP bytes delivered per second against the configured rate.
    expected = sizes * float(np.median(gaps / sizes))
    error_us = np.abs(gaps - expected) * 1e6
    return {
        "gap_error_p50_us": float(np.percentile(error_us, 50)),
        "gap_error_p99_us": float(np.percentile(error_us, 99)),
        "ip_rate_ratio": float(sizes.sum() * 8 / gaps.sum() / PACING_RATE_BPS),
        "gap_us": float(np.median(gaps) * 1e6),
        # What the pacing costs: the sender's CPU time (its spin included) per second.
        "sender_cpu_share": cpu_s / wall,
    }


def spread(name: str, values: list[float], unit: str, target: str | None = None) -> None:
    """The median of `values` as `name` (with the target), and their range as name_min/_max."""
    figure(name, statistics.median(values), unit, target)
    figure(f"{name}_min", min(values), unit)
    figure(f"{name}_max", max(values), unit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithms", default="reno", help="userspace controllers to run")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per flow")
    parser.add_argument("--runs", type=int, default=3, help="rounds (medians and spread)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-userspace needs root (network namespaces)", file=sys.stderr)
        return 2
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    algorithms = [cc for cc in args.algorithms.split(",") if cc]
    kernel: list[dict[str, float]] = []
    ratios: dict[str, list[float]] = {cc: [] for cc in algorithms}
    results: dict[str, list[dict[str, float]]] = {cc: [] for cc in algorithms}
    pacing: dict[str, list[dict[str, float]]] = {"normal": [], "rt": []}
    with tempfile.TemporaryDirectory(prefix="ccbench-bench-us-") as tmp, VethPair() as path:
        work = Path(tmp)
        # Interleaved: kernel cubic before and after each round of userspace flows, each
        # userspace flow's ratio against the mean of the kernel runs around it (load that
        # comes and goes on a shared host then shows as spread, not as a bias).
        kernel.append(one_flow(path, "kernel", "cubic", args.duration, work))
        for _ in range(args.runs):
            round_results = {cc: one_flow(path, "userspace", cc, args.duration, work)
                             for cc in algorithms}  # fmt: skip
            kernel.append(one_flow(path, "kernel", "cubic", args.duration, work))
            around = (kernel[-2]["cpu_ns_per_byte"] + kernel[-1]["cpu_ns_per_byte"]) / 2
            for cc, r in round_results.items():
                results[cc].append(r)
                ratios[cc].append(r["cpu_ns_per_byte"] / around)
            for mode in ("normal", "rt"):
                pacing[mode].append(pacing_accuracy(path, work, realtime=mode == "rt"))
    figure("runs", args.runs, "count")
    spread("kernel_cubic_gbps", [k["gbps"] for k in kernel], "Gbit/s")
    spread("kernel_cubic_cpu_ns_per_byte", [k["cpu_ns_per_byte"] for k in kernel], "ns")
    for cc in algorithms:
        spread(f"userspace_{cc}_gbps", [r["gbps"] for r in results[cc]], "Gbit/s", ">= 1")
        spread(f"userspace_{cc}_cpu_ns_per_byte", [r["cpu_ns_per_byte"] for r in results[cc]],
               "ns")  # fmt: skip
        spread(f"userspace_{cc}_cpu_per_byte_vs_kernel_cubic", ratios[cc], "ratio", "<= 2")
    for mode, runs in pacing.items():
        spread(f"pacing_10mbit_{mode}_median_gap", [r["gap_us"] for r in runs], "us")
        spread(f"pacing_10mbit_{mode}_gap_error_p50", [r["gap_error_p50_us"] for r in runs], "us")
        spread(f"pacing_10mbit_{mode}_gap_error_p99", [r["gap_error_p99_us"] for r in runs], "us",
               "<= 50")  # fmt: skip
        spread(f"pacing_10mbit_{mode}_ip_rate_ratio", [r["ip_rate_ratio"] for r in runs],
               "ratio", "~1")  # fmt: skip
        spread(f"pacing_10mbit_{mode}_sender_cpu_share", [r["sender_cpu_share"] for r in runs],
               "ratio", "of one CPU")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
