"""Which testbed runs a run: each testbed backend implements the testbed contract
(workers.testbeds.base.Testbed) for one `testbed.kind` of the spec; `testbed_for` builds the one
a run asks for. (Not in the package's __init__: the sandbox imports workers.testbeds.mininet
under the system Python, which has none of the worker's libraries.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ccbench.db.runs import active_attempts
from ccbench.db.session import session_scope
from ccbench.hosts import HostAccess
from ccbench.settings import Settings
from workers import bpf
from workers.bpf_ledger import default_ledger
from workers.testbeds.base import Testbed
from workers.testbeds.hosts.backend import HostsTestbed, load_hosts
from workers.testbeds.mininet.runner import MininetTestbed


@dataclass(frozen=True)
class TestbedContext:
    """What a testbed needs to know about the run beyond its plan."""

    __test__ = False  # not a pytest test class, despite its name

    team_id: str  # whose hosts the hosts testbed may use
    settings: Settings

    @property
    def poll_s(self) -> float:
        return min(0.5, self.settings.heartbeat_interval_s)


def active_runs() -> list[str]:
    """The attempts being executed now, as bpf.attempt_key names them."""
    with session_scope() as session:
        return [bpf.attempt_key(run_id, attempt) for run_id, attempt in active_attempts(session)]


def sweep_orphan_controllers() -> list[str]:
    """Unregister this installation's BPF controllers whose run attempt is no longer active
    (a killed worker's); pending ones are checked again by the next sweep."""
    if not default_ledger().names():
        return []  # nothing of ours: no bpftool, no query
    return bpf.sweep(active_runs)


def _mininet(context: TestbedContext) -> Testbed:
    return MininetTestbed(
        sandbox_python=str(context.settings.sandbox_python),
        poll_s=context.poll_s,
        active_runs=active_runs,
    )


def _hosts(context: TestbedContext) -> Testbed:
    def load(names: Sequence[str]) -> Sequence[HostAccess]:
        return load_hosts(context.team_id, names)

    return HostsTestbed(load_hosts=load, poll_s=context.poll_s)


TESTBEDS: dict[str, Callable[[TestbedContext], Testbed]] = {"mininet": _mininet, "hosts": _hosts}


def testbed_for(kind: str, context: TestbedContext) -> Testbed:
    """The testbed of `kind` (the spec's testbed.kind; the schema allows only these)."""
    return TESTBEDS[kind](context)
