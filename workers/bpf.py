"""Loading ccbench's BPF congestion controllers for a run, and removing them again.

Each algorithm is one object, `agents/kernel/build/<id>.bpf.o` (built by `agents/kernel/Makefile`).
For a run, the loader copies the object and writes into the copy (1) the spec's tunables, the
`const volatile` globals the object declares in .rodata, and (2) a per-attempt controller name
in place of the placeholder `ccb_<id>` in its struct_ops section; then `bpftool struct_ops
register` loads it. The kernel keeps a registered controller after bpftool exits, in one list
for every network namespace, so flows in the run's sandbox select it with TCP_CONGESTION.
The patching and the bpftool calls are in workers/bpf_host.py (standard library only), which
the hosts testbed's Ansible module runs on each experiment host as well; this module adds the
run's names, the ledger and the sweep of the worker's own kernel.

**Names** are `cb<tag><k>_<id>` (15 bytes at most): the tag is 6 hex digits of the hash of the
run's attempt (`attempt_key`: run id and attempt number), k tells apart one attempt's
controllers of the same algorithm with different parameters (on the hosts testbed also on
different sender hosts, which may share one kernel). Concurrent runs stay apart, and so
do the attempts of one run: the retry of a run whose worker was killed never meets the
controller its dead attempt left, which may stay in the kernel for a while (below). Each
controller's state-trace ring buffer is renamed the same way, `ct<tag><k>_trace`, so the worker
finds its own (workers/bpf_trace.py reads it).

**Which controllers are ours.** The kernel's list is shared by everything on the host (another
ccbench installation, other users' tests), and a `cb...` name does not say who registered it.
So an installation writes each controller into its ledger (workers/bpf_ledger.py: a small
owner-only file in the state directory, under an fcntl lock shared by all its processes)
*before* registering it, and drops it only once the kernel no longer lists it; the sweep
removes nothing the ledger does not name. An installation id inside the name was the other
choice: it would take 2-3 of the 15 bytes (cutting algorithm ids shorter still), could still
collide between installations, and could not tell this installation's probes from its runs.
The ledger's cost: a controller registered by a version without it, or whose ledger was
deleted, is never swept (remove it with `bpftool struct_ops unregister`).

**Removal.** Unregistering takes a controller off the kernel's list of congestion controls at
once, but its struct_ops map lives on, listed by bpftool in state TOBEFREE, while sockets still
use it (a killed run's orphaned sockets can hold it for over a minute), and unregistering it
again fails with EINPROGRESS. Such a controller is *pending*: the kernel frees it when its last
socket closes. Pending is never a failure, neither of the run that ended (its teardown outcome
per controller is recorded, provenance `bpf_teardown`) nor of a run that sweeps; the ledger
keeps the entry, marked pending, and later sweeps drop it once the kernel has freed it.

**The sweep** (before each BPF run, and every reaper interval in each worker's main process)
unregisters the ledger's controllers whose attempt is not active: a finished, failed or
requeued run's, and an older attempt's of a run that is running again. It asks which attempts
are active only once it holds the ledger's lock, so a run registering meanwhile (claimed before
it writes its ledger entry) is never taken for an orphan."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

from ccbench.settings import REPO_ROOT
from schemas.algorithms import PARAMETERS, Algorithm
from workers import bpf_host
from workers.bpf_host import AVAILABLE as AVAILABLE
from workers.bpf_host import BTF as BTF
from workers.bpf_host import NAME_PATTERN as NAME_PATTERN
from workers.bpf_host import OPS_NAME_LEN as OPS_NAME_LEN
from workers.bpf_host import TOBEFREE as TOBEFREE
from workers.bpf_host import TRACE_PLACEHOLDER as TRACE_PLACEHOLDER
from workers.bpf_host import BpfError as BpfError
from workers.bpf_host import OpsMap as OpsMap
from workers.bpf_host import ops_maps as ops_maps
from workers.bpf_host import patch_object as patch_object
from workers.bpf_host import state_fields as state_fields
from workers.bpf_host import trace_map_name as trace_map_name
from workers.bpf_host import unregister_name as _unregister
from workers.bpf_ledger import Ledger, LedgerError, default_ledger
from workers.plan import ControllerPlan

KERNEL_DIR = REPO_ROOT / "agents" / "kernel"  # the sources: Makefile, bpf/
BPF_BUILD_DIR = KERNEL_DIR / "build"
PENDING_REASON = (
    "unregistered; the kernel still lists it (TOBEFREE) while sockets use it and frees it when "
    "the last one closes"
)

log = logging.getLogger(__name__)
_bpftool = bpf_host.bpftool


def attempt_key(run_id: str, attempt: int) -> str:
    """What a run attempt's controller names are derived from (its run directory's path)."""
    return f"{run_id}/attempt-{attempt}"


def run_tag(key: str) -> str:
    """6 hex digits of `key` (an attempt_key; tests and tools use any string)."""
    return hashlib.sha256(key.encode()).hexdigest()[:6]


def symbol_values(algorithm: str, params: dict[str, float]) -> dict[str, int]:
    """The object's integer tunables for the spec's parameter values."""
    values = {}
    for p in PARAMETERS[Algorithm(algorithm)]:
        assert p.bpf_symbol is not None, f"{algorithm}.{p.name} has no BPF symbol"
        values[p.bpf_symbol] = p.bpf_value(params[p.name])
    return values


def controller_name(key: str, k: int, algorithm: str) -> str:
    """The name of controller `k` of the attempt `key` (attempt_key)."""
    if not 0 <= k < 16:
        raise BpfError("a run can load at most 16 BPF controllers")
    return f"cb{run_tag(key)}{k:x}_{algorithm}"[: OPS_NAME_LEN - 1]


def object_path(algorithm: str, build_dir: Path = BPF_BUILD_DIR) -> Path:
    return build_dir / f"{algorithm}.bpf.o"


# --- the kernel's registrations -----------------------------------------------------------


def registered_ops() -> dict[str, tuple[int, dict[str, Any]]]:
    """Registered BPF tcp_congestion_ops: controller name -> (struct_ops map id, its fields).
    Pending (unregistered, still held) ones included; a name that has both a pending and a
    live map maps to the live one."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for m in sorted(ops_maps(), key=lambda m: not m.pending):
        out[m.name] = (m.id, m.data)
    return out


def maps() -> list[dict[str, Any]]:
    """Every BPF map of the host, as `bpftool map show` describes it (id, type, name, ...)."""
    text = _bpftool("-j", "map", "show").strip()
    return list(json.loads(text)) if text else []


def registered() -> dict[str, int]:
    """Registered BPF tcp_congestion_ops: controller name -> struct_ops map id."""
    return {name: map_id for name, (map_id, _) in registered_ops().items()}


def register(
    controller: ControllerPlan,
    work_dir: Path,
    build_dir: Path = BPF_BUILD_DIR,
    ledger: Ledger | None = None,
) -> None:
    """Register the controller, recorded in the installation's ledger first."""
    ledger = ledger or default_ledger()
    source = object_path(controller.algorithm, build_dir)
    if not source.exists():
        raise BpfError(
            f"no BPF object for {controller.algorithm}: {source} is missing (scripts/install.sh "
            "builds agents/kernel)"
        )
    if controller.name in registered():
        raise BpfError(f"a controller named {controller.name} is already registered")
    target = work_dir / f"{controller.name}.bpf.o"
    patch_object(source, target, controller.algorithm, controller.name,
                 controller.symbols)  # fmt: skip
    with _ledger(ledger) as entries:
        entries[controller.name] = {"registered_at": time.time(), "pid": os.getpid()}
    try:
        bpf_host.register_object(target, controller.name)
    except BaseException:
        with contextlib.suppress(BpfError):
            unregister(controller.name, ledger)
        raise


Outcome = Literal["removed", "pending", "absent"]


def unregister(name: str, ledger: Ledger | None = None) -> Outcome:
    """Unregister a controller and update the installation's ledger: its entry goes once the
    kernel no longer lists it, a pending one stays marked (later sweeps drop it). Raises
    BpfError only when bpftool fails on a controller that is still live."""
    ledger = ledger or default_ledger()
    outcome = cast(Outcome, _unregister(name))
    with _ledger(ledger) as entries:
        _record(entries, name, outcome)
    return outcome


def _record(entries: dict[str, dict[str, Any]], name: str, outcome: Outcome) -> None:
    """Keep the ledger in step with the kernel: an entry goes once the kernel no longer lists
    the controller; a pending one stays, marked. (A controller the ledger does not name, one
    registered by someone else, gets no entry.)"""
    if outcome != "pending":
        entries.pop(name, None)
    elif name in entries:
        entries[name].setdefault("pending_since", time.time())
        entries[name]["pending"] = PENDING_REASON


@contextlib.contextmanager
def _ledger(ledger: Ledger) -> Iterator[dict[str, dict[str, Any]]]:
    try:
        with ledger.open() as entries:
            yield entries
    except LedgerError as exc:
        raise BpfError(str(exc)) from exc


class Loaded(list[str]):
    """The names of the controllers `loaded` registered, and once the block has ended how each
    one's unregistration went: "removed", "pending: ..." or "error: ..."."""

    teardown: dict[str, str]

    def __init__(self) -> None:
        super().__init__()
        self.teardown = {}


@contextlib.contextmanager
def loaded(
    controllers: Iterable[ControllerPlan],
    work_dir: Path,
    build_dir: Path = BPF_BUILD_DIR,
    ledger: Ledger | None = None,
) -> Iterator[Loaded]:
    """Register the run's controllers; unregister them when the block ends, however it ends.
    Teardown never raises: each outcome is in `teardown` (and logged), and what could not be
    removed stays in the ledger for the sweep."""
    ledger = ledger or default_ledger()
    done = Loaded()
    try:
        for controller in controllers:
            register(controller, work_dir, build_dir, ledger)
            done.append(controller.name)
        yield done
    finally:
        for name in done:
            try:
                outcome = unregister(name, ledger)
            except BpfError as exc:
                done.teardown[name] = f"error: {exc}"
                log.error("BPF controller %s could not be unregistered: %s", name, exc)
                continue
            if outcome == "pending":
                done.teardown[name] = f"pending: {PENDING_REASON}"
                log.warning("BPF controller %s is pending: %s", name, PENDING_REASON)
            else:
                done.teardown[name] = "removed"


def sweep(
    active: Iterable[str] | Callable[[], Iterable[str]], ledger: Ledger | None = None
) -> list[str]:
    """Unregister the ledger's controllers whose attempt is not among `active` (attempt keys,
    or a function returning them, called once the ledger is locked): those a killed worker
    left. Pending ones stay in the ledger, to be checked again; failures are logged and
    retried by the next sweep. Never raises for a controller. Returns the names removed."""
    ledger = ledger or default_ledger()
    removed: list[str] = []
    with _ledger(ledger) as entries:
        if not entries:
            return removed
        keep = {run_tag(key) for key in (active() if callable(active) else active)}
        try:
            listed = ops_maps()
        except BpfError as exc:
            log.error("BPF sweep: cannot list the kernel's controllers: %s", exc)
            return removed
        for name in sorted(entries):
            match = NAME_PATTERN.match(name)
            if match is not None and match.group(1) in keep:
                continue
            try:
                outcome = cast(Outcome, _unregister(name, listed))
            except BpfError as exc:
                entries[name]["error"] = str(exc)
                log.error("BPF sweep: %s could not be unregistered (retried later): %s", name, exc)
                continue
            pending_since = entries[name].get("pending_since")
            _record(entries, name, outcome)
            if outcome == "removed":
                removed.append(name)
                log.warning("BPF sweep: unregistered %s (its run attempt is over)", name)
            elif outcome == "pending" and pending_since is None:
                log.warning("BPF sweep: %s is pending: %s", name, PENDING_REASON)
            elif outcome == "absent" and pending_since is not None:
                log.info("BPF sweep: the kernel freed %s %.0f s after it was unregistered",
                         name, time.time() - pending_since)  # fmt: skip
    return removed


# --- what this host can load --------------------------------------------------------------


def probe(build_dir: Path = BPF_BUILD_DIR, try_load: bool = True) -> dict[str, Any]:
    """BPF support of this host: kernel BTF, bpftool, the objects built, and (with `try_load`,
    as root) whether the kernel accepts each one: every object is registered under a probe
    name and removed again at once. `loadable` maps each algorithm to "ok" or the reason."""
    tool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    version = None
    if Path(tool).exists():
        done = subprocess.run([tool, "version"], capture_output=True, text=True, check=False)
        version = done.stdout.splitlines()[0].strip() if done.returncode == 0 else None
    built = sorted(a.value for a in PARAMETERS if object_path(a.value, build_dir).exists())
    result: dict[str, Any] = {
        "btf": BTF.exists(),
        "bpftool": version,
        "objects": built,
        "loadable": {},
    }
    for algorithm in sorted(a.value for a in PARAMETERS):
        if not BTF.exists():
            reason = "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
        elif version is None:
            reason = "bpftool is not installed"
        elif algorithm not in built:
            reason = f"not built: {object_path(algorithm, build_dir)} is missing"
        elif not try_load:
            reason = "not tried"
        else:
            reason = _try_load(algorithm, build_dir)
        result["loadable"][algorithm] = reason
    result["struct_ops"] = any(v == "ok" for v in result["loadable"].values()) or None
    return result


def _try_load(algorithm: str, build_dir: Path) -> str:
    import tempfile

    name = controller_name(f"probe-{os.getpid()}", 0, algorithm)
    plan = ControllerPlan(name, algorithm, {}, {})
    ledger = default_ledger()
    with tempfile.TemporaryDirectory(prefix="ccbench-probe-") as work:
        try:
            # Held throughout, so that no sweep takes the probe's controller for an orphan;
            # a probe killed meanwhile leaves it in the ledger for the next sweep.
            with _ledger(ledger), loaded([plan], Path(work), build_dir, ledger):
                pass
        except BpfError as exc:
            return str(exc)
    return "ok"
