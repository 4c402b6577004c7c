"""The layers (docs/architecture.md): the apps (cli, api, workers) import the domain
(ccbench) and the contracts (schemas), never each other, and nothing below an app imports one.
import-linter checks the contract in pyproject.toml; the second test shows that the check
fails on an upward import, so the first cannot pass by checking nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ccbench.settings import REPO_ROOT

PACKAGES = ("cli", "api", "workers", "scheduler", "ccbench", "schemas")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_layer_imports_a_higher_one() -> None:
    done = lint_imports(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO_ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.json"))  # fmt: skip
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path)
    settings = tmp_path / "ccbench" / "settings.py"
    settings.write_text(settings.read_text() + "\nfrom workers import bpf  # noqa\n")
    done = lint_imports(tmp_path)
    assert done.returncode != 0
    assert "ccbench is not allowed to import workers" in done.stdout
    assert "ccbench.settings -> workers.bpf" in done.stdout
