"""The ccbench version, and the source revision it runs from, recorded in every run's
provenance."""

import functools
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    CCBENCH_VERSION = version("ccbench")
except PackageNotFoundError:  # running from a source tree without installation
    CCBENCH_VERSION = "0.0.0+src"

SOURCE_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def source_revision() -> dict[str, str | bool]:
    """The git commit of the source tree ccbench runs from and whether tracked files differ
    from it (`dirty`); empty when it runs from an installed package (then its version says
    which release it is)."""
    git = shutil.which("git")
    if git is None or not (SOURCE_ROOT / ".git").exists():
        return {}
    try:
        commit = subprocess.run(
            [git, "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"],
            check=True, capture_output=True, text=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        changes = subprocess.run(
            [git, "-C", str(SOURCE_ROOT), "status", "--porcelain", "--untracked-files=no"],
            check=True, capture_output=True, text=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": bool(changes)}
