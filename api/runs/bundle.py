"""A run's bundle: one gzip-compressed tar with everything needed to check or redo the run,
streamed as it is written (a packet log of hundreds of MB is never held in memory):

    ccbench-run-<id>/run.json         the run: ids, experiment, status, axes, seed, timings,
                                      aggregate and per-flow metrics, checks, error
    ccbench-run-<id>/spec.json        the run's spec as stored (SI units)
    ccbench-run-<id>/submission.json  the experiment's submission with its units and seed:
                                      `ccbench submit submission.json` runs it all again
    ccbench-run-<id>/provenance.json  what the worker and testbed recorded (versions, kernel,
                                      every command applied)
    ccbench-run-<id>/series/<name>.json  each stored time series, columnar
    ccbench-run-<id>/files/<name>     the raw files of its latest attempt: logs, the agents'
                                      outputs, the emulator's packet logs and counters
    ccbench-run-<id>/SHA256SUMS       `sha256sum -c SHA256SUMS` checks every file above
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNK = 1 << 20
_GZIP = 31  # zlib's wbits for a gzip container


@dataclass(frozen=True)
class Member:
    """A file of the bundle: its bytes, or a file on disk streamed in chunks."""

    name: str
    data: bytes | None = None
    path: Path | None = None


def json_member(name: str, value: Any) -> Member:
    return Member(name, data=json.dumps(value, indent=2, sort_keys=True, default=str).encode())


class _Gzip:
    def __init__(self) -> None:
        self._zip = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
        self.written = 0  # uncompressed bytes, for the tar's record padding

    def __call__(self, data: bytes) -> bytes:
        self.written += len(data)
        return self._zip.compress(data)

    def finish(self) -> bytes:
        return self._zip.flush()


def _header(name: str, size: int, mtime: float) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")


def _padding(size: int) -> bytes:
    return b"\0" * (-size % tarfile.BLOCKSIZE)


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    """Exactly `size` bytes of the file (what its header announced), zero-filled if the file
    shrank since: a tar member's length cannot change once its header is out."""
    left = size
    with path.open("rb") as handle:
        while left:
            chunk = handle.read(min(CHUNK, left)) or b"\0" * min(CHUNK, left)
            left -= len(chunk)
            yield chunk


def stream(root: str, members: list[Member]) -> Iterator[bytes]:
    """The gzip-compressed tar of `members` under `root/`, with `root/SHA256SUMS` last."""
    gzip = _Gzip()
    sums: list[str] = []
    now = time.time()
    for member in members:
        digest = hashlib.sha256()
        if member.data is not None:
            size, mtime = len(member.data), now
            chunks: Iterator[bytes] = iter([member.data])
        else:
            assert member.path is not None
            stat = member.path.stat()
            size, mtime = stat.st_size, stat.st_mtime
            chunks = _file_chunks(member.path, size)
        yield gzip(_header(f"{root}/{member.name}", size, mtime))
        for chunk in chunks:
            digest.update(chunk)
            yield gzip(chunk)
        yield gzip(_padding(size))
        sums.append(f"{digest.hexdigest()}  {member.name}\n")
    listing = "".join(sums).encode()
    yield gzip(_header(f"{root}/SHA256SUMS", len(listing), now) + listing + _padding(len(listing)))
    end = b"\0" * (2 * tarfile.BLOCKSIZE)
    end += b"\0" * (-(gzip.written + len(end)) % tarfile.RECORDSIZE)
    yield gzip(end)
    yield gzip.finish()
