"""Failures of the hosts testbed's plays, each naming the host (and the task) that failed."""

from __future__ import annotations

from collections.abc import Sequence

# The role's "fail" tasks start their message with this when the host lacks a capability.
CAPABILITY_MARK = "capability missing:"
# ... and with this when provisioning would fix it (ccbench_preflight).
NOT_PROVISIONED_MARK = "not provisioned:"


class HostsError(Exception):
    """A playbook failed; `hosts` names every host that failed (may be empty)."""

    def __init__(self, message: str, hosts: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.hosts = list(hosts)


class HostSpecError(HostsError, ValueError):
    """A host description or a trial description is invalid (the message names the field)."""


class HostUnreachable(HostsError):
    def __init__(self, host: str, reason: str, detail: str, others: Sequence[str] = ()) -> None:
        super().__init__(
            f"host {host} is unreachable: {reason} ({detail})" + _also(others), [host, *others]
        )
        self.host = host
        self.reason = reason


class TaskFailed(HostsError):
    def __init__(self, host: str, task: str, message: str, others: Sequence[str] = ()) -> None:
        super().__init__(
            f"on host {host}, task '{task}' failed: {message}" + _also(others), [host, *others]
        )
        self.host = host
        self.task = task
        self.detail = message


class CapabilityMissing(TaskFailed):
    """The host lacks what the experiment needs (a congestion control, a qdisc...)."""


class NotProvisioned(TaskFailed):
    """The host lacks the worker's agents or a loadable congestion control: provision it."""


class PlaybookTimeout(HostsError):
    def __init__(self, playbook: str, timeout_s: float, hosts: Sequence[str]) -> None:
        super().__init__(
            f"{playbook} did not finish within {timeout_s:.0f} s on hosts {', '.join(hosts)}"
            " and was stopped",
            hosts,
        )
        self.timeout_s = timeout_s


class PlaybookCancelled(HostsError):
    pass


def _also(others: Sequence[str]) -> str:
    return f"; also failed: {', '.join(others)}" if others else ""
