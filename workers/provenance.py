"""What a worker adds to every run's provenance about the software that ran it: ccbench's
version and source commit, Python and the Python packages ccbench depends on, the agent
binaries (their Rust package versions and SHA-256) and the Cargo.lock that pins their crates,
and the worker's kernel and host name. The testbeds record their own side (the sandbox's or
each host's kernel and agent versions)."""

from __future__ import annotations

import functools
import hashlib
import platform
import re
import socket
import subprocess
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

from ccbench.settings import REPO_ROOT
from ccbench.version import CCBENCH_VERSION, source_revision

AGENT_BINARIES = ("ccbench-agent", "ccbench-link")
CARGO_LOCK = REPO_ROOT / "agents" / "Cargo.lock"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.cache
def python_packages() -> dict[str, str | None]:
    """The installed version of each package ccbench requires (None: not installed)."""
    try:
        wanted = requires("ccbench") or []
    except PackageNotFoundError:
        return {}
    names = sorted({re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0] for r in wanted
                    if "extra ==" not in r})  # fmt: skip
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


@functools.cache
def _binary(path: Path, mtime_ns: int) -> dict[str, Any]:
    """A binary's `--version` and SHA-256 (cached while the file is unchanged)."""
    try:
        shown = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                               timeout=10).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        shown = f"unknown ({exc})"
    return {"version": shown, "sha256": _sha256(path)}


def agents(agents_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in AGENT_BINARIES:
        path = agents_dir / name
        out[name] = _binary(path, path.stat().st_mtime_ns) if path.is_file() else None
    return out


def software(agents_dir: Path) -> dict[str, Any]:
    uname = platform.uname()
    return {
        "ccbench": {"version": CCBENCH_VERSION, **source_revision()},
        "python": {"version": platform.python_version(),
                   "implementation": platform.python_implementation()},
        "python_packages": python_packages(),
        "rust_packages": agents(agents_dir),
        "cargo_lock_sha256": _sha256(CARGO_LOCK) if CARGO_LOCK.is_file() else None,
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "host": socket.gethostname(),
    }  # fmt: skip
