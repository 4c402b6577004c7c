"""Loading ccbench's BPF congestion controllers for a run, and removing them again.

Each algorithm is one object, `agents/kernel/build/<id>.bpf.o` (built by `agents/kernel/Makefile`).
For a run, the loader copies the object and writes into the copy (1) the spec's tunables, the
`const volatile` globals the object declares in .rodata, and (2) a per-attempt controller name
in place of the placeholder `ccb_<id>` in its struct_ops section; then `bpftool struct_ops
register` loads it. The kernel keeps a registered controller after bpftool exits, in one list
for every network namespace, so flows in the run's sandbox select it with TCP_CONGESTION.

Names are `cb<tag><k>_<id>` (15 bytes at most): the tag is 6 hex digits of the hash of the
run's attempt (`attempt_key`: run id and attempt number), k tells apart one attempt's
controllers of the same algorithm with different parameters. Concurrent runs stay apart, and so
do the attempts of one run: the retry of a run whose worker was killed never meets the
controller its dead attempt left. Each controller's state-trace ring buffer is renamed the same
way, `ct<tag><k>_trace`, so the worker finds its own (workers/bpf_trace.py reads it). Teardown
unregisters by map id; `sweep` removes what a killed worker left behind (controllers of
attempts that are not running)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccbench.settings import REPO_ROOT
from schemas.algorithms import PARAMETERS, Algorithm
from workers.plan import ControllerPlan

BPF_BUILD_DIR = REPO_ROOT / "agents" / "kernel" / "build"
NAME_PATTERN = re.compile(r"^cb([0-9a-f]{6})([0-9a-f])_[a-z_]+$")
OPS_NAME_LEN = 16  # char name[TCP_CA_NAME_MAX], NUL included
TRACE_PLACEHOLDER = b"ccb_trace_ring_"  # the ring buffer's name in ccbench_cc.h (15 bytes)
STATE_FIELDS_SYMBOL = "ccb_state_fields"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


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


def registered_ops() -> dict[str, tuple[int, dict[str, Any]]]:
    """Registered BPF tcp_congestion_ops: controller name -> (struct_ops map id, its fields)."""
    text = _bpftool("-j", "struct_ops", "dump").strip()
    entries = json.loads(text) if text else []
    # bpftool lists, per registration, {"bpf_map_info": ...} then the struct it holds.
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for info, value in zip(entries[::2], entries[1::2], strict=False):
        ops = value.get("bpf_struct_ops_tcp_congestion_ops")
        if "bpf_map_info" in info and ops is not None:
            out[str(ops["data"]["name"])] = (int(info["bpf_map_info"]["id"]), ops["data"])
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


def register(controller: ControllerPlan, work_dir: Path, build_dir: Path = BPF_BUILD_DIR) -> None:
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
    _bpftool("struct_ops", "register", str(target))
    if controller.name not in _available():
        unregister(controller.name)
        raise BpfError(f"{controller.name} was registered but the kernel does not list it")


def unregister(name: str) -> bool:
    map_id = registered().get(name)
    if map_id is None:
        return False
    _bpftool("struct_ops", "unregister", "id", str(map_id))
    return True


@contextlib.contextmanager
def loaded(
    controllers: Iterable[ControllerPlan], work_dir: Path, build_dir: Path = BPF_BUILD_DIR
) -> Iterator[list[str]]:
    """Register the run's controllers; unregister them when the block ends, however it ends."""
    done: list[str] = []
    try:
        for controller in controllers:
            register(controller, work_dir, build_dir)
            done.append(controller.name)
        yield done
    finally:
        for name in done:
            with contextlib.suppress(BpfError):
                unregister(name)


def sweep(active_run_ids: Iterable[str]) -> list[str]:
    """Unregister ccbench controllers whose attempt is not among `active_run_ids` (attempt
    keys; left by a killed worker). Returns the names removed."""
    keep = {run_tag(r) for r in active_run_ids}
    removed = []
    for name in registered():
        match = NAME_PATTERN.match(name)
        if match and match.group(1) not in keep and unregister(name):
            removed.append(name)
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
    import os
    import tempfile

    name = controller_name(f"probe-{os.getpid()}", 0, algorithm)
    plan = ControllerPlan(name, algorithm, {}, {})
    with tempfile.TemporaryDirectory(prefix="ccbench-probe-") as work:
        try:
            with loaded([plan], Path(work), build_dir):
                pass
        except BpfError as exc:
            return str(exc)
    return "ok"
