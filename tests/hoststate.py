"""What a test may leave behind on the host: snapshot before, compare after."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass

# Maps of ccbench's BPF controllers: per-run trace ring buffers and the objects' data sections,
# named after the per-run object (cb<run tag><k>_<id>.bpf.o -> "cb<run tag>.rodata").
_CCBENCH_MAP = re.compile(r"^(ct[0-9a-f]{7}_trace|cb[0-9a-f]{6}\.(rodata|bss|data))$")


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def _ccbench_maps() -> set[str]:
    text = _run("bpftool", "-j", "map", "show").strip()
    maps = json.loads(text) if text else []
    return {f"{m['id']}:{m['name']}" for m in maps if _CCBENCH_MAP.match(m.get("name", ""))}


# ccbench's controllers, registered or pending (unregistered, still held by sockets).
_CCBENCH_CONTROLLER = re.compile(r"^cb[0-9a-f]{7}_")


def _ccbench_controllers() -> set[str]:
    text = _run("bpftool", "-j", "struct_ops", "dump").strip()
    entries = json.loads(text) if text else []
    names = set()
    for value in entries[1::2]:  # {"bpf_map_info": ...} then the struct it holds
        ops = value.get("bpf_struct_ops_tcp_congestion_ops")
        if ops and _CCBENCH_CONTROLLER.match(str(ops["data"]["name"])):
            state = str(ops.get("common", {}).get("state", "")).rsplit("_", 1)[-1].lower()
            names.add(f"{ops['data']['name']} ({state})")
    return names


# On a development machine shared with another ccbench installation running experiments (its
# own state directory), a regex of its processes' command lines, e.g. "/work/other-state":
# they come and go on their own and are not this test's. Unset (CI): every process counts.
_FOREIGN = os.environ.get("CCBENCH_TEST_FOREIGN_PROCESSES")


def _agent_processes() -> set[str]:
    out = _run("pgrep", "-a", "-f", "ccbench-agent|ccbench-link|sandbox.py|mnexec")
    return {
        line
        for line in out.splitlines()
        if "pgrep" not in line and not (_FOREIGN and re.search(_FOREIGN, line))
    }


@dataclass(frozen=True)
class HostState:
    links: frozenset[str]
    netns: frozenset[str]
    qdiscs: frozenset[str]
    iptables: str
    nft: str
    processes: frozenset[str]
    congestion_controls: frozenset[str]  # includes registered BPF controllers
    bpf_maps: frozenset[str]  # ccbench controllers' maps ("id:name")
    bpf_controllers: frozenset[str]  # "name (inuse|tobefree)", pending ones included

    @classmethod
    def capture(cls) -> HostState:
        links = frozenset(
            line.split(":")[1].strip()
            for line in _run("ip", "-o", "link", "show").splitlines()
            if ":" in line
        )
        iptables = "\n".join(
            line for line in _run("iptables-save").splitlines() if not line.startswith(("#", ":"))
        )
        return cls(
            links=links,
            netns=frozenset(_run("ip", "netns", "list").split()),
            qdiscs=frozenset(_run("tc", "qdisc", "show").splitlines()),
            iptables=iptables,
            # Stateless: the rules without their counters, which any traffic through another
            # program's rules (e.g. podman's NETAVARK chains) changes.
            nft=_run("nft", "--stateless", "list", "ruleset"),
            processes=frozenset(_agent_processes()),
            congestion_controls=frozenset(
                _run("cat", "/proc/sys/net/ipv4/tcp_available_congestion_control").split()
            ),
            bpf_maps=frozenset(_ccbench_maps()),
            bpf_controllers=frozenset(_ccbench_controllers()),
        )

    def leftovers_since(self, before: HostState) -> list[str]:
        problems = []
        recheck = {"bpf_maps": _ccbench_maps, "bpf_controllers": _ccbench_controllers}
        for name in (
            "links", "netns", "qdiscs", "processes", "congestion_controls", *recheck,
        ):  # fmt: skip
            extra = getattr(self, name) - getattr(before, name)
            # The kernel frees an unregistered controller's maps after RCU grace periods,
            # a moment later: wait up to 5 s before calling them left behind.
            for _ in range(50 if name in recheck and extra else 0):
                time.sleep(0.1)
                extra = recheck[name]() - getattr(before, name)
                if not extra:
                    break
            if extra:
                problems.append(f"new {name}: {sorted(extra)}")
        if self.iptables != before.iptables:
            problems.append("iptables rules changed")
        if self.nft != before.nft:
            problems.append("nftables ruleset changed")
        return problems
