"""Measuring the network path from this host to a trial's receivers just before the flows
start: base RTT (ping), path MTU (ping with Don't Fragment) and the clock offset of the
receiver against this host (ICMP timestamp requests, RFC 792, as iputils' clockdiff does:
millisecond resolution, the exchange with the smallest RTT wins). Changes nothing. Shared by
the modules ccbench_path and ccbench_agents (which measures while the receivers start). Host
Python 3, stdlib only, as root (raw ICMP socket)."""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ICMP_TIMESTAMP, ICMP_TIMESTAMP_REPLY = 13, 14
DAY_MS = 86_400_000
IPV4_ICMP_HEADERS = 28  # IPv4 (20) + ICMP (8) bytes added to ping's payload size


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30)


def ping_rtt(address: str, count: int) -> dict[str, float] | None:
    """Echo RTT min/avg/max in seconds; 10 ms apart (root may ping faster than 200 ms), so
    five of them cost the run 40 ms plus a round trip."""
    proc = run("ping", "-n", "-q", "-c", str(count), "-i", "0.01", "-W", "2", address)
    match = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)", proc.stdout)
    if not match:
        return None
    low, avg, high = (float(x) / 1000 for x in match.groups())
    return {"min": low, "avg": avg, "max": high}


def route_mtu(address: str) -> tuple[str | None, int | None]:
    """The outgoing device and its MTU (or the route's own mtu attribute)."""
    proc = run("ip", "-j", "route", "get", address)
    try:
        route = json.loads(proc.stdout)[0]
    except (ValueError, IndexError):
        return None, None
    dev = route.get("dev")
    if route.get("metrics"):
        for metric in route["metrics"]:
            if isinstance(metric, dict) and "mtu" in metric:
                return dev, int(metric["mtu"])
    link = run("ip", "-j", "link", "show", "dev", str(dev))
    try:
        return dev, int(json.loads(link.stdout)[0]["mtu"])
    except (ValueError, IndexError, KeyError):
        return dev, None


def fits(address: str, mtu: int) -> bool:
    proc = run("ping", "-n", "-q", "-c", "1", "-W", "1", "-M", "do", "-s",
               str(mtu - IPV4_ICMP_HEADERS), address)  # fmt: skip
    return proc.returncode == 0


def path_mtu(address: str) -> dict[str, Any]:
    """The largest packet that crosses the path unfragmented: the route's MTU when a
    Don't-Fragment ping of that size gets through, else a binary search down to 576."""
    dev, mtu = route_mtu(address)
    if mtu is None:
        return {"dev": dev, "mtu": None, "verified": False}
    if fits(address, mtu):
        return {"dev": dev, "mtu": mtu, "verified": True}
    low, high = 576, mtu - 1
    if not fits(address, low):
        return {"dev": dev, "mtu": None, "verified": False, "route_mtu": mtu}
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(address, middle) else (low, middle - 1)
    return {"dev": dev, "mtu": low, "verified": True, "route_mtu": mtu}


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def ms_of_day(unix_s: float) -> int:
    return int(unix_s * 1000) % DAY_MS


def wrapped(ms: float) -> float:
    """A difference of times of day, folded into [-12 h, 12 h)."""
    return (ms + DAY_MS / 2) % DAY_MS - DAY_MS / 2


def clock_offset(
    address: str, tries: int = 7, timeout_s: float = 1.0, index: int = 0
) -> dict[str, Any]:
    """Receiver clock minus this host's clock, from ICMP timestamp exchanges: offset =
    (receive + transmit)/2 - (originate + return)/2, taking the exchange with the smallest
    round trip (its error is at most half of it, plus the 1 ms resolution). `index` tells
    concurrent exchanges apart (every raw ICMP socket sees every reply)."""
    ident = (os.getpid() + index) & 0xFFFF
    best: tuple[float, float] | None = None
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    except OSError as exc:
        return {"offset_s": None, "error": f"raw ICMP socket: {exc.strerror}"}
    with sock:
        sock.settimeout(timeout_s)
        for seq in range(tries):
            sent = time.time()
            header = struct.pack("!BBHHHIII", ICMP_TIMESTAMP, 0, 0, ident, seq,
                                 ms_of_day(sent), 0, 0)  # fmt: skip
            packet = header[:2] + struct.pack("!H", checksum(header)) + header[4:]
            sock.sendto(packet, (address, 0))
            deadline = sent + timeout_s
            while time.time() < deadline:
                try:
                    data = sock.recv(1024)
                except TimeoutError:
                    break
                returned = time.time()
                icmp = data[(data[0] & 0x0F) * 4 :]
                if len(icmp) < 20:
                    continue
                kind, _, _, rid, rseq, orig, recv, xmit = struct.unpack("!BBHHHIII", icmp[:20])
                if kind != ICMP_TIMESTAMP_REPLY or rid != ident or rseq != seq:
                    continue
                if recv & 0x80000000 or xmit & 0x80000000:  # non-standard time: unusable
                    return {"offset_s": None, "error": "the receiver's timestamps are not UTC"}
                remote = (recv + xmit) / 2
                local = ms_of_day(sent) + (returned - sent) * 1000 / 2
                sample = (wrapped(remote - local) / 1000, returned - sent)
                if best is None or sample[1] < best[1]:
                    best = sample
                break
    if best is None:
        return {"offset_s": None, "error": "no ICMP timestamp reply"}
    return {"offset_s": best[0], "rtt_s": best[1], "resolution_s": 0.001}


def measure_paths(targets: list[dict[str, Any]], count: int = 5) -> dict[str, Any]:
    """Every measurement of every target ({name, address}) at once: each is a few packets
    that wait for their replies, so together they take as long as the slowest (the echo
    RTT), not the sum."""
    named = [(str(t["name"]), str(t["address"])) for t in targets]
    with ThreadPoolExecutor(max_workers=max(1, 3 * len(named))) as pool:
        futures = {
            name: (
                address,
                pool.submit(ping_rtt, address, count),
                pool.submit(path_mtu, address),
                pool.submit(clock_offset, address, index=k),
            )
            for k, (name, address) in enumerate(named)
        }
    return {
        name: {
            "address": address,
            "ping_rtt_s": rtt.result(),
            "path_mtu": mtu.result(),
            "clock": clock.result(),
        }
        for name, (address, rtt, mtu, clock) in futures.items()
    }
