"""The run directory, named once: every file a run's testbed, agents and worker write into
`<state_dir>/runs/<run id>/attempt-<n>/`, and that the analysis and the API read back.

Standard library only: the Mininet sandbox imports it under the system Python."""

from __future__ import annotations

from pathlib import Path

PLAN = "plan.json"  # the worker's plan for the sandbox (workers/plan.py)
PROVENANCE = "provenance.json"  # what the testbed applied and measured, plus the worker's part
SANDBOX_LOG = "sandbox.log"  # the local testbed's log
SANDBOX_STDERR = "sandbox.stderr"
RUN_LOG = "run.log"  # the hosts testbed's log: one line per Ansible task result
BPF_TRACE = "bpf-trace.jsonl"  # BPF controllers' state samples (workers/bpf_trace.py)
QDISC = "qdisc.jsonl"  # qdisc counters of the bottleneck (link_mechanism tc)
SSH_DIR = "ssh"  # the hosts testbed's keys for one run, removed when it ends

# The run's own log, whichever testbed wrote it (a run has one of them).
LOGS = (RUN_LOG, SANDBOX_LOG)
# Counters of every emulator and delay line, written when they stop.
EMULATOR_STATS_GLOBS = ("link-*.json", "delay-*.json")


def attempt_dir(runs_dir: Path, run_id: str, attempt: int) -> Path:
    return runs_dir / run_id / f"attempt-{attempt}"


def sender_log(flow: int | str) -> str:
    """The sender agent's JSON lines of flow `flow` (0-based; "*" for a pattern)."""
    return f"flow-{flow}.send.jsonl"


def receiver_log(flow: int | str) -> str:
    return f"flow-{flow}.recv.jsonl"


def link_name(link: int, forward: bool) -> str:
    """One direction of link `link`: data (forward) or ack (reverse)."""
    return f"link-{link}-{'data' if forward else 'ack'}"


def link_packet_log(link: int, forward: bool = True) -> str:
    """The emulator's exact per-packet log (agents/ccbench-link/src/log.rs)."""
    return f"{link_name(link, forward)}.bin"


def link_stats(link: int, forward: bool = True) -> str:
    """The emulator's counters, written when it stops."""
    return f"{link_name(link, forward)}.json"


def link_trace(link: int) -> str:
    """A trace-driven link's delivery opportunities (Mahimahi format)."""
    return f"link-{link}.trace"


def access_link_name(flow: int, data: bool) -> str:
    """One direction of flow `flow`'s access link (0-based): the sender's packets (data) or
    what goes back to the sender (ack)."""
    return f"link-access-{flow}-{'data' if data else 'ack'}"


def access_link_stats(flow: int, data: bool) -> str:
    return f"{access_link_name(flow, data)}.json"


def access_packet_log(flow: int) -> str:
    """The per-packet log of a flow's send jitter (the data direction of its access link)."""
    return f"{access_link_name(flow, True)}.bin"


def delay_line_stats(direction: str) -> str:
    """The tc mechanism's NFQUEUE delay line, direction `data` or `ack`."""
    return f"delay-{direction}.json"


def bpf_object(controller: str) -> str:
    """The run's copy of a BPF controller object, with its name and tunables written in."""
    return f"{controller}.bpf.o"
