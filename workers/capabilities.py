"""What this worker can run, probed once when it starts and registered in the database
(ccbench.workerpool.Capabilities): the dispatcher sends it only runs it can run."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from ccbench.settings import Settings
from ccbench.workerpool import Capabilities
from workers import bpf
from workers.testbeds.mininet.probe import congestion_controls, nfqueue_available


def probe_capabilities(settings: Settings) -> Capabilities:
    root = os.geteuid() == 0
    testbeds = ["hosts"]  # Ansible is a dependency of the worker
    if root and shutil.which("unshare") and _has_mininet(str(settings.sandbox_python)):
        testbeds.insert(0, "mininet")
    bpf_found = bpf.probe(try_load=root)["loadable"] if root else {}
    return Capabilities(
        testbeds=testbeds,
        congestion_controls=sorted(set(congestion_controls()) | loadable_modules()),
        bpf=sorted(a for a, state in bpf_found.items() if state == "ok"),
        netem=root and _netem_in_private_netns(),
        nfqueue=nfqueue_available(),
    )


def loadable_modules() -> set[str]:
    """Congestion controls the kernel loads on first use (tcp_<name> modules it ships)."""
    base = Path("/lib/modules") / platform.release() / "kernel" / "net" / "ipv4"
    return {p.name.split(".")[0].removeprefix("tcp_") for p in base.glob("tcp_*.ko*")}


def _has_mininet(python: str) -> bool:
    done = subprocess.run([python, "-c", "import mininet.net"], capture_output=True, check=False)
    return done.returncode == 0


def _netem_in_private_netns() -> bool:
    """netem exists when a throwaway network namespace accepts a netem qdisc."""
    done = subprocess.run(
        ["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0
