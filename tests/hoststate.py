"""What a test may leave behind on the host: snapshot before, compare after."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def _agent_processes() -> set[str]:
    out = _run("pgrep", "-a", "-f", "ccbench-agent|ccbench-link|sandbox.py|mnexec")
    return {line for line in out.splitlines() if "pgrep" not in line}


@dataclass(frozen=True)
class HostState:
    links: frozenset[str]
    netns: frozenset[str]
    qdiscs: frozenset[str]
    iptables: str
    nft: str
    processes: frozenset[str]
    congestion_controls: frozenset[str]  # includes registered BPF controllers

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
            nft=_run("nft", "list", "ruleset"),
            processes=frozenset(_agent_processes()),
            congestion_controls=frozenset(
                _run("cat", "/proc/sys/net/ipv4/tcp_available_congestion_control").split()
            ),
        )

    def leftovers_since(self, before: HostState) -> list[str]:
        problems = []
        for name in ("links", "netns", "qdiscs", "processes", "congestion_controls"):
            extra = getattr(self, name) - getattr(before, name)
            if extra:
                problems.append(f"new {name}: {sorted(extra)}")
        if self.iptables != before.iptables:
            problems.append("iptables rules changed")
        if self.nft != before.nft:
            problems.append("nftables ruleset changed")
        return problems
