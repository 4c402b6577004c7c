"""What this host can do for an emulated run: kernel, congestion controllers, netem, NFQUEUE.
Probes that modify anything run only inside a sandbox's own network namespace."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Any


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def congestion_controls() -> list[str]:
    path = "/proc/sys/net/ipv4/tcp_available_congestion_control"
    try:
        with open(path) as handle:
            return handle.read().split()
    except OSError:
        return []


def netem_available(dev: str = "lo") -> bool:
    """Add and remove a netem qdisc on `dev`. Call it only inside a private network namespace."""
    added = _run(
        "tc", "qdisc", "add", "dev", dev, "root", "handle", "ffff:", "netem", "delay", "1ms"
    )
    if added.returncode != 0:
        return False
    _run("tc", "qdisc", "del", "dev", dev, "root")
    return True


def nfqueue_available() -> bool:
    return (
        os.path.exists("/proc/net/netfilter/nfnetlink_queue")
        or _module_loaded("nfnetlink_queue")
        or shutil.which("iptables") is not None
    )


def _module_loaded(name: str) -> bool:
    try:
        with open("/proc/modules") as handle:
            return any(line.split()[0] == name for line in handle)
    except OSError:
        return False


def probe_host(in_private_netns: bool) -> dict[str, Any]:
    """Capabilities as recorded in provenance. netem is only tried in a private namespace."""
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "congestion_controls": congestion_controls(),
        "netem": netem_available() if in_private_netns else None,
        "nfqueue": nfqueue_available(),
        "iptables": (_run("iptables", "--version").stdout.strip() or None)
        if shutil.which("iptables")
        else None,
        "cpus": os.cpu_count(),
    }
