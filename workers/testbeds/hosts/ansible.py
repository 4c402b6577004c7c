"""Drive experiment hosts with ccbench's playbooks (playbooks/) through ansible-runner.

Called with plain data, no database: a host is a mapping

    {"name": "h1", "address": "10.0.0.1", "port": 22, "user": "root",
     "private_key_path": "/path/key",            # optional: ssh's own defaults otherwise
     "known_hosts_path": "/path/known_hosts",    # optional: check host keys against this file
     "host_key_checking": True,                  # optional: False skips checking for this host
     "prefix": "/opt/ccbench",                   # optional: install prefix on the host
     "python": "/usr/bin/python3"}               # optional: the host's Python 3

Each call is one play in one `ansible-playbook` process, in a private data directory of its own
(inventory, variables, artifacts) that is removed afterwards. SSH connections are reused across
tasks and across calls (ControlPersist, playbooks/ansible.cfg), so a trial after a probe pays no
handshakes. Every task result becomes one line for the run's log (`on_log`), and failures become
exceptions that name the host: HostUnreachable, TaskFailed (CapabilityMissing when the host
lacks something an experiment needs), PlaybookTimeout."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

REPO_ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
AGENTS_DIR = REPO_ROOT / "agents" / "target" / "release"
DEFAULT_PYTHON = "/usr/bin/python3"
# Probe, provision and cleanup are a few round trips; this only stops a hung play.
DEFAULT_TIMEOUT_S = 300.0
# A trial's play beyond its experiment: receivers up, start margin, fetching, teardown.
TRIAL_OVERHEAD_LIMIT_S = 120.0
CLEANUP_AFTER_KILL_S = 60.0
# The role's "fail" tasks start their message with this when the host lacks a capability.
CAPABILITY_MARK = "capability missing:"
# ... and with this when provisioning would fix it (ccbench_preflight).
NOT_PROVISIONED_MARK = "not provisioned:"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

LogFn = Callable[[str], None]


# --- errors -------------------------------------------------------------------------------


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


# --- hosts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    port: int = 22
    user: str = "root"
    private_key_path: str | None = None
    known_hosts_path: str | None = None
    host_key_checking: bool = True
    prefix: str | None = None
    python: str = DEFAULT_PYTHON

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], position: int = 0) -> Host:
        where = f"host {position} ({data.get('name', 'unnamed')})"
        unknown = set(data) - {f.name for f in cls.__dataclass_fields__.values()}
        if unknown:
            raise HostSpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("name", "address"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise HostSpecError(f"{where}: field '{key}' is required (a non-empty string)")
        if not _NAME.match(data["name"]):
            raise HostSpecError(f"{where}: field 'name' may hold letters, digits, '.', '_', '-'")
        port = data.get("port", 22)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise HostSpecError(f"{where}: field 'port' must be an integer in 1..65535")
        files: dict[str, str | None] = {}
        for key in ("private_key_path", "known_hosts_path"):
            path = data.get(key)
            if path is not None and not Path(path).is_file():
                raise HostSpecError(f"{where}: field '{key}': {path} is not a readable file")
            # Absolute: ansible-playbook runs in playbooks/.
            files[key] = str(Path(path).resolve()) if path is not None else None
        prefix = data.get("prefix")
        if prefix is not None and not str(prefix).startswith("/"):
            raise HostSpecError(f"{where}: field 'prefix' must be an absolute path")
        return cls(
            name=data["name"],
            address=data["address"],
            port=port,
            user=str(data.get("user", "root")),
            private_key_path=files["private_key_path"],
            known_hosts_path=files["known_hosts_path"],
            host_key_checking=bool(data.get("host_key_checking", True)),
            prefix=prefix,
            python=str(data.get("python", DEFAULT_PYTHON)),
        )

    def inventory_vars(self) -> dict[str, Any]:
        variables: dict[str, Any] = {
            "ansible_host": self.address,
            "ansible_port": self.port,
            "ansible_user": self.user,
            "ansible_python_interpreter": self.python,
        }
        if self.private_key_path:
            variables["ansible_ssh_private_key_file"] = self.private_key_path
        # ssh keeps the first value of each -o option; these come after ansible.cfg's ssh_args
        # (which set neither) and after Ansible's own StrictHostKeyChecking=no, which it adds
        # only when host_key_checking is off (run_playbook keeps it on).
        if not self.host_key_checking:
            ssh = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
        elif self.known_hosts_path:
            ssh = [
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                f"UserKnownHostsFile={self.known_hosts_path}",
            ]
        else:
            ssh = []
        if ssh:
            variables["ansible_ssh_extra_args"] = shlex.join(ssh)
        if self.prefix:
            variables["ccbench_prefix"] = self.prefix
        return variables


def parse_hosts(hosts: Sequence[Mapping[str, Any] | Host]) -> list[Host]:
    parsed = [h if isinstance(h, Host) else Host.from_dict(h, i) for i, h in enumerate(hosts)]
    if not parsed:
        raise HostSpecError("no hosts given")
    names = [h.name for h in parsed]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise HostSpecError(f"host names must be unique: {', '.join(duplicates)} repeated")
    return parsed


def inventory(hosts: Sequence[Host]) -> dict[str, Any]:
    return {"all": {"hosts": {h.name: h.inventory_vars() for h in hosts}}}


# --- running a playbook ---------------------------------------------------------------------


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


# --- the four operations ----------------------------------------------------------------------


def probe(
    hosts: Sequence[Mapping[str, Any] | Host],
    *,
    on_log: LogFn | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, dict[str, Any]]:
    """Each host's capabilities (see playbooks/roles/ccbench/library/ccbench_probe.py)."""
    parsed = parse_hosts(hosts)
    facts_dir = Path(tempfile.mkdtemp(prefix="ccbench-probe-"))
    try:
        run_playbook(
            "probe.yml",
            parsed,
            {"ccbench_probe_dir": str(facts_dir)},
            on_log=on_log,
            timeout_s=timeout_s,
        )
        return {h.name: json.loads((facts_dir / f"{h.name}.json").read_text()) for h in parsed}
    finally:
        shutil.rmtree(facts_dir, ignore_errors=True)


@dataclass
class Artifacts:
    """What provisioning installs and configures (controller paths)."""

    agent_binary: str = str(AGENTS_DIR / "ccbench-agent")
    link_binary: str = str(AGENTS_DIR / "ccbench-link")
    bpf_objects: list[str] = field(default_factory=list)
    congestion_controls: list[str] = field(default_factory=lambda: ["reno", "cubic"])
    # sysctl name -> value; None keeps the role's defaults (socket buffers up to 64 MB).
    sysctls: dict[str, str] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Artifacts:
        unknown = set(data) - {f.name for f in cls.__dataclass_fields__.values()}
        if unknown:
            raise HostSpecError(f"artifacts: unknown field(s) {', '.join(sorted(unknown))}")
        artifacts = cls(**dict(data))
        # Ansible runs in playbooks/: relative paths would point there.
        artifacts.agent_binary = str(Path(artifacts.agent_binary).resolve())
        artifacts.link_binary = str(Path(artifacts.link_binary).resolve())
        artifacts.bpf_objects = [str(Path(p).resolve()) for p in artifacts.bpf_objects]
        for key in ("agent_binary", "link_binary"):
            if not Path(getattr(artifacts, key)).is_file():
                raise HostSpecError(
                    f"artifacts: field '{key}': {getattr(artifacts, key)} is not a file "
                    "(build the agents: cargo build --release in agents/)"
                )
        for path in artifacts.bpf_objects:
            if not Path(path).is_file():
                raise HostSpecError(f"artifacts: field 'bpf_objects': {path} is not a file")
        return artifacts


def provision(
    hosts: Sequence[Mapping[str, Any] | Host],
    artifacts: Artifacts | Mapping[str, Any],
    *,
    on_log: LogFn | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> PlayResult:
    """Install the agents and BPF objects, allow the congestion controls, set buffer sysctls.
    Idempotent: the result's changed() is 0 when the hosts were already provisioned so."""
    if not isinstance(artifacts, Artifacts):
        artifacts = Artifacts.from_dict(artifacts)
    extravars: dict[str, Any] = {
        "ccbench_agent_binary": artifacts.agent_binary,
        "ccbench_link_binary": artifacts.link_binary,
        "ccbench_bpf_objects": artifacts.bpf_objects,
        "ccbench_congestion_controls": artifacts.congestion_controls,
    }
    if artifacts.sysctls is not None:
        extravars["ccbench_sysctls"] = artifacts.sysctls
    return run_playbook("provision.yml", hosts, extravars, on_log=on_log, timeout_s=timeout_s)


@dataclass
class TrialResult:
    play: PlayResult
    start_at: float  # the common start (Unix time) the senders used
    files: list[Path]  # fetched output files, in local_dir
    agents: dict[str, dict[str, Any]]  # host -> process name -> {rc, stderr}
    reports: dict[str, dict[str, Any]]  # host -> versions, kernel, paths, router


_TRIAL_FIELDS = {"emulators", "receivers", "senders", "paths", "binaries", "router", "start_at",
                 "start_margin_s", "ready_timeout_s", "stop_grace_s"}  # fmt: skip


def _trial_extravars(
    trial: Mapping[str, Any], host_names: Sequence[str], trial_id: str, local_dir: Path
) -> tuple[dict[str, Any], float]:
    """Validate a trial description; return the play's variables and its longest flow end."""
    unknown = set(trial) - _TRIAL_FIELDS
    if unknown:
        raise HostSpecError(f"trial: unknown field(s) {', '.join(sorted(unknown))}")
    lists = {role: [dict(p) for p in trial.get(role, [])]
             for role in ("emulators", "receivers", "senders")}  # fmt: skip
    if not lists["senders"]:
        raise HostSpecError("trial: field 'senders' needs at least one sender")
    names: set[str] = set()
    for role, processes in lists.items():
        for i, process in enumerate(processes):
            where = f"trial: {role}[{i}]"
            for key in ("host", "name", "args"):
                if key not in process:
                    raise HostSpecError(f"{where}: field '{key}' is required")
            if process["host"] not in host_names:
                raise HostSpecError(
                    f"{where}: host '{process['host']}' is not among the hosts "
                    f"({', '.join(host_names)})"
                )
            if not _NAME.match(str(process["name"])):
                raise HostSpecError(f"{where}: field 'name' must be a file-name word")
            if process["name"] in names:
                raise HostSpecError(f"{where}: name '{process['name']}' is repeated")
            names.add(process["name"])
            if not isinstance(process["args"], list) or not process["args"]:
                raise HostSpecError(f"{where}: field 'args' must be a non-empty list")
            process["args"] = [str(a) for a in process["args"]]
            process.setdefault("files", [])
            for name in process["files"]:
                if not _NAME.match(str(name)):
                    raise HostSpecError(f"{where}: files: {name!r} is not a file name")
    for i, sender in enumerate(lists["senders"]):
        sender.setdefault("start_s", 0.0)
        sender.setdefault("cc", "")
        if "duration_s" not in sender or float(sender["duration_s"]) <= 0:
            raise HostSpecError(f"trial: senders[{i}]: field 'duration_s' must be positive")
    for i, path in enumerate(trial.get("paths", [])):
        if path.get("host") not in host_names or not path.get("address") or not path.get("name"):
            raise HostSpecError(f"trial: paths[{i}]: needs host (one of the hosts), name, address")
    router = dict(trial.get("router") or {})
    if router:
        for key in ("host", "receivers", "forward_queue", "reverse_queue"):
            if key not in router:
                raise HostSpecError(f"trial: router: field '{key}' is required")
        if router["host"] not in host_names:
            raise HostSpecError(f"trial: router: host '{router['host']}' is not among the hosts")
    extravars: dict[str, Any] = {
        "ccbench_trial_id": trial_id,
        "ccbench_fetch_dir": str(local_dir),
        "ccbench_emulators": lists["emulators"],
        "ccbench_receivers": lists["receivers"],
        "ccbench_senders": lists["senders"],
        "ccbench_paths": [dict(p) for p in trial.get("paths", [])],
        "ccbench_binaries": dict(trial.get("binaries") or {}),
        "ccbench_router": router,
        "ccbench_start_at": float(trial.get("start_at", 0.0)),
    }
    for key in ("start_margin_s", "ready_timeout_s", "stop_grace_s"):
        if key in trial:
            extravars[f"ccbench_{key}"] = trial[key]
    longest = max(float(s["start_s"]) + float(s["duration_s"]) for s in lists["senders"])
    return extravars, longest


def run_trial(
    hosts: Sequence[Mapping[str, Any] | Host],
    trial: Mapping[str, Any],
    local_dir: Path | str,
    *,
    on_log: LogFn | None = None,
    timeout_s: float | None = None,
    should_cancel: Callable[[], bool] | None = None,
    trial_id: str | None = None,
) -> TrialResult:
    """One play: check the hosts, start the router's emulators and rules, the receivers,
    measure the paths, start the senders at one common start, wait, fetch every process's
    files into local_dir (also after a failure), and stop whatever of the trial is left.

    trial = {"senders": [{"host", "name", "args", "duration_s", "start_s"?, "cc"?, "files"?}],
             "receivers"?: [{"host", "name", "args", "files"?}],
             "emulators"?: [{"host", "name", "args", "files"?}],
             "paths"?: [{"host", "name", "address"}],
             "binaries"?: {host: [{"name", "sha256"}]},
             "router"?: {"host", "receivers", "forward_queue", "reverse_queue", "files"?},
             "start_at"?: unix time, "start_margin_s"?, "ready_timeout_s"?, "stop_grace_s"?}
    `args` follow the binary (ccbench-link for emulators, ccbench-agent otherwise); processes
    run in the trial directory, so relative file names land there (playbooks/roles/ccbench/
    defaults/main.yml). Exit codes and stderr are in the result's `agents`, what the modules
    measured (versions, paths, router) in `reports`."""
    parsed = parse_hosts(hosts)
    local = Path(local_dir)
    local.mkdir(parents=True, exist_ok=True)
    trial_id = trial_id or f"trial-{uuid.uuid4().hex[:12]}"
    extravars, longest = _trial_extravars(trial, [h.name for h in parsed], trial_id, local)
    start_at = float(extravars["ccbench_start_at"])
    wait_s = max(0.0, start_at - time.time()) if start_at else 0.0
    limit = timeout_s if timeout_s is not None else wait_s + longest + TRIAL_OVERHEAD_LIMIT_S
    try:
        play = run_playbook(
            "trial.yml",
            parsed,
            extravars,
            on_log=on_log,
            timeout_s=limit,
            should_cancel=should_cancel,
        )
    except (PlaybookTimeout, PlaybookCancelled):
        # The play was killed before its own `always`: stop this trial's agents from outside
        # (only this trial's: another run may be using the same hosts).
        with contextlib.suppress(HostsError):
            cleanup(parsed, on_log=on_log, timeout_s=CLEANUP_AFTER_KILL_S, trial_id=trial_id)
        raise
    start = float(play.facts.get("ccbench_trial_start_at", start_at))
    files = sorted(p for p in local.iterdir() if p.is_file())
    return TrialResult(play, start, files, play.agents, play.reports)


def cleanup(
    hosts: Sequence[Mapping[str, Any] | Host],
    *,
    uninstall: bool = False,
    on_log: LogFn | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    trial_id: str | None = None,
) -> PlayResult:
    """Stop every ccbench agent and link emulator of the hosts' installs and remove trial
    directories (and the whole install with uninstall=True); with trial_id, only that trial's
    agents, router rules and directory."""
    if trial_id is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", trial_id):
        raise ValueError(f"trial_id: letters, digits, - and _ only, got {trial_id!r}")
    return run_playbook(
        "cleanup.yml",
        hosts,
        {"ccbench_cleanup_uninstall": uninstall, "ccbench_cleanup_trial": trial_id or ""},
        on_log=on_log,
        timeout_s=timeout_s,
    )
