"""Running one of playbooks/ through ansible-runner: one play in one `ansible-playbook` process,
in a private data directory of its own (inventory, variables, artifacts) that is removed
afterwards. SSH connections are reused across tasks and across calls (ControlPersist,
playbooks/ansible.cfg). Every task result becomes one line for the run's log (`on_log`), and
failures become exceptions that name the host (workers.testbeds.hosts.errors)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from ccbench.settings import REPO_ROOT
from workers.testbeds.hosts.errors import (
    CAPABILITY_MARK,
    NOT_PROVISIONED_MARK,
    CapabilityMissing,
    HostsError,
    HostUnreachable,
    NotProvisioned,
    PlaybookCancelled,
    PlaybookTimeout,
    TaskFailed,
)
from workers.testbeds.hosts.inventory import Host, inventory, parse_hosts

PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
# Probe, provision and cleanup are a few round trips; this only stops a hung play.
DEFAULT_TIMEOUT_S = 300.0

LogFn = Callable[[str], None]


@dataclass
class PlayResult:
    playbook: str
    duration_s: float
    # host -> {"ok", "changed", "failures", "unreachable", "skipped"}
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    # host -> agent ("flow-0.send") -> {rc, stderr}, as the ccbench_agents module reported
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)  # facts the play set (trial start)
    # host -> what ccbench's modules reported (versions, kernel, paths, router)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)

    def changed(self) -> int:
        return sum(s.get("changed", 0) for s in self.stats.values())


@dataclass
class _Failure:
    host: str
    task: str
    unreachable: bool
    message: str


class _Events:
    """Turns ansible-runner events into log lines and remembers each host's first failure."""

    def __init__(self, on_log: LogFn | None) -> None:
        self.on_log = on_log
        self.failures: dict[str, _Failure] = {}
        self.stats: dict[str, dict[str, int]] = {}
        # What the ccbench_agents module reported per host: agent -> {rc, stderr}.
        self.agents: dict[str, dict[str, Any]] = {}
        self.facts: dict[str, Any] = {}  # facts set by the play (e.g. the trial's start)
        # What ccbench's modules reported per host (versions, paths, router), merged.
        self.reports: dict[str, dict[str, Any]] = {}

    def __call__(self, event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data", {})
        host = str(data.get("host", ""))
        task = str(data.get("task", "")).strip()
        res = data.get("res", {}) if isinstance(data.get("res"), dict) else {}
        if kind in ("runner_on_ok", "runner_on_failed"):
            self.agents.setdefault(host, {}).update(res.get("ccbench_agents") or {})
            self.facts.update(res.get("ansible_facts") or {})
            self.reports.setdefault(host, {}).update(res.get("ccbench_report") or {})
        if kind == "runner_on_ok":
            self._log(f"{'changed' if res.get('changed') else 'ok':<11} {host} | {task}")
        elif kind == "runner_on_skipped":
            self._log(f"{'skipped':<11} {host} | {task}")
        elif kind == "runner_on_failed":
            message = _failure_message(res)
            ignored = bool(data.get("ignore_errors"))
            self._log(f"{'ignored' if ignored else 'failed':<11} {host} | {task}: {message}")
            if not ignored:
                self.failures.setdefault(host, _Failure(host, task, False, message))
        elif kind == "runner_on_unreachable":
            message = _failure_message(res)
            self._log(f"{'unreachable':<11} {host} | {task}: {message}")
            self.failures.setdefault(host, _Failure(host, task, True, message))
        elif kind == "playbook_on_stats":
            for key, name in (
                ("ok", "ok"),
                ("changed", "changed"),
                ("failures", "failures"),
                ("dark", "unreachable"),
                ("skipped", "skipped"),
            ):
                for stat_host, count in (data.get(key) or {}).items():
                    self.stats.setdefault(stat_host, {})[name] = int(count)
        return True  # keep the event in the artifacts directory

    def _log(self, line: str) -> None:
        if self.on_log is not None:
            self.on_log(line)


def _failure_message(res: Mapping[str, Any]) -> str:
    """The most telling text of a failed result: a failed loop item's, stderr, or msg."""
    for item in res.get("results") or []:
        if isinstance(item, dict) and (item.get("failed") or item.get("unreachable")):
            return _failure_message(item)
    stderr = str(res.get("stderr") or "").strip()
    msg = str(res.get("msg") or "").strip()
    if stderr and (not msg or msg.startswith("non-zero return code")):
        return stderr.splitlines()[-1][:2000]
    return (msg or stderr or json.dumps(res)[:500])[:2000]


def _unreachable_reason(message: str) -> str:
    lowered = message.lower()
    for needle, reason in (
        ("connection refused", "connection refused"),
        ("timed out", "connection timed out"),
        ("no route to host", "no route to host"),
        ("permission denied", "authentication failed"),
        ("host key verification failed", "host key verification failed"),
        ("remote host identification has changed", "host key verification failed"),
        ("could not resolve hostname", "unknown host name"),
    ):
        if needle in lowered:
            return reason
    return "SSH connection failed"


def _search_path() -> str:
    """PATH with this interpreter's bin directory first, where pip put ansible-playbook (the
    worker may run the venv's Python without the venv on PATH)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def run_playbook(
    playbook: str,
    hosts: Sequence[Mapping[str, Any] | Host],
    extravars: Mapping[str, Any],
    *,
    on_log: LogFn | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    should_cancel: Callable[[], bool] | None = None,
    work_dir: Path | None = None,
) -> PlayResult:
    """Run one playbook of playbooks/ against the hosts; raise on any host's failure."""
    parsed = parse_hosts(hosts)
    names = [h.name for h in parsed]
    private = Path(tempfile.mkdtemp(prefix="ccbench-ansible-", dir=work_dir))
    events = _Events(on_log)
    started = time.monotonic()
    try:
        runner = ansible_runner.run(
            private_data_dir=str(private),
            project_dir=str(PLAYBOOKS_DIR),
            playbook=playbook,
            inventory=inventory(parsed),
            extravars=dict(extravars),
            envvars={
                "ANSIBLE_CONFIG": str(PLAYBOOKS_DIR / "ansible.cfg"),
                # ansible-runner switches host key checking off unless this is set.
                "ANSIBLE_HOST_KEY_CHECKING": "True",
                "ANSIBLE_LOCAL_TEMP": str(private / "tmp"),
                "PATH": _search_path(),
            },
            event_handler=events,
            cancel_callback=should_cancel,
            timeout=max(1, int(timeout_s)),
            quiet=True,
            suppress_env_files=True,
        )
        duration = time.monotonic() - started
        status, rc = runner.status, runner.rc
        stdout_tail = runner.stdout.read()[-3000:] if runner.stdout else ""
    finally:
        shutil.rmtree(private, ignore_errors=True)
    result = PlayResult(
        playbook, duration, events.stats, events.agents, events.facts, events.reports
    )
    if status == "timeout":
        raise PlaybookTimeout(playbook, timeout_s, names)
    if status == "canceled":
        raise PlaybookCancelled(f"{playbook} was cancelled", names)
    failures = list(events.failures.values())
    unreachable = [f for f in failures if f.unreachable]
    if unreachable:
        first = unreachable[0]
        others = [f.host for f in failures if f.host != first.host]
        raise HostUnreachable(first.host, _unreachable_reason(first.message), first.message, others)
    if failures:
        first = failures[0]
        others = [f.host for f in failures[1:]]
        error: type[TaskFailed] = TaskFailed
        if CAPABILITY_MARK in first.message:
            error = CapabilityMissing
        elif NOT_PROVISIONED_MARK in first.message:
            error = NotProvisioned
        raise error(first.host, first.task, first.message, others)
    if status != "successful" or rc != 0:
        raise HostsError(
            f"{playbook} failed (status {status}, exit code {rc}): {stdout_tail}", names
        )
    return result
