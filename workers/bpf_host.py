"""What one host does with ccbench's BPF congestion controllers, in the standard library only:
patch a per-run copy of an object (tunables, name), register it with bpftool, list and
unregister the kernel's struct_ops controllers, and fingerprint the sources and the kernel's
BTF the objects are built from.

Two callers run this same file: the worker (workers/bpf.py, for the mininet testbed, on its
own kernel) and, on each experiment host of the hosts testbed, the Ansible module
`ccbench_bpf` (playbooks/roles/ccbench/library/), which imports it as
`ansible.module_utils.ccbench_bpf_host` (a symbolic link in the role's module_utils/ names this
file), so Ansible ships it with the module on every call. Hence no import from ccbench, no
third-party package, and Python 3.9 syntax at most (Debian 11 hosts): the host's Python runs it.
The ownership rules (ledgers, sweeps) are each caller's, not this module's."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME_PATTERN = re.compile(r"^cb([0-9a-f]{6})([0-9a-f])_[a-z_]+$")
OPS_NAME_LEN = 16  # char name[TCP_CA_NAME_MAX], NUL included
TRACE_PLACEHOLDER = b"ccb_trace_ring_"  # the ring buffer's name in ccbench_cc.h (15 bytes)
STATE_FIELDS_SYMBOL = "ccb_state_fields"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BTF = Path("/sys/kernel/btf/vmlinux")
# bpftool's state of an unregistered struct_ops map that sockets still hold.
TOBEFREE = "BPF_STRUCT_OPS_STATE_TOBEFREE"
# What the objects are built from (agents/kernel): the Makefile and the sources under bpf/.
SOURCE_PATTERNS = ("Makefile", "bpf/*.c", "bpf/*.h")


class BpfError(RuntimeError):
    pass


def trace_map_name(controller: str) -> str:
    """The per-run name of a controller's trace ring buffer (a map name has 15 bytes at most)."""
    match = NAME_PATTERN.match(controller)
    if match is None:
        raise BpfError(f"{controller!r} is not a ccbench controller name")
    return f"ct{match.group(1)}{match.group(2)}_trace"


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


# --- what the objects are built from --------------------------------------------------------


def source_files(kernel_dir: Path) -> list[Path]:
    """The files an object build reads from a copy of agents/kernel, in a fixed order."""
    found = {p for pattern in SOURCE_PATTERNS for p in kernel_dir.glob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: p.relative_to(kernel_dir).as_posix())


def source_digest(kernel_dir: Path) -> str:
    """sha256 over the relative names and contents of source_files: equal on the worker and
    on a host exactly when the host has the worker's sources."""
    digest = hashlib.sha256()
    files = source_files(kernel_dir)
    if not files:
        raise BpfError(f"{kernel_dir} has no BPF sources (Makefile, bpf/*.c)")
    for path in files:
        digest.update(path.relative_to(kernel_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def btf_digest(btf: Path = BTF) -> str:
    """sha256 of the running kernel's BTF, which a build's vmlinux.h is generated from."""
    try:
        return hashlib.sha256(btf.read_bytes()).hexdigest()
    except OSError as exc:
        raise BpfError(f"the kernel has no BTF ({btf}: {exc.strerror})") from exc


# --- the kernel's registrations -----------------------------------------------------------


def bpftool(*args: str) -> str:
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
    text = bpftool("-j", "struct_ops", "dump").strip()
    entries = json.loads(text) if text else []
    # bpftool lists, per registration, {"bpf_map_info": ...} then the struct it holds.
    out = []
    # (zip's strict= is Python 3.10: a host may run 3.9.)
    for info, value in zip(entries[::2], entries[1::2]):  # noqa: B905
        ops = value.get("bpf_struct_ops_tcp_congestion_ops")
        if "bpf_map_info" in info and ops is not None:
            state = str(ops.get("common", {}).get("state", ""))
            out.append(OpsMap(int(info["bpf_map_info"]["id"]), str(ops["data"]["name"]), state,
                              ops["data"]))  # fmt: skip
    return out


def available() -> set[str]:
    """The kernel's congestion controls (registered BPF controllers included)."""
    return set(AVAILABLE.read_text().split())


def register_object(path: Path, name: str) -> None:
    """Register a patched object whose controller is `name`; the kernel must then offer it.
    (That no controller of that name is registered yet is the caller's check, made before it
    records the name as its own.)"""
    bpftool("struct_ops", "register", str(path))
    if name not in available():
        raise BpfError(f"{name} was registered but the kernel does not list it")


def unregister_name(name: str, listed: list[OpsMap] | None = None) -> str:
    """Unregister every live map of `name` (the kernel's list only: ledgers are the caller's).
    Returns "removed", "pending" when the kernel still lists it afterwards (held by sockets,
    freed when the last one closes) or "absent" when it listed none; raises BpfError only when
    a map of it is still live after bpftool was asked to unregister it."""
    mine = [m for m in (ops_maps() if listed is None else listed) if m.name == name]
    if not mine:
        return "absent"
    error = None
    for m in mine:
        if not m.pending:
            try:
                bpftool("struct_ops", "unregister", "id", str(m.id))
            except BpfError as exc:  # EINPROGRESS if another unregistration came first
                error = exc
    left = [m for m in ops_maps() if m.name == name]
    if not left:
        return "removed"
    if all(m.pending for m in left):
        return "pending"
    raise error or BpfError(f"{name} is still registered after bpftool unregistered it")
