"""The installation's ledger of its BPF controllers: `<state_dir>/bpf-controllers.json`, one
entry per controller this installation has registered (or is registering) and not yet seen
gone from the kernel. workers/bpf.py writes an entry before `bpftool struct_ops register` and
drops it once the kernel no longer lists the controller; the orphan sweep only ever removes
controllers named here (why a ledger: workers/bpf.py).

Every process of the installation on this host (a worker's main and pool processes, several
workers, the CLI's probe) changes the ledger under an exclusive `fcntl.flock` on
`bpf-controllers.lock` beside it, reads it, and replaces it atomically (write a temporary file,
rename). The lock is re-entrant within a process (a sweep or a probe holds it around its own
registrations) and is dropped in a forked child, which must not act on its parent's lock. Both
files are owner-only (0600) in the state directory."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import weakref
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from ccbench.settings import get_settings

FILE_NAME = "bpf-controllers.json"
LOCK_NAME = "bpf-controllers.lock"

Entries = dict[str, dict[str, Any]]  # controller name -> what is known about it


class LedgerError(RuntimeError):
    pass


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(LOCK_NAME)
        self._mutex = threading.RLock()
        self._fd: int | None = None
        self._depth = 0
        self._entries: Entries = {}
        _LIVE.add(self)

    @contextlib.contextmanager
    def open(self) -> Iterator[Entries]:
        """Lock the ledger and yield its entries; what the block changes is written back when it
        ends, however it ends (a nested block's changes too: an entry is on disk before the
        code after the block runs)."""
        with self._mutex:
            outermost = self._depth == 0
            if outermost:
                self._lock()
            self._depth += 1
            try:
                before = json.dumps(self._entries, sort_keys=True)
                try:
                    yield self._entries
                finally:  # what was done before a failure is recorded too
                    if json.dumps(self._entries, sort_keys=True) != before:
                        self._write()
            finally:
                self._depth -= 1
                if outermost:
                    self._unlock()

    def names(self) -> set[str]:
        with self.open() as entries:
            return set(entries)

    def _lock(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._entries = self._read()
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _unlock(self) -> None:
        fd, self._fd = self._fd, None
        self._entries = {}
        if fd is not None:
            os.close(fd)  # releases the flock

    def _read(self) -> Entries:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        try:
            entries = json.loads(text)
        except ValueError as exc:
            raise LedgerError(f"{self.path} is not JSON ({exc}): fix or remove it") from exc
        if not isinstance(entries, dict):
            raise LedgerError(f"{self.path} does not hold a JSON object: fix or remove it")
        return entries

    def _write(self) -> None:
        temporary = self.path.with_name(f".{FILE_NAME}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(self._entries, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)

    def _forget_after_fork(self) -> None:
        """In a forked child: the parent's lock (and whatever thread held it) is not ours."""
        self._mutex = threading.RLock()
        if self._fd is not None:
            os.close(self._fd)  # the parent's descriptor keeps its flock
        self._fd, self._depth, self._entries = None, 0, {}


_LIVE: weakref.WeakSet[Ledger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for ledger in list(_LIVE):
        ledger._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


@lru_cache
def ledger_at(path: Path) -> Ledger:
    """The process's one Ledger for `path` (one lock owner per file and process)."""
    return Ledger(path)


def default_ledger() -> Ledger:
    """This installation's ledger, in the worker's state directory."""
    return ledger_at(get_settings().state_dir / FILE_NAME)
