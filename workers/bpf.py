"""Loading ccbench's BPF congestion controllers for a run, and removing them again.

Each algorithm is one object, `agents/kernel/build/<id>.bpf.o` (built by `agents/kernel/Makefile`).
For a run, the loader copies the object and writes into the copy (1) the spec's tunables, the
`const volatile` globals the object declares in .rodata, and (2) a per-attempt controller name
in place of the placeholder `ccb_<id>` in its struct_ops section; then `bpftool struct_ops
register` loads it. The kernel keeps a registered controller after bpftool exits, in one list
for every network namespace, so flows in the run's sandbox select it with TCP_CONGESTION.

**Names** are `cb<tag><k>_<id>` (15 bytes at most): the tag is 6 hex digits of the hash of the
run's attempt (`attempt_key`: run id and attempt number), k tells apart one attempt's
controllers of the same algorithm with different parameters. Concurrent runs stay apart, and so
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
import re
import shutil
import struct
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ccbench.settings import REPO_ROOT
from schemas.algorithms import PARAMETERS, Algorithm
from workers.bpf_ledger import Ledger, LedgerError, default_ledger
from workers.plan import ControllerPlan

BPF_BUILD_DIR = REPO_ROOT / "agents" / "kernel" / "build"
NAME_PATTERN = re.compile(r"^cb([0-9a-f]{6})([0-9a-f])_[a-z_]+$")
OPS_NAME_LEN = 16  # char name[TCP_CA_NAME_MAX], NUL included
TRACE_PLACEHOLDER = b"ccb_trace_ring_"  # the ring buffer's name in ccbench_cc.h (15 bytes)
STATE_FIELDS_SYMBOL = "ccb_state_fields"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
# bpftool's state of an unregistered struct_ops map that sockets still hold.
TOBEFREE = "BPF_STRUCT_OPS_STATE_TOBEFREE"
PENDING_REASON = (
    "unregistered; the kernel still lists it (TOBEFREE) while sockets use it and frees it when "
    "the last one closes"
)

log = logging.getLogger(__name__)


class BpfError(RuntimeError):
    pass


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


def trace_map_name(controller: str) -> str:
    """The per-run name of a controller's trace ring buffer (a map name has 15 bytes at most)."""
    match = NAME_PATTERN.match(controller)
    if match is None:
        raise BpfError(f"{controller!r} is not a ccbench controller name")
    return f"ct{match.group(1)}{match.group(2)}_trace"


def object_path(algorithm: str, build_dir: Path = BPF_BUILD_DIR) -> Path:
    return build_dir / f"{algorithm}.bpf.o"


# --- ELF64 (little-endian) patching -------------------------------------------------------


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


def _sections(data: bytes) -> list[_Section]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise BpfError("not a 64-bit little-endian ELF object")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = []
    for i in range(shnum):
        name, type_, _flags, _addr, offset, size, link = struct.unpack_from(
            "<IIQQQQI", data, shoff + i * shentsize
        )
        raw.append((name, type_, offset, size, link))
    names_offset = raw[shstrndx][2]

    def cstr(at: int) -> str:
        return data[at : data.index(b"\0", at)].decode()

    return [_Section(cstr(names_offset + n), t, o, s, lk) for n, t, o, s, lk in raw]


def _symbols(data: bytes, sections: list[_Section]) -> dict[str, tuple[int, int, int]]:
    """name -> (section index, value, size) of every symbol."""
    symtab = next((s for s in sections if s.type == 2), None)  # SHT_SYMTAB
    if symtab is None:
        raise BpfError("the object has no symbol table")
    strtab = sections[symtab.link]
    out = {}
    for at in range(symtab.offset, symtab.offset + symtab.size, 24):
        name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, at)
        start = strtab.offset + name
        out[data[start : data.index(b"\0", start)].decode()] = (shndx, value, size)
    return out


def patch_object(
    source: Path, target: Path, algorithm: str, name: str, values: dict[str, int]
) -> None:
    """Copy `source` to `target` with the tunables set and the controller renamed."""
    data = bytearray(source.read_bytes())
    sections = _sections(bytes(data))
    symbols = _symbols(bytes(data), sections)
    for symbol, value in values.items():
        if symbol not in symbols:
            raise BpfError(f"{source.name} declares no tunable {symbol!r}")
        shndx, offset, size = symbols[symbol]
        section = sections[shndx]
        if section.name != ".rodata" or size != 4:
            raise BpfError(f"{symbol} in {source.name} is not a 4-byte .rodata tunable")
        if not -(2**31) <= value < 2**32:
            raise BpfError(f"{symbol} = {value} does not fit 32 bits")
        struct.pack_into("<i" if value < 0 else "<I", data, section.offset + offset, value)
    ops = next((s for s in sections if s.name == ".struct_ops"), None)
    if ops is None:
        raise BpfError(f"{source.name} has no .struct_ops section")
    # The object's name placeholder is ccb_<id>, cut to fit the kernel's 16-byte name.
    placeholder = f"ccb_{algorithm}"[: OPS_NAME_LEN - 1].encode().ljust(OPS_NAME_LEN, b"\0")
    body = bytes(data[ops.offset : ops.offset + ops.size])
    if body.count(placeholder) != 1:
        shown = f"ccb_{algorithm}"[: OPS_NAME_LEN - 1]
        raise BpfError(f"{source.name}: the name placeholder {shown} is not found once")
    if len(name) >= OPS_NAME_LEN:
        raise BpfError(f"controller name {name!r} is longer than {OPS_NAME_LEN - 1} bytes")
    at = ops.offset + body.index(placeholder)
    data[at : at + OPS_NAME_LEN] = name.encode().ljust(OPS_NAME_LEN, b"\0")
    # The ring buffer's name is in the symbol table and in BTF (libbpf names maps from BTF);
    # same-length replacement keeps every string offset valid.
    trace = trace_map_name(name).encode()
    if len(trace) != len(TRACE_PLACEHOLDER):
        raise BpfError(f"trace map name {trace!r} does not have {len(TRACE_PLACEHOLDER)} bytes")
    if data.count(TRACE_PLACEHOLDER) < 2:
        raise BpfError(f"{source.name} has no state-trace ring buffer (ccbench_cc.h)")
    target.write_bytes(bytes(data).replace(TRACE_PLACEHOLDER, trace))


def state_fields(path: Path) -> list[str]:
    """The names of the algorithm's traced variables (`CCB_STATE_FIELDS` in its source)."""
    data = path.read_bytes()
    sections = _sections(data)
    symbols = _symbols(data, sections)
    if STATE_FIELDS_SYMBOL not in symbols:
        raise BpfError(f"{path.name} does not declare CCB_STATE_FIELDS")
    shndx, offset, size = symbols[STATE_FIELDS_SYMBOL]
    start = sections[shndx].offset + offset
    text = data[start : start + size].split(b"\0", 1)[0].decode()
    return [f for f in text.split(",") if f]


# --- the kernel's registrations -----------------------------------------------------------


def _bpftool(*args: str) -> str:
    tool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    try:
        done = subprocess.run([tool, *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError as exc:
        raise BpfError("bpftool is not installed (Debian package bpftool)") from exc
    if done.returncode != 0:
        raise BpfError(f"bpftool {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


@dataclass(frozen=True)
class OpsMap:
    """One struct_ops map holding a tcp_congestion_ops, as `bpftool struct_ops dump` lists it."""

    id: int
    name: str  # the controller's name
    state: str  # BPF_STRUCT_OPS_STATE_INUSE, or TOBEFREE once unregistered while still held
    data: dict[str, Any] = field(repr=False)

    @property
    def pending(self) -> bool:
        return self.state == TOBEFREE


def ops_maps() -> list[OpsMap]:
    """Every tcp_congestion_ops struct_ops map of the host, pending ones included."""
    text = _bpftool("-j", "struct_ops", "dump").strip()
    entries = json.loads(text) if text else []
    # bpftool lists, per registration, {"bpf_map_info": ...} then the struct it holds.
    out = []
    for info, value in zip(entries[::2], entries[1::2], strict=False):
        ops = value.get("bpf_struct_ops_tcp_congestion_ops")
        if "bpf_map_info" in info and ops is not None:
            state = str(ops.get("common", {}).get("state", ""))
            out.append(OpsMap(int(info["bpf_map_info"]["id"]), str(ops["data"]["name"]), state,
                              ops["data"]))  # fmt: skip
    return out


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


def _available() -> set[str]:
    return set(AVAILABLE.read_text().split())


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
        _bpftool("struct_ops", "register", str(target))
        if controller.name not in _available():
            raise BpfError(f"{controller.name} was registered but the kernel does not list it")
    except BaseException:
        with contextlib.suppress(BpfError):
            unregister(controller.name, ledger)
        raise


Outcome = Literal["removed", "pending", "absent"]


def _unregister(name: str, listed: list[OpsMap] | None = None) -> Outcome:
    """Unregister every live map of `name` (the kernel only: the ledger is the caller's).
    "pending" when the kernel still lists it afterwards, "absent" when it listed none."""
    mine = [m for m in (ops_maps() if listed is None else listed) if m.name == name]
    if not mine:
        return "absent"
    error = None
    for m in mine:
        if not m.pending:
            try:
                _bpftool("struct_ops", "unregister", "id", str(m.id))
            except BpfError as exc:  # EINPROGRESS if another unregistration came first
                error = exc
    left = [m for m in ops_maps() if m.name == name]
    if not left:
        return "removed"
    if all(m.pending for m in left):
        return "pending"
    raise error or BpfError(f"{name} is still registered after bpftool unregistered it")


def unregister(name: str, ledger: Ledger | None = None) -> Outcome:
    """Unregister a controller and update the installation's ledger: its entry goes once the
    kernel no longer lists it, a pending one stays marked (later sweeps drop it). Raises
    BpfError only when bpftool fails on a controller that is still live."""
    ledger = ledger or default_ledger()
    outcome = _unregister(name)
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
                outcome = _unregister(name, listed)
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

BTF = Path("/sys/kernel/btf/vmlinux")


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
