#!/usr/bin/python3
"""Ansible module: what an experiment host offers ccbench, read in one round trip.

Changes nothing on the host: qdisc kinds are tried on a veth inside a throwaway network
namespace (`unshare --net`), which disappears with the probing shell. Runs under the host's
Python 3 (stdlib only)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import shutil
import subprocess
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ccbench_probe
short_description: Read a host's kernel, BTF, congestion controls, qdiscs, clock and agents
description:
  - Returns the facts ccbench needs before it provisions a host or runs a trial on it.
options:
  prefix:
    description: ccbench install prefix, where C(bin/ccbench-agent) may already be.
    type: str
    required: true
  qdiscs:
    description: Queue-discipline kinds to try in a throwaway network namespace.
    type: list
    elements: str
    required: true
"""

# Arguments that make each kind's `tc qdisc add` valid; kinds not listed need none.
QDISC_ARGS = {
    "tbf": ["rate", "1mbit", "burst", "10kb", "latency", "50ms"],
    "red": [
        "limit",
        "100000",
        "min",
        "10000",
        "max",
        "30000",
        "avpkt",
        "1000",
        "burst",
        "20",
        "bandwidth",
        "10mbit",
    ],
    "netem": ["delay", "1ms"],
}

# adjtimex(2): clock states and the "unsynchronised" status bit.
TIME_ERROR = 5
STA_UNSYNC = 0x0040


class Timex(ctypes.Structure):
    """struct timex of <sys/timex.h> (Linux): longs and ints, then 11 ints of padding."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long),
        ("time_usec", ctypes.c_long),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("padding", ctypes.c_int * 11),
    ]


def read_words(path: str) -> list[str] | None:
    try:
        with open(path) as handle:
            return handle.read().split()
    except OSError:
        return None


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=20)


def qdisc_kinds(kinds: list[str]) -> dict[str, Any]:
    """Which kinds `tc qdisc add` accepts, tried on a veth in a throwaway namespace."""
    if shutil.which("unshare") is None or shutil.which("tc") is None:
        return {"kinds": None, "error": "unshare (util-linux) or tc (iproute2) is missing"}
    script = ["ip link add ccbp0 type veth peer name ccbp1 || exit 3"]
    for kind in kinds:
        args = " ".join([kind, *QDISC_ARGS.get(kind, [])])
        script.append(
            f"if tc qdisc add dev ccbp0 root {args} >/dev/null 2>&1; then echo {kind}; "
            "tc qdisc del dev ccbp0 root; fi"
        )
    proc = run("unshare", "--net", "sh", "-c", "\n".join(script))
    if proc.returncode != 0:
        return {"kinds": None, "error": proc.stderr.strip() or f"exit code {proc.returncode}"}
    return {"kinds": proc.stdout.split(), "error": None}


def clock_state() -> dict[str, Any]:
    """The kernel's NTP state (adjtimex), plus chrony's and timedated's view where present."""
    clock: dict[str, Any] = {"synchronized": None, "source": None}
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    timex = Timex()
    state = libc.adjtimex(ctypes.byref(timex))
    if state >= 0:
        clock["adjtimex"] = {
            "state": state,
            "unsync": bool(timex.status & STA_UNSYNC),
            "maxerror_us": timex.maxerror,
            "esterror_us": timex.esterror,
        }
        clock["synchronized"] = state != TIME_ERROR and not timex.status & STA_UNSYNC
        clock["source"] = "adjtimex"
    if shutil.which("chronyc"):
        proc = run("chronyc", "-c", "tracking")
        fields = proc.stdout.strip().split(",")
        # CSV: ref id, name, stratum, ref time, system time offset (s), ..., leap status last.
        if proc.returncode == 0 and len(fields) > 4:
            clock["chrony"] = {
                "reference": fields[1],
                "stratum": int(fields[2]),
                "offset_s": float(fields[4]),
                "leap": fields[-1],
            }
    if shutil.which("timedatectl"):
        proc = run("timedatectl", "show", "--property=NTPSynchronized", "--value")
        if proc.returncode == 0 and proc.stdout.strip() in ("yes", "no"):
            clock["timedatectl_ntp_synchronized"] = proc.stdout.strip() == "yes"
    return clock


def agent_versions(prefix: str) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for binary in ("ccbench-agent", "ccbench-link"):
        path = os.path.join(prefix, "bin", binary)
        versions[binary] = None
        if os.access(path, os.X_OK):
            proc = run(path, "--version")
            versions[binary] = proc.stdout.strip() if proc.returncode == 0 else None
    return versions


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "prefix": {"type": "str", "required": True},
            "qdiscs": {"type": "list", "elements": "str", "required": True},
        },
        supports_check_mode=True,
    )
    qdiscs = qdisc_kinds(module.params["qdiscs"])
    kinds = qdiscs["kinds"]
    facts = {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "btf": os.path.exists("/sys/kernel/btf/vmlinux"),
        "congestion_controls": {
            "available": read_words("/proc/sys/net/ipv4/tcp_available_congestion_control"),
            "allowed": read_words("/proc/sys/net/ipv4/tcp_allowed_congestion_control"),
            "default": (read_words("/proc/sys/net/ipv4/tcp_congestion_control") or [None])[0],
        },
        "qdiscs": kinds,
        "qdisc_probe_error": qdiscs["error"],
        "netem": None if kinds is None else "netem" in kinds,
        # ccbench-link's bottleneck needs NFQUEUE rules, added with iptables.
        "nfqueue": os.path.exists("/proc/net/netfilter/nfnetlink_queue"),
        "tools": {
            name: shutil.which(name) is not None
            for name in ("ip", "tc", "iptables", "ping", "bpftool", "ethtool")
        },
        "clock": clock_state(),
        "agent_versions": agent_versions(module.params["prefix"]),
    }
    module.exit_json(changed=False, facts=facts)


if __name__ == "__main__":
    main()
