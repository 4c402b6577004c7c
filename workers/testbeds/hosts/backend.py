"""The `hosts` testbed: one run between a team's registered hosts, in one Ansible play.

    inventory (api.hosts) -> keys and pinned host keys in <run_dir>/ssh (removed afterwards)
    -> trial description (same agent flags as the Mininet backend: plan.receiver_args,
       sender_args, emulator_args) -> ansible.run_trial: preflight, router emulators and
       rules, receivers, path measurements, senders at a common start, fetch, cleanup
    -> provenance.json (hosts, kernels, agent versions, base RTT, path MTU, clock offsets)

Hosts are provisioned on demand: when the trial's preflight finds an agent that is not this
worker's build (or a loadable congestion control not loaded), provision.yml runs once and the
trial is retried; later runs pay nothing for it. Every Ansible task becomes a line of
<run_dir>/run.log; failures become errors that name the host."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.hosts.service import HostAccess
from schemas import ExperimentSpec
from schemas.spec import Dumbbell
from workers.testbeds.hosts import ansible
from workers.testbeds.mininet.plan import (
    FlowPlan,
    emulator_args,
    receiver_args,
    sender_args,
    trace_file_text,
)
from workers.testbeds.mininet.runner import SandboxResult

RUN_LOG = "run.log"
PORT_BASE = 20000  # receivers listen on PORT_BASE + 10 * slot + flow index
PORT_SLOTS = 4000
QUEUE_BASE = 2000  # the router's NFQUEUE numbers: QUEUE_BASE + 2 * slot (+1 for ACKs)
QUEUE_SLOTS = 20000


class HostsRunError(Exception):
    """The run cannot start on the hosts (the message names the host and the field)."""


def flow_address(host: HostAccess) -> str:
    """Where flows to the host are sent: its experiment-network address, else its SSH one."""
    return host.data_address or host.address


def load_hosts(team_id: str, names: Sequence[str]) -> list[HostAccess]:
    """The named hosts of the team, keys decrypted (api.hosts.service.access_for)."""
    from api.errors import NotFound
    from api.hosts.service import access_for
    from ccbench.db.session import session_scope

    with session_scope() as session:
        try:
            return access_for(session, team_id, names)
        except NotFound as exc:
            raise HostsRunError(f"testbed hosts: {exc}") from exc


def write_credentials(records: Sequence[HostAccess], ssh_dir: Path) -> list[dict[str, Any]]:
    """The ansible host dicts, with each key in a 0600 file of ssh_dir and each pinned host
    key in a known_hosts file of its own."""
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    hosts = []
    for record in records:
        host: dict[str, Any] = {
            "name": record.name,
            "address": record.address,
            "port": record.port,
            "user": record.user,
        }
        key_text = record.private_key
        ref = record.credential_ref or ""
        if ref.startswith("file:"):
            host["private_key_path"] = ref.removeprefix("file:")
            if not Path(host["private_key_path"]).is_file():
                raise HostsRunError(
                    f"host {record.name}: credential_ref {ref}: no such file on this worker"
                )
        elif ref.startswith("env:"):
            key_text = os.environ.get(ref.removeprefix("env:"))
            if not key_text:
                raise HostsRunError(
                    f"host {record.name}: credential_ref {ref}: the variable is not set on "
                    "this worker"
                )
        if key_text:
            path = ssh_dir / f"{record.name}.key"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(key_text if key_text.endswith("\n") else key_text + "\n")
            host["private_key_path"] = str(path)
        if record.host_key:
            where = record.address if record.port == 22 else f"[{record.address}]:{record.port}"
            known = ssh_dir / f"{record.name}.known_hosts"
            known.write_text(f"{where} {record.host_key}\n")
            host["known_hosts_path"] = str(known)
        if record.install_prefix:
            host["prefix"] = record.install_prefix
        hosts.append(host)
    return hosts


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class TrialPlan:
    trial: dict[str, Any]
    congestion_controls: list[str]  # the kernel controllers the senders select


def trial_for_spec(
    spec: ExperimentSpec,
    records: Sequence[HostAccess],
    flows: Sequence[FlowPlan],
    *,
    run_id: str,
    agents_dir: Path,
) -> TrialPlan:
    """The trial description of one run (ansible.run_trial's format)."""
    by_name = {r.name: r for r in records}
    slot = zlib.crc32(run_id.encode())
    port0 = PORT_BASE + 10 * (slot % PORT_SLOTS)
    interval_ms = max(1, round(spec.sampling_interval * 1000))
    assert spec.seed is not None
    receivers: list[dict[str, Any]] = []
    senders: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    for flow, spec_flow in zip(flows, spec.flows, strict=True):
        assert spec_flow.src is not None and spec_flow.dst is not None
        i, port = flow.index, port0 + flow.index
        address = flow_address(by_name[spec_flow.dst])
        receivers.append({
            "host": spec_flow.dst, "name": f"flow-{i}.recv", "files": [f"flow-{i}.recv.jsonl"],
            "args": [*receiver_args(flow, f"0.0.0.0:{port}", interval_ms),
                     "--out", f"flow-{i}.recv.jsonl"],
        })  # fmt: skip
        senders.append({
            "host": spec_flow.src, "name": f"flow-{i}.send", "files": [f"flow-{i}.send.jsonl"],
            "cc": flow.algorithm if flow.agent == "kernel" else "",
            "start_s": flow.start_s, "duration_s": flow.duration_s,
            "args": [*sender_args(flow, f"{address}:{port}", interval_ms, spec.seed),
                     "--out", f"flow-{i}.send.jsonl"],
        })  # fmt: skip
        paths.append({"host": spec_flow.src, "name": f"flow-{i}", "address": address})
    agent_sha = sha256_of(agents_dir / "ccbench-agent")
    binaries: dict[str, list[dict[str, str]]] = {
        name: [{"name": "ccbench-agent", "sha256": agent_sha}]
        for name in dict.fromkeys(str(p["host"]) for p in [*senders, *receivers])
    }
    trial: dict[str, Any] = {
        "receivers": receivers,
        "senders": senders,
        "paths": paths,
        "binaries": binaries,
    }
    router = spec.testbed.router
    if router is not None:
        from workers.planning import link_plan

        assert isinstance(spec.topology, Dumbbell)
        link = link_plan(spec.topology.bottleneck)
        queue = QUEUE_BASE + 2 * (slot % QUEUE_SLOTS)
        trial["emulators"] = [
            {"host": router, "name": "link-0-data",
             "files": ["link-0-data.bin", "link-0-data.json"],
             "args": emulator_args(link, 0, queue, spec.seed, "", forward=True)},
            {"host": router, "name": "link-0-ack", "files": ["link-0-ack.json"],
             "args": emulator_args(link, 0, queue + 1, spec.seed, "", forward=False)},
        ]  # fmt: skip
        trial["router"] = {
            "host": router,
            "receivers": sorted({flow_address(by_name[f.dst]) for f in spec.flows if f.dst}),
            "forward_queue": queue,
            "reverse_queue": queue + 1,
            "files": [{"name": "link-0.trace", "content": trace_file_text(link)}]
            if link.trace_ms
            else [],
        }
        binaries[router] = [
            {"name": "ccbench-link", "sha256": sha256_of(agents_dir / "ccbench-link")}
        ]
    kernel_ccs = sorted({str(s["cc"]) for s in senders if s["cc"]})
    return TrialPlan(trial, kernel_ccs)


class RunLog:
    """<run_dir>/run.log, one timestamped line per Ansible task result; it also moves the
    run's state when the senders start (running) and when the trial winds down
    (collecting)."""

    PHASES = (
        ("Trial | Start the senders", "running"),
        ("Trial | Stop the receivers", "collecting"),
    )

    def __init__(self, path: Path, on_event: Callable[[dict[str, Any]], None]) -> None:
        self.path = path
        self.on_event = on_event
        self.lock = threading.Lock()
        self.seen: set[str] = set()

    def __call__(self, line: str) -> None:
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        with self.lock, self.path.open("a") as handle:
            handle.write(f"{stamp} {line}\n")
        # In order, each once: a trial that fails before its senders start (e.g. to provision
        # first) still passes its stop task, which must not move the run to collecting.
        for step, (marker, phase) in enumerate(self.PHASES):
            earlier = {p for _, p in self.PHASES[:step]}
            if marker in line and phase not in self.seen and earlier <= self.seen:
                self.seen.add(phase)
                self.on_event({"event": "phase", "phase": phase})


class CancelPoll:
    """ansible-runner's cancel callback. It polls many times a second; the run's check (a
    heartbeat and a database read) runs at most every `every_s`. An exception of the check
    (the run was lost) cancels the play, so Ansible stops and cleans up, and is raised again
    afterwards: ansible-runner would otherwise leave ansible-playbook running."""

    def __init__(self, check: Callable[[], bool], every_s: float) -> None:
        self.check = check
        self.every_s = every_s
        self.last = 0.0
        self.cancelled = False
        self.error: Exception | None = None

    def __call__(self) -> bool:
        now = time.monotonic()
        if self.error is None and now - self.last >= self.every_s:
            self.last = now
            try:
                self.cancelled = self.check()
            except Exception as exc:  # noqa: BLE001 - re-raised once the play has stopped
                self.error = exc
        return self.cancelled or self.error is not None


def run_hosts(
    spec: ExperimentSpec,
    flows: Sequence[FlowPlan],
    *,
    run_id: str,
    run_dir: Path,
    load: Callable[[], Sequence[HostAccess]],
    agents_dir: Path,
    on_event: Callable[[dict[str, Any]], None],
    should_cancel: Callable[[], bool],
    deadline_s: float,
    poll_s: float = 0.5,
) -> SandboxResult:
    """Run the spec's trial on the hosts `load` returns (the inventory's records, or
    HostsRunError); the run's files land in run_dir."""
    started = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    log = RunLog(run_dir / RUN_LOG, on_event)
    ssh_dir = run_dir / "ssh"
    provenance: dict[str, Any] = {"testbed": "hosts"}
    on_event({"event": "phase", "phase": "provisioning"})
    cancel = CancelPoll(should_cancel, poll_s)
    try:
        records = load()
        hosts = write_credentials(records, ssh_dir)
        plan = trial_for_spec(spec, records, flows, run_id=run_id, agents_dir=agents_dir)
        provenance.update(_describe_hosts(spec, records))
        result = _trial_provisioning_on_demand(
            hosts, plan, run_dir, log, cancel, started, deadline_s, agents_dir, provenance
        )
    except HostsRunError as exc:
        return _failed(run_dir, provenance, str(exc), started)
    except ansible.PlaybookCancelled:
        _write_provenance(run_dir, provenance)
        if cancel.error is not None:
            raise cancel.error from None
        return SandboxResult("cancelled", None, None, time.monotonic() - started)
    except ansible.PlaybookTimeout as exc:
        _write_provenance(run_dir, provenance)
        return SandboxResult("timeout", str(exc), None, time.monotonic() - started)
    except ansible.HostsError as exc:
        return _failed(run_dir, provenance, f"hosts testbed: {exc}", started)
    finally:
        shutil.rmtree(ssh_dir, ignore_errors=True)
    provenance.update(_measured(spec, result, run_dir))
    _write_provenance(run_dir, provenance)
    return SandboxResult("done", None, 0, time.monotonic() - started)


def _trial_provisioning_on_demand(
    hosts: list[dict[str, Any]],
    plan: TrialPlan,
    run_dir: Path,
    log: RunLog,
    cancel: CancelPoll,
    started: float,
    deadline_s: float,
    agents_dir: Path,
    provenance: dict[str, Any],
) -> ansible.TrialResult:
    def remaining() -> float:
        left = deadline_s - (time.monotonic() - started)
        if left <= 0:
            raise ansible.PlaybookTimeout("the run", deadline_s, [h["name"] for h in hosts])
        return left

    trial_id = f"run-{run_dir.parent.name[-12:]}-{run_dir.name.rsplit('-', 1)[-1]}"
    provenance["provisioned"] = []
    try:
        return ansible.run_trial(hosts, plan.trial, run_dir, on_log=log, timeout_s=remaining(),
                                 should_cancel=cancel, trial_id=trial_id)  # fmt: skip
    except ansible.NotProvisioned as exc:
        log(f"provisioning: {exc}")
    provision_started = time.monotonic()
    artifacts = ansible.Artifacts.from_dict({
        "agent_binary": str(agents_dir / "ccbench-agent"),
        "link_binary": str(agents_dir / "ccbench-link"),
        "congestion_controls": plan.congestion_controls,
    })  # fmt: skip
    ansible.provision(hosts, artifacts, on_log=log, timeout_s=min(remaining(), 600))
    provenance["provisioned"] = [h["name"] for h in hosts]
    provenance["provision_s"] = round(time.monotonic() - provision_started, 3)
    return ansible.run_trial(hosts, plan.trial, run_dir, on_log=log, timeout_s=remaining(),
                             should_cancel=cancel, trial_id=trial_id)  # fmt: skip


def _describe_hosts(spec: ExperimentSpec, records: Sequence[HostAccess]) -> dict[str, Any]:
    described = {
        r.name: {"address": r.address, "port": r.port, "user": r.user,
                 "data_address": flow_address(r), "host_key_pinned": r.host_key is not None}
        for r in records
    }  # fmt: skip
    routed = spec.testbed.router is not None
    return {
        "hosts": described,
        "router": spec.testbed.router,
        "link_mechanism": "emulator" if routed else "none",
        "delay_mechanism": "emulator" if routed else None,
    }


def _measured(spec: ExperimentSpec, result: ansible.TrialResult, run_dir: Path) -> dict[str, Any]:
    """What the trial's modules found: per host kernel and agent versions, per flow the path
    (ping RTT, MTU) and the receiver's clock offset, and the router's rules."""
    out: dict[str, Any] = {"start_ts": result.start_at, "host_reports": {}}
    paths: dict[str, Any] = {}
    for host, report in result.reports.items():
        out["host_reports"][host] = {k: report[k] for k in ("kernel", "versions") if k in report}
        paths.update(report.get("paths") or {})
        if "router" in report:
            out["router_rules"] = report["router"]
    out["agent_versions"] = {
        host: report.get("versions") for host, report in out["host_reports"].items()
    }
    out["paths"] = paths
    offsets = {}
    for i in range(len(spec.flows)):
        clock = (paths.get(f"flow-{i}") or {}).get("clock") or {}
        if clock.get("offset_s") is not None:
            offsets[str(i)] = clock["offset_s"]
    out["receiver_clock_offset_s"] = offsets
    rtts = [p["ping_rtt_s"] for p in paths.values() if p.get("ping_rtt_s")]
    if rtts:
        out["ping_rtt_s"] = min(rtts, key=lambda r: float(r["min"]))
    for name in ("link-0-data", "link-0-ack"):
        stats = run_dir / f"{name}.json"
        if stats.exists():
            with contextlib.suppress(ValueError):
                out.setdefault("emulator_counters", {})[name] = json.loads(stats.read_text())
    return out


def _write_provenance(run_dir: Path, provenance: dict[str, Any]) -> None:
    (run_dir / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str))


def _failed(
    run_dir: Path, provenance: dict[str, Any], message: str, started: float
) -> SandboxResult:
    _write_provenance(run_dir, provenance)
    with (run_dir / RUN_LOG).open("a") as handle:
        handle.write(f"{time.strftime('%H:%M:%S')} error: {message}\n")
    return SandboxResult("error", message, None, time.monotonic() - started)
