"""What a worker records about the software that ran a run (workers/provenance.py), checked
against the source tree and the binaries themselves."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys

from ccbench.settings import REPO_ROOT, get_settings
from ccbench.version import source_revision
from workers.provenance import software


def test_software_names_commit_python_packages_agents_and_kernel() -> None:
    recorded = software(get_settings().agents_dir)
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    assert recorded["ccbench"]["commit"] == head == source_revision()["commit"]
    assert isinstance(recorded["ccbench"]["dirty"], bool)
    assert recorded["python"]["version"] == platform.python_version()
    assert recorded["python"]["version"].startswith(f"{sys.version_info.major}.")
    assert recorded["python_packages"]["sqlalchemy"].startswith("2.")
    assert recorded["kernel"]["release"] == os.uname().release
    for name, agent in recorded["rust_packages"].items():
        path = get_settings().agents_dir / name
        if not path.exists():  # agents not built: recorded as absent
            assert agent is None
            continue
        assert agent["version"].startswith(f"{name} ")
        assert agent["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    lock = REPO_ROOT / "agents" / "Cargo.lock"
    assert recorded["cargo_lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()
