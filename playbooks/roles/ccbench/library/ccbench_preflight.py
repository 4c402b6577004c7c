#!/usr/bin/python3
"""Ansible module: check, before a trial starts anything, that a host has what the trial needs.

Fails with "not provisioned: ..." when provisioning would fix it (an agent binary missing or
not the worker's build, a congestion control whose module is not loaded, BPF controllers not
built from the worker's sources against this kernel's BTF) and with "capability missing: ..."
when it would not (a congestion control the kernel cannot offer, no BTF or bpftool for BPF
controllers, forwarding switched off on a router, no iptables). The agents run as root, so
net.ipv4.tcp_allowed_congestion_control (provisioning's business) does not limit them.
Reports the installed agents' versions and the kernel. Changes nothing. Runs under the
host's Python 3 (stdlib only)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ccbench_bpf_host import BTF, BpfError, btf_digest

DOCUMENTATION = r"""
module: ccbench_preflight
short_description: Check a host has the agents, congestion controls and router support a trial needs
options:
  prefix:
    description: ccbench install prefix (binaries in C(bin/)).
    type: str
    required: true
  binaries:
    description: C({name, sha256}) of each binary the trial runs on this host.
    type: list
    elements: dict
    default: []
  congestion_controls:
    description: Kernel congestion controls this host's senders select.
    type: list
    elements: str
    default: []
  router:
    description: Whether this host forwards the trial's packets through ccbench-link.
    type: bool
    default: false
  bpf:
    description: The BPF controllers this host's senders use, C({build, source_sha256,
      algorithms}); their objects must have been built in C(build) from sources with that
      digest, against this kernel's BTF (ccbench_bpf build). Empty for none.
    type: dict
    default: {}
"""

NOT_PROVISIONED = "not provisioned:"
CAPABILITY_MISSING = "capability missing:"


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_words(path: str) -> list[str]:
    try:
        with open(path) as handle:
            return handle.read().split()
    except OSError:
        return []


def module_exists(name: str) -> bool:
    """Whether `modprobe tcp_<name>` could load the controller."""
    if shutil.which("modinfo") is None:
        return False
    proc = subprocess.run(
        ["modinfo", f"tcp_{name}"], capture_output=True, text=True, check=False, timeout=10
    )
    return proc.returncode == 0


def bpf_problems(bpf: dict[str, Any]) -> list[str]:
    """Why this host cannot register the trial's BPF controllers (none: it can)."""
    if not bpf.get("algorithms"):
        return []
    if not os.path.exists(BTF):
        return [f"{CAPABILITY_MISSING} kernel {platform.release()} has no BTF ({BTF}), which "
                "BPF congestion controllers need"]  # fmt: skip
    if shutil.which("bpftool") is None:
        return [f"{CAPABILITY_MISSING} bpftool is missing (Debian package bpftool)"]
    build = str(bpf["build"])
    try:
        with open(os.path.join(build, "stamp.json")) as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        stamp = {}
    try:
        btf = btf_digest()
    except BpfError as exc:
        return [f"{CAPABILITY_MISSING} {exc}"]
    if stamp.get("source_sha256") != bpf.get("source_sha256"):
        why = "not built" if not stamp else "built from other sources than the worker's"
        return [f"{NOT_PROVISIONED} BPF controllers in {build}: {why}"]
    if stamp.get("btf_sha256") != btf:
        return [f"{NOT_PROVISIONED} BPF controllers in {build} were built for another kernel "
                f"(now {platform.release()})"]  # fmt: skip
    return [
        f"{NOT_PROVISIONED} BPF object {name}.bpf.o is missing in {build}"
        for name in bpf["algorithms"]
        if not os.path.isfile(os.path.join(build, f"{name}.bpf.o"))
    ]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "prefix": {"type": "str", "required": True},
            "binaries": {"type": "list", "elements": "dict", "default": []},
            "congestion_controls": {"type": "list", "elements": "str", "default": []},
            "router": {"type": "bool", "default": False},
            "bpf": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    prefix = module.params["prefix"]
    problems: list[str] = []
    versions: dict[str, str | None] = {}
    for binary in module.params["binaries"]:
        path = os.path.join(prefix, "bin", str(binary["name"]))
        if not os.access(path, os.X_OK):
            problems.append(f"{NOT_PROVISIONED} {path} is missing")
            continue
        if binary.get("sha256") and sha256(path) != binary["sha256"]:
            problems.append(f"{NOT_PROVISIONED} {path} is not the worker's build")
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
        versions[str(binary["name"])] = proc.stdout.strip() if proc.returncode == 0 else None

    available = read_words("/proc/sys/net/ipv4/tcp_available_congestion_control")
    for name in module.params["congestion_controls"]:
        if name not in available and not module_exists(name):
            problems.append(
                f"{CAPABILITY_MISSING} congestion control {name} is not available in kernel "
                f"{platform.release()} (available: {' '.join(available)}; no module tcp_{name})"
            )
        elif name not in available:
            problems.append(f"{NOT_PROVISIONED} congestion control {name} is not loaded")

    problems.extend(bpf_problems(module.params["bpf"] or {}))

    if module.params["router"]:
        if read_words("/proc/sys/net/ipv4/ip_forward") != ["1"]:
            problems.append(
                f"{CAPABILITY_MISSING} the router does not forward (net.ipv4.ip_forward is 0)"
            )
        if shutil.which("iptables") is None:
            problems.append(f"{CAPABILITY_MISSING} iptables is missing on the router")

    report = {"kernel": platform.release(), "versions": versions}
    if problems:
        # Capability problems first: provisioning cannot fix them.
        problems.sort(key=lambda p: not p.startswith(CAPABILITY_MISSING))
        module.fail_json(msg="; ".join(problems), ccbench_report=report)
    module.exit_json(changed=False, ccbench_report=report)


if __name__ == "__main__":
    main()
