#!/usr/bin/python3
"""Ansible module: prepare a host's kernel for ccbench in one round trip.

Makes the requested congestion controls available (modprobe tcp_<name> when missing) and
allowed (net.ipv4.tcp_allowed_congestion_control), and sets sysctls (socket buffers). Reads
before it writes, so a host already prepared reports changed=false. A congestion control the
kernel cannot offer fails with a message starting "capability missing:". A host that is a
network namespace or container sees the machine-wide sysctls (the allowed list, net.core.*)
read-only: those are left alone and reported under `skipped`, with a warning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ccbench_kernel
short_description: Make congestion controls available and allowed, set sysctls
options:
  congestion_controls:
    description: Kernel congestion controls to load if missing and add to the allowed list.
    type: list
    elements: str
    default: []
  sysctls:
    description: sysctl name to value; written only where the current value differs
      (whitespace-insensitive, so C(4096 131072 6291456) matches the kernel's tabs).
    type: dict
    default: {}
"""

PROC_SYS = Path("/proc/sys")
AVAILABLE = "net.ipv4.tcp_available_congestion_control"
ALLOWED = "net.ipv4.tcp_allowed_congestion_control"


def sysctl_path(name: str) -> Path:
    return PROC_SYS / name.replace(".", "/")


def read_sysctl(module: AnsibleModule, name: str) -> str:
    try:
        return sysctl_path(name).read_text().strip()
    except OSError as exc:
        module.fail_json(msg=f"cannot read sysctl {name}: {exc.strerror}")
        raise  # not reached: fail_json exits


def read_only_here(name: str) -> bool:
    """The kernel shows machine-wide sysctls read-only (mode 0444) outside the initial
    network namespace."""
    return not sysctl_path(name).stat().st_mode & 0o200


def write_sysctl(module: AnsibleModule, name: str, value: str) -> None:
    try:
        sysctl_path(name).write_text(value)
    except OSError as exc:
        module.fail_json(msg=f"cannot set sysctl {name} to '{value}': {exc.strerror}")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "congestion_controls": {"type": "list", "elements": "str", "default": []},
            "sysctls": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    wanted: list[str] = module.params["congestion_controls"]
    changes: list[str] = []
    skipped: list[str] = []
    result: dict[str, Any] = {}

    available = read_sysctl(module, AVAILABLE).split()
    missing = [name for name in wanted if name not in available]
    modprobe = shutil.which("modprobe")
    if missing and modprobe and not module.check_mode:
        for name in missing:
            loaded = subprocess.run([modprobe, f"tcp_{name}"], capture_output=True, check=False)
            if loaded.returncode == 0:
                changes.append(f"loaded tcp_{name}")
        available = read_sysctl(module, AVAILABLE).split()
        missing = [name for name in wanted if name not in available]
    if missing:
        module.fail_json(
            msg=f"capability missing: congestion control {', '.join(missing)} is not available "
            f"on this host (available: {' '.join(available)}"
            + ("" if modprobe else "; no modprobe to load more")
            + ")",
            available=available,
        )
    result["available"] = available

    allowed = read_sysctl(module, ALLOWED).split()
    not_allowed = [name for name in wanted if name not in allowed]
    if not_allowed and read_only_here(ALLOWED):
        skipped.append(f"{ALLOWED} += {' '.join(not_allowed)}")
    elif not_allowed:
        allowed = allowed + not_allowed
        if not module.check_mode:
            write_sysctl(module, ALLOWED, " ".join(allowed))
        changes.append(f"allowed {' '.join(not_allowed)}")
    result["allowed"] = allowed

    for name, value in module.params["sysctls"].items():
        value = str(value)
        if read_sysctl(module, name).split() != value.split():
            if read_only_here(name):
                skipped.append(f"{name}={value}")
                continue
            if not module.check_mode:
                write_sysctl(module, name, value)
            changes.append(f"{name}={value}")

    for item in skipped:
        module.warn(f"left alone, read-only in this network namespace: {item}")
    module.exit_json(changed=bool(changes), changes=changes, skipped=skipped, **result)


if __name__ == "__main__":
    main()
