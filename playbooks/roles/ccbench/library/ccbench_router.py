#!/usr/bin/python3
"""Ansible module: send a trial's forwarded packets through ccbench-link on a router host.

`start` adds one iptables chain for the trial, CCB-<trial>, jumped to first from FORWARD:
packets towards the receivers leaving by their device go to the forward (data) queue, packets
from the receivers arriving by that device to the reverse (ACK) queue. Only the trial's
receiver addresses match, so other traffic the router forwards is left alone. `stop` removes
the jump and the chain (with `all`, every CCB-* chain: the cleanup after a lost run). Without
a listener on the queue the kernel drops the packets: a dead emulator never lets traffic
through unemulated."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ccbench_router
short_description: Add or remove the NFQUEUE rules of a trial's emulated bottleneck
options:
  action:
    description: C(start) adds the trial's chain; C(stop) removes it.
    type: str
    choices: [start, stop]
    required: true
  chain:
    description: The trial's chain name (CCB- and at most 25 more characters).
    type: str
    default: ""
  all:
    description: With C(stop), remove every CCB-* chain.
    type: bool
    default: false
  receivers:
    description: The receivers' addresses (C(start)).
    type: list
    elements: str
    default: []
  forward_queue:
    description: NFQUEUE number of the data direction (towards the receivers).
    type: int
    default: 0
  reverse_queue:
    description: NFQUEUE number of the ACK direction (from the receivers).
    type: int
    default: 0
"""

CHAIN = re.compile(r"^CCB-[A-Za-z0-9_-]{1,25}$")


def iptables(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, check=False)


def egress_device(address: str) -> str | None:
    proc = subprocess.run(["ip", "-j", "route", "get", address], capture_output=True,
                          text=True, check=False)  # fmt: skip
    try:
        return str(json.loads(proc.stdout)[0]["dev"])
    except (ValueError, IndexError, KeyError):
        return None


def gro(dev: str) -> str | None:
    """Whether the device merges received segments (GRO): the emulator then sees merged
    packets, so the run records it."""
    proc = subprocess.run(["ethtool", "-k", dev], capture_output=True, text=True, check=False)
    match = re.search(r"^generic-receive-offload: (\w+)", proc.stdout, re.M)
    return match.group(1) if match else None


def remove(chain: str) -> bool:
    removed = False
    while iptables("-D", "FORWARD", "-j", chain).returncode == 0:
        removed = True
    if iptables("-F", chain).returncode == 0:
        iptables("-X", chain)
        removed = True
    return removed


def start(module: AnsibleModule) -> dict[str, Any]:
    chain = module.params["chain"]
    devices = {}
    for address in module.params["receivers"]:
        dev = egress_device(address)
        if dev is None:
            module.fail_json(msg=f"the router has no route to receiver {address}")
        devices[address] = dev
    remove(chain)  # a retried trial starts clean
    commands = [["-N", chain]]
    for address, dev in devices.items():
        commands.append(["-A", chain, "-o", dev, "-d", address, "-j", "NFQUEUE",
                         "--queue-num", str(module.params["forward_queue"])])  # fmt: skip
        commands.append(["-A", chain, "-i", dev, "-s", address, "-j", "NFQUEUE",
                         "--queue-num", str(module.params["reverse_queue"])])  # fmt: skip
    commands.append(["-I", "FORWARD", "1", "-j", chain])
    for args in commands:
        proc = iptables(*args)
        if proc.returncode != 0:
            remove(chain)
            module.fail_json(msg=f"iptables {' '.join(args)}: {proc.stderr.strip()}")
    report = {
        "chain": chain,
        "devices": devices,
        "gro": {dev: gro(dev) for dev in sorted(set(devices.values()))},
    }
    return {"changed": True, "ccbench_report": {"router": report}}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "choices": ["start", "stop"], "required": True},
            "chain": {"type": "str", "default": ""},
            "all": {"type": "bool", "default": False},
            "receivers": {"type": "list", "elements": "str", "default": []},
            "forward_queue": {"type": "int", "default": 0},
            "reverse_queue": {"type": "int", "default": 0},
        },
    )
    chain = module.params["chain"]
    if chain and not CHAIN.match(chain):
        module.fail_json(msg=f"chain {chain!r}: CCB- and up to 25 letters, digits, '_', '-'")
    if module.params["action"] == "start":
        if not chain:
            module.fail_json(msg="start needs a chain name")
        module.exit_json(**start(module))
    if shutil.which("iptables") is None:
        module.exit_json(changed=False, removed=[])  # nothing can have been added
    if module.params["all"]:
        listed = iptables("-S").stdout.split("\n")
        chains = [line.split()[1] for line in listed if line.startswith("-N CCB-")]
    else:
        chains = [chain] if chain else []
    removed = [c for c in chains if remove(c)]
    module.exit_json(changed=bool(removed), removed=removed)


if __name__ == "__main__":
    main()
