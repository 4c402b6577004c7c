"""The hosts testbed's four operations on experiment hosts, each one play of playbooks/
(workers.testbeds.hosts.playbook): probe what the hosts can do, provision them (agents, BPF
controllers built against each host's kernel, congestion controls, sysctls), run one trial
(registering and always unregistering its BPF controllers), clean up. Called with plain data (hosts
as workers.testbeds.hosts.inventory describes them), no database."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccbench.settings import get_settings
from workers import bpf_host
from workers.testbeds.hosts.errors import (
    HostsError,
    HostSpecError,
    PlaybookCancelled,
    PlaybookTimeout,
)
from workers.testbeds.hosts.inventory import NAME, Host, parse_hosts
from workers.testbeds.hosts.playbook import DEFAULT_TIMEOUT_S, LogFn, PlayResult, run_playbook

# A trial's play beyond its experiment: receivers up, start margin, fetching, teardown.
TRIAL_OVERHEAD_LIMIT_S = 120.0
CLEANUP_AFTER_KILL_S = 60.0


def _agent(binary: str) -> str:
    return str(get_settings().agents_dir / binary)


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

    agent_binary: str = field(default_factory=lambda: _agent("ccbench-agent"))
    link_binary: str = field(default_factory=lambda: _agent("ccbench-link"))
    # ccbench's BPF sources (agents/kernel), built on the hosts against their own kernel; ""
    # builds none.
    bpf_source_dir: str = ""
    bpf_hosts: list[str] = field(default_factory=list)  # the hosts that build them; []: all
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
        if artifacts.bpf_source_dir:
            artifacts.bpf_source_dir = str(Path(artifacts.bpf_source_dir).resolve())
        for key in ("agent_binary", "link_binary"):
            if not Path(getattr(artifacts, key)).is_file():
                raise HostSpecError(
                    f"artifacts: field '{key}': {getattr(artifacts, key)} is not a file "
                    "(build the agents: cargo build --release in agents/)"
                )
        source = artifacts.bpf_source_dir
        if source and not (Path(source) / "Makefile").is_file():
            raise HostSpecError(
                f"artifacts: field 'bpf_source_dir': {source} is not ccbench's agents/kernel "
                "(no Makefile)"
            )
        return artifacts


def provision(
    hosts: Sequence[Mapping[str, Any] | Host],
    artifacts: Artifacts | Mapping[str, Any],
    *,
    on_log: LogFn | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> PlayResult:
    """Install the agents, build the BPF controllers on the hosts (with bpf_source_dir), allow
    the congestion controls, set buffer sysctls. Idempotent: the result's changed() is 0 when
    the hosts were already provisioned so."""
    if not isinstance(artifacts, Artifacts):
        artifacts = Artifacts.from_dict(artifacts)
    extravars: dict[str, Any] = {
        "ccbench_agent_binary": artifacts.agent_binary,
        "ccbench_link_binary": artifacts.link_binary,
        "ccbench_bpf_source_dir": artifacts.bpf_source_dir,
        "ccbench_bpf_hosts": artifacts.bpf_hosts,
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
                 "start_margin_s", "ready_timeout_s", "stop_grace_s", "controllers",
                 "bpf_source_sha256"}  # fmt: skip


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
            if not NAME.match(str(process["name"])):
                raise HostSpecError(f"{where}: field 'name' must be a file-name word")
            if process["name"] in names:
                raise HostSpecError(f"{where}: name '{process['name']}' is repeated")
            names.add(process["name"])
            if not isinstance(process["args"], list) or not process["args"]:
                raise HostSpecError(f"{where}: field 'args' must be a non-empty list")
            process["args"] = [str(a) for a in process["args"]]
            process.setdefault("files", [])
            for name in process["files"]:
                if not NAME.match(str(name)):
                    raise HostSpecError(f"{where}: files: {name!r} is not a file name")
    for i, sender in enumerate(lists["senders"]):
        sender.setdefault("start_s", 0.0)
        sender.setdefault("cc", "")
        if "duration_s" not in sender or float(sender["duration_s"]) <= 0:
            raise HostSpecError(f"trial: senders[{i}]: field 'duration_s' must be positive")
    for i, path in enumerate(trial.get("paths", [])):
        if path.get("host") not in host_names or not path.get("address") or not path.get("name"):
            raise HostSpecError(f"trial: paths[{i}]: needs host (one of the hosts), name, address")
    controllers = [dict(c) for c in trial.get("controllers", [])]
    for i, controller in enumerate(controllers):
        where = f"trial: controllers[{i}]"
        if controller.get("host") not in host_names:
            raise HostSpecError(f"{where}: field 'host' must be one of the hosts")
        name = str(controller.get("name", ""))
        if not bpf_host.NAME_PATTERN.match(name) or len(name) >= bpf_host.OPS_NAME_LEN:
            raise HostSpecError(f"{where}: field 'name' is not a ccbench controller name")
        if not re.fullmatch(r"[a-z_]+", str(controller.get("algorithm", ""))):
            raise HostSpecError(f"{where}: field 'algorithm' must be an algorithm id")
        symbols = controller.get("symbols") or {}
        controller["symbols"] = {str(k): int(v) for k, v in symbols.items()}
    if len({c["name"] for c in controllers}) != len(controllers):
        raise HostSpecError("trial: controllers: names are repeated")
    if controllers and not trial.get("bpf_source_sha256"):
        raise HostSpecError("trial: field 'bpf_source_sha256' is required with controllers")
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
        "ccbench_controllers": controllers,
        "ccbench_bpf_source_sha256": str(trial.get("bpf_source_sha256") or ""),
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
             "controllers"?: [{"host", "name", "algorithm", "symbols"}],
             "bpf_source_sha256"?: (required with controllers),
             "start_at"?: unix time, "start_margin_s"?, "ready_timeout_s"?, "stop_grace_s"?}
    `args` follow the binary (ccbench-link for emulators, ccbench-agent otherwise); processes
    run in the trial directory, so relative file names land there (playbooks/roles/ccbench/
    defaults/main.yml). BPF controllers are registered on their hosts before any agent starts
    (objects built by provision(), from sources whose digest is bpf_source_sha256) and always
    unregistered at the end. Exit codes and stderr are in the result's `agents`, what the
    modules measured (versions, paths, router, bpf_controllers, bpf_teardown) in `reports`."""
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
    """Stop every ccbench agent and link emulator of the hosts' installs, unregister the BPF
    controllers their trials registered and remove trial directories (and the whole install
    with uninstall=True); with trial_id, only that trial's agents, controllers, router rules
    and directory."""
    if trial_id is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", trial_id):
        raise ValueError(f"trial_id: letters, digits, - and _ only, got {trial_id!r}")
    return run_playbook(
        "cleanup.yml",
        hosts,
        {"ccbench_cleanup_uninstall": uninstall, "ccbench_cleanup_trial": trial_id or ""},
        on_log=on_log,
        timeout_s=timeout_s,
    )
