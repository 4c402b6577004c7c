"""The `hosts` testbed: one run between a team's registered hosts, in one Ansible play.

    inventory (ccbench.hosts) -> keys and pinned host keys in <run_dir>/ssh (removed
    afterwards) -> trial description (the plan's command lines, as on the mininet testbed:
    workers.plan.receiver_args, sender_args, emulator_args) -> ansible.run_trial: preflight,
    router emulators and rules, receivers, path measurements, senders at a common start,
    fetch, cleanup -> provenance.json (hosts, kernels, agent versions, base RTT, path MTU,
    clock offsets)

Hosts are provisioned on demand: when the trial's preflight finds an agent that is not this
worker's build (or a loadable congestion control not loaded, or BPF controllers not built from
this worker's sources against the host's kernel), provision.yml runs once and the trial is
retried; later runs pay nothing for it. A flow with `runtime: bpf` selects the controller its
sender's host registers for the run attempt (workers/bpf.py names it, one per host, algorithm
and parameters), built on that host against its own kernel BTF; the play registers it before
any agent starts and unregisters it whatever happens (playbooks/roles/ccbench: ccbench_bpf).
Every Ansible task becomes a line of <run_dir>/run.log; failures become errors that name the
host."""

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ccbench import rundir
from ccbench.errors import NotFound
from ccbench.hosts import HostAccess, load_access
from workers import bpf, bpf_host
from workers.plan import Plan, emulator_args, receiver_args, sender_args, trace_file_text
from workers.testbeds.base import CancelCheck, EventSink, TestbedResult
from workers.testbeds.hosts import ansible, errors

PORT_BASE = 20000  # receivers listen on PORT_BASE + 10 * slot + flow index
PORT_SLOTS = 4000
QUEUE_BASE = 2000  # the router's NFQUEUE numbers: QUEUE_BASE + 2 * slot (+1 for ACKs)
QUEUE_SLOTS = 20000


class HostsRunError(Exception):
    """The run cannot start on the hosts (the message names the host and the field)."""


def load_hosts(team_id: str, names: Sequence[str]) -> list[HostAccess]:
    """The named hosts of the team, keys decrypted (ccbench.hosts)."""
    try:
        return load_access(team_id, names)
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
    congestion_controls: list[str]  # the kernel's own controllers the senders select
    bpf_hosts: list[str]  # the hosts that register BPF controllers (they build them)


def trial_for_plan(plan: Plan, records: Sequence[HostAccess]) -> TrialPlan:
    """The trial description of one run (ansible.run_trial's format)."""
    by_name = {r.name: r for r in records}
    agents_dir = Path(plan.agents_dir)
    slot = zlib.crc32(plan.run_id.encode())
    port0 = PORT_BASE + 10 * (slot % PORT_SLOTS)
    receivers: list[dict[str, Any]] = []
    senders: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    bpf_names = {c.name for c in plan.controllers}
    for flow in plan.flows:
        assert flow.src is not None and flow.dst is not None  # the spec requires them on hosts
        i, port = flow.index, port0 + flow.index
        # A BPF controller is not the kernel's until the trial registers it: the preflight
        # checks its build instead.
        kernel_cc = flow.agent == "kernel" and flow.algorithm not in bpf_names
        address = by_name[flow.dst].flow_address
        receivers.append({
            "host": flow.dst, "name": f"flow-{i}.recv", "files": [rundir.receiver_log(i)],
            "args": receiver_args(flow, f"0.0.0.0:{port}", plan.interval_ms),
        })  # fmt: skip
        senders.append({
            "host": flow.src, "name": f"flow-{i}.send", "files": [rundir.sender_log(i)],
            "cc": flow.algorithm if kernel_cc else "",
            "start_s": flow.start_s, "duration_s": flow.duration_s,
            "args": sender_args(flow, f"{address}:{port}", plan.interval_ms, plan.seed),
        })  # fmt: skip
        paths.append({"host": flow.src, "name": f"flow-{i}", "address": address})
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
    if plan.controllers:
        trial["controllers"] = [
            {"host": c.host, "name": c.name, "algorithm": c.algorithm, "symbols": c.symbols}
            for c in plan.controllers
        ]
        trial["bpf_source_sha256"] = bpf_host.source_digest(bpf.KERNEL_DIR)
    router = plan.router
    if router is not None:
        (link,) = plan.links  # the spec allows the dumbbell only with a router
        queue = QUEUE_BASE + 2 * (slot % QUEUE_SLOTS)
        trial["emulators"] = [
            {"host": router, "name": rundir.link_name(0, forward=True),
             "files": [rundir.link_packet_log(0), rundir.link_stats(0)],
             "args": emulator_args(link, 0, queue, plan.seed, forward=True)},
            {"host": router, "name": rundir.link_name(0, forward=False),
             "files": [rundir.link_stats(0, forward=False)],
             "args": emulator_args(link, 0, queue + 1, plan.seed, forward=False)},
        ]  # fmt: skip
        trial["router"] = {
            "host": router,
            "receivers": sorted({by_name[f.dst].flow_address for f in plan.flows if f.dst}),
            "forward_queue": queue,
            "reverse_queue": queue + 1,
            "files": [{"name": rundir.link_trace(0), "content": trace_file_text(link)}]
            if link.trace_ms
            else [],
        }
        binaries[router] = [
            {"name": "ccbench-link", "sha256": sha256_of(agents_dir / "ccbench-link")}
        ]
    kernel_ccs = sorted({str(s["cc"]) for s in senders if s["cc"]})
    bpf_hosts = sorted({str(c.host) for c in plan.controllers})
    return TrialPlan(trial, kernel_ccs, bpf_hosts)


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


class HostsTestbed:
    """The `hosts` testbed (workers.testbeds.base.Testbed): the plan's flows between registered
    hosts, whose access `load_hosts` gives by name (the inventory's records, or
    HostsRunError)."""

    def __init__(
        self, load_hosts: Callable[[Sequence[str]], Sequence[HostAccess]], poll_s: float = 0.5
    ) -> None:
        self.load_hosts = load_hosts
        self.poll_s = poll_s

    def run(
        self, plan: Plan, events: EventSink, cancel: CancelCheck, deadline_s: float
    ) -> TestbedResult:
        """Run the plan's trial; the run's files land in plan.run_dir."""
        started = time.monotonic()
        run_dir = Path(plan.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        log = RunLog(run_dir / rundir.RUN_LOG, events)
        ssh_dir = run_dir / rundir.SSH_DIR
        provenance: dict[str, Any] = {"testbed": "hosts"}
        events({"event": "phase", "phase": "provisioning"})
        poll = CancelPoll(cancel, self.poll_s)
        try:
            records = self.load_hosts(host_names(plan))
            hosts = write_credentials(records, ssh_dir)
            trial = trial_for_plan(plan, records)
            provenance.update(_describe_hosts(plan, records))
            result = _trial_provisioning_on_demand(
                hosts, trial, run_dir, log, poll, started, deadline_s, Path(plan.agents_dir),
                provenance,
            )  # fmt: skip
        except HostsRunError as exc:
            return _failed(run_dir, provenance, str(exc), started)
        except errors.PlaybookCancelled:
            _write_provenance(run_dir, provenance)
            if poll.error is not None:
                raise poll.error from None
            return TestbedResult("cancelled", None, None, time.monotonic() - started)
        except errors.PlaybookTimeout as exc:
            _write_provenance(run_dir, provenance)
            return TestbedResult("timeout", str(exc), None, time.monotonic() - started)
        except errors.HostsError as exc:
            return _failed(run_dir, provenance, f"hosts testbed: {exc}", started)
        finally:
            shutil.rmtree(ssh_dir, ignore_errors=True)
        provenance.update(_measured(plan, result, run_dir))
        _write_provenance(run_dir, provenance)
        return TestbedResult("done", None, 0, time.monotonic() - started)


def host_names(plan: Plan) -> list[str]:
    """Every host the run uses: senders and receivers in flow order, then the router."""
    names = [n for f in plan.flows for n in (f.src, f.dst) if n is not None]
    return list(dict.fromkeys([*names, *([plan.router] if plan.router else [])]))


def _trial_provisioning_on_demand(
    hosts: list[dict[str, Any]],
    trial: TrialPlan,
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
            raise errors.PlaybookTimeout("the run", deadline_s, [h["name"] for h in hosts])
        return left

    trial_id = f"run-{run_dir.parent.name[-12:]}-{run_dir.name.rsplit('-', 1)[-1]}"
    provenance["provisioned"] = []
    try:
        return ansible.run_trial(hosts, trial.trial, run_dir, on_log=log, timeout_s=remaining(),
                                 should_cancel=cancel, trial_id=trial_id)  # fmt: skip
    except errors.NotProvisioned as exc:
        log(f"provisioning: {exc}")
    provision_started = time.monotonic()
    artifacts = ansible.Artifacts.from_dict({
        "agent_binary": str(agents_dir / "ccbench-agent"),
        "link_binary": str(agents_dir / "ccbench-link"),
        "congestion_controls": trial.congestion_controls,
        "bpf_source_dir": str(bpf.KERNEL_DIR) if trial.bpf_hosts else "",
        "bpf_hosts": trial.bpf_hosts,
    })  # fmt: skip
    ansible.provision(hosts, artifacts, on_log=log, timeout_s=min(remaining(), 600))
    provenance["provisioned"] = [h["name"] for h in hosts]
    provenance["provision_s"] = round(time.monotonic() - provision_started, 3)
    return ansible.run_trial(hosts, trial.trial, run_dir, on_log=log, timeout_s=remaining(),
                             should_cancel=cancel, trial_id=trial_id)  # fmt: skip


def _describe_hosts(plan: Plan, records: Sequence[HostAccess]) -> dict[str, Any]:
    described = {
        r.name: {"address": r.address, "port": r.port, "user": r.user,
                 "data_address": r.flow_address, "host_key_pinned": r.host_key is not None}
        for r in records
    }  # fmt: skip
    routed = plan.router is not None
    out: dict[str, Any] = {
        "hosts": described,
        "router": plan.router,
        "link_mechanism": "emulator" if routed else "none",
        "delay_mechanism": "emulator" if routed else None,
        "emulator_mode": plan.emulator_mode if routed else None,
    }
    if plan.controllers:  # as the sandbox records them, each with the host that registers it
        out["bpf_controllers"] = [asdict(c) for c in plan.controllers]
    return out


def _measured(plan: Plan, result: ansible.TrialResult, run_dir: Path) -> dict[str, Any]:
    """What the trial's modules found: per host kernel and agent versions, per flow the path
    (ping RTT, MTU) and the receiver's clock offset, the router's rules, and how each BPF
    controller's unregistration went (as the mininet testbed records it)."""
    out: dict[str, Any] = {"start_ts": result.start_at, "host_reports": {}}
    paths: dict[str, Any] = {}
    for host, report in result.reports.items():
        out["host_reports"][host] = {k: report[k] for k in ("kernel", "versions") if k in report}
        paths.update(report.get("paths") or {})
        if "router" in report:
            out["router_rules"] = report["router"]
        if report.get("bpf_teardown"):
            out.setdefault("bpf_teardown", {}).update(report["bpf_teardown"])
    out["agent_versions"] = {
        host: report.get("versions") for host, report in out["host_reports"].items()
    }
    out["paths"] = paths
    offsets = {}
    for i in range(len(plan.flows)):
        clock = (paths.get(f"flow-{i}") or {}).get("clock") or {}
        if clock.get("offset_s") is not None:
            offsets[str(i)] = clock["offset_s"]
    out["receiver_clock_offset_s"] = offsets
    rtts = [p["ping_rtt_s"] for p in paths.values() if p.get("ping_rtt_s")]
    if rtts:
        out["ping_rtt_s"] = min(rtts, key=lambda r: float(r["min"]))
    for forward in (True, False):
        stats = run_dir / rundir.link_stats(0, forward)
        if stats.exists():
            with contextlib.suppress(ValueError):
                counters = out.setdefault("emulator_counters", {})
                counters[rundir.link_name(0, forward)] = json.loads(stats.read_text())
    return out


def _write_provenance(run_dir: Path, provenance: dict[str, Any]) -> None:
    (run_dir / rundir.PROVENANCE).write_text(json.dumps(provenance, indent=2, default=str))


def _failed(
    run_dir: Path, provenance: dict[str, Any], message: str, started: float
) -> TestbedResult:
    _write_provenance(run_dir, provenance)
    with (run_dir / rundir.RUN_LOG).open("a") as handle:
        handle.write(f"{time.strftime('%H:%M:%S')} error: {message}\n")
    return TestbedResult("error", message, None, time.monotonic() - started)
