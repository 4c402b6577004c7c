#!/usr/bin/python3
"""Ansible module: measure the network path from this host to each of a trial's receivers
just before the flows start: base RTT (ping), path MTU (ping with Don't Fragment) and the
clock offset of the receiver against this host (ICMP timestamp requests, RFC 792, as iputils'
clockdiff does: millisecond resolution, the exchange with the smallest RTT wins). Changes
nothing. Runs under the host's Python 3 (stdlib only), as root (raw ICMP socket)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ccbench_path import measure_paths

DOCUMENTATION = r"""
module: ccbench_path
short_description: Measure base RTT, path MTU and clock offset towards a trial's receivers
options:
  targets:
    description: C({name, address}) per flow sent from this host.
    type: list
    elements: dict
    required: true
  count:
    description: Echo requests per target for the RTT.
    type: int
    default: 5
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "targets": {"type": "list", "elements": "dict", "required": True},
            "count": {"type": "int", "default": 5},
        },
        supports_check_mode=True,
    )
    paths = measure_paths(module.params["targets"], module.params["count"])
    module.exit_json(changed=False, ccbench_report={"paths": paths})


if __name__ == "__main__":
    main()
