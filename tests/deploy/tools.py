"""The deployment tools the tests run, built once into a cache outside the repository by
scripts/tools.sh (helm from the Go module proxy; compose-check from containers/compose-check)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ccbench.settings import REPO_ROOT


def cached_tool(name: str, timeout_s: float) -> str:
    """The tool's path, building it first if needed; skips the test where Go is missing."""
    if shutil.which("go") is None:
        pytest.skip(f"{name} is built with Go, which is not installed")
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "tools.sh"), name],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, f"building {name} failed:\n{done.stderr[-3000:]}"
    return done.stdout.strip()
