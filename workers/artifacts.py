"""Uploading a run's files to the API when the worker runs on another machine (CCBENCH_API_URL
and CCBENCH_WORKER_TOKEN set): the log while the run lasts, every file when it ends
(ccbench.artifacts keeps them on the API's side)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import httpx
import tenacity

from ccbench import rundir
from ccbench.settings import Settings

log = logging.getLogger(__name__)


UPLOAD_CHUNK_BYTES = 1 << 20


def _prefix(handle: BinaryIO, size: int) -> Iterator[bytes]:
    """The first `size` bytes of an open file, a chunk at a time."""
    left = size
    while left > 0:
        chunk = handle.read(min(UPLOAD_CHUNK_BYTES, left))
        if not chunk:
            raise OSError(f"{handle.name} shrank while it was uploaded")
        left -= len(chunk)
        yield chunk


class Uploader:
    """Files of one run attempt to the API. Without an API URL it does nothing: the API reads
    the worker's own run directory (one machine)."""

    def __init__(self, settings: Settings, run_id: str, attempt: int, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.enabled = bool(settings.api_url and settings.worker_token)
        self.base = f"{settings.api_url.rstrip('/')}/v1/internal/runs/{run_id}/attempts/{attempt}"
        self.headers = {"Authorization": f"Bearer {settings.worker_token}"}
        self.last_logs = 0.0

    def logs(self, every_s: float = 5.0) -> None:
        """The run's log, at most every `every_s` (called between the testbed's events)."""
        if not self.enabled or time.monotonic() - self.last_logs < every_s:
            return
        self.last_logs = time.monotonic()
        for name in rundir.LOGS:
            if (self.run_dir / name).is_file():
                self._put(name, retries=1)

    def everything(self) -> list[str]:
        """Every file of the run directory (its ssh keys are never kept); the names that
        could not be uploaded."""
        if not self.enabled:
            return []
        failed = []
        for path in sorted(p for p in self.run_dir.iterdir() if p.is_file()):
            if not self._put(path.name, retries=5):
                failed.append(path.name)
        return failed

    def _put(self, name: str, retries: int) -> bool:
        def send() -> None:
            with (self.run_dir / name).open("rb") as handle:
                # The file as long as it is now: a log still being written grows while it is
                # sent, and more bytes than the declared length break the request.
                size = os.fstat(handle.fileno()).st_size
                response = httpx.put(f"{self.base}/files/{name}", content=_prefix(handle, size),
                                     headers={**self.headers, "Content-Length": str(size)},
                                     timeout=120)  # fmt: skip
            response.raise_for_status()

        try:
            tenacity.Retrying(
                stop=tenacity.stop_after_attempt(retries),
                wait=tenacity.wait_exponential(multiplier=0.5, max=10),
                reraise=True,
            )(send)
        except (httpx.HTTPError, OSError) as exc:
            log.warning("upload of %s to the API failed: %s", name, exc)
            return False
        return True
