"""A run's raw outputs (logs, packet logs, series files, provenance) as the API serves them: one
directory per run attempt under `<state_dir>/runs/<run>/attempt-<n>/` (ccbench.rundir). On one
machine it is the worker's own run directory; a worker on another machine uploads each file
there through the API (`PUT /v1/internal/runs/{id}/attempts/{n}/files/{name}`, with the shared
CCBENCH_WORKER_TOKEN), during the run for its log and at its end for everything — so workers
need no object-store credentials and the API reads the same layout either way."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from ccbench import rundir
from ccbench.errors import NotFound, ValidationFailed
from ccbench.settings import Settings, get_settings

# A run directory holds plain files named by ccbench.rundir (and BPF objects, traces).
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def attempt_dir(run_id: str, attempt: int, settings: Settings | None = None) -> Path:
    return rundir.attempt_dir((settings or get_settings()).runs_dir, run_id, attempt)


def checked_name(name: str) -> str:
    """A file name of a run directory: no path, nothing hidden."""
    if not _FILE_NAME.match(name):
        raise ValidationFailed.field("name", f"{name!r} is not a run file's name")
    return name


def path_of(run_id: str, attempt: int, name: str, settings: Settings | None = None) -> Path:
    """An existing file of the run's attempt, or NotFound."""
    path = attempt_dir(run_id, attempt, settings) / checked_name(name)
    if not path.is_file():
        raise NotFound(f"run {run_id} attempt {attempt} has no file {name!r} (yet)")
    return path


async def store(
    run_id: str, attempt: int, name: str, chunks: AsyncIterator[bytes], limit: int
) -> int:
    """Write an uploaded file atomically (a temporary file renamed in place); its size."""
    directory = attempt_dir(run_id, attempt)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / checked_name(name)
    size = 0
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as handle:
            async for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise ValidationFailed.field("body", f"file larger than {limit} bytes")
                handle.write(chunk)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return size
