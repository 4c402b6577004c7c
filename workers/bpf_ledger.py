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
files are owner-only (0600) in the state directory.

A child forked while another thread of its parent is opening or closing the lock file would
otherwise keep a copy of a descriptor the ledger has not recorded yet, and with it the flock,
for as long as it lives: a worker's pool process, forked while the upkeep thread's orphan sweep
was taking the lock, held it until it was killed (90 s and more; two CI runs' kill tests,
2026-12-07). So the descriptor is recorded in the same step as it is opened, and a fork waits
for that step (`_FD_GUARD`, taken around every fork); the child closes what is recorded.

Waiting for the lock is bounded (`LOCK_WAIT_S`): every section holding it is a few bpftool
calls (each bounded at 30 s by workers/bpf_host.py) and a file write, so a longer wait means a
stuck holder, and a run must fail with who that is rather than hang until its time limit. The
holder writes its pid, thread and start time into the lock file for that (flock is advisory,
the content is only ever read to explain a wait)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from ccbench.settings import get_settings

FILE_NAME = "bpf-controllers.json"
LOCK_NAME = "bpf-controllers.lock"
LOCK_WAIT_S = 90.0  # above three bpftool timeouts: a longer wait is a stuck holder
LOCK_WARN_S = 5.0  # a wait this long is logged with the holder, once
LOCK_POLL_S = 0.02

log = logging.getLogger(__name__)

Entries = dict[str, dict[str, Any]]  # controller name -> what is known about it


class LedgerError(RuntimeError):
    pass


class Ledger:
    """A JSON object in `path`, changed under an exclusive flock on `lock_name` beside it (also
    the run-packing ledger's mechanism, workers/packing.py)."""

    def __init__(self, path: Path, wait_s: float = LOCK_WAIT_S, lock_name: str = LOCK_NAME) -> None:
        self.path = path
        self.wait_s = wait_s
        self.lock_path = path.with_name(lock_name)
        self._mutex = threading.RLock()
        self._fd: int | None = None
        self._depth = 0
        self._entries: Entries = {}
        self._on_disk = "{}"  # the entries as the file holds them (compared, not re-read)
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
                try:
                    yield self._entries
                finally:  # what was done before a failure is recorded too
                    if self._serialized() != self._on_disk:
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
        with _FD_GUARD:  # recorded before any fork can copy it (the module's docstring)
            fd = self._fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            self._acquire(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, self._holder_record().encode(), 0)
            self._entries = self._read()
            self._on_disk = self._serialized()
        except BaseException:
            self._close()
            raise

    def _acquire(self, fd: int) -> None:
        """flock with a bounded wait (a polling loop: flock itself has no timeout, and a
        SIGALRM-interrupted wait works only in the main thread)."""
        started = time.monotonic()
        warned = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= self.wait_s:
                    raise LedgerError(
                        f"{self.lock_path} has been held by another process for over "
                        f"{self.wait_s:.0f} s ({self.holder()}): giving up"
                    ) from None
                if not warned and waited >= LOCK_WARN_S:
                    warned = True
                    log.warning("waiting %.0f s for %s, held by %s",
                                waited, self.lock_path, self.holder())  # fmt: skip
                time.sleep(LOCK_POLL_S)
        if warned:
            log.warning("got %s after %.1f s", self.lock_path, time.monotonic() - started)

    @staticmethod
    def _holder_record() -> str:
        return json.dumps({"pid": os.getpid(), "thread": threading.current_thread().name,
                           "since": time.time()})  # fmt: skip

    def holder(self) -> str:
        """Who holds the lock, as its last acquirer wrote it (for error messages)."""
        try:
            record = json.loads(self.lock_path.read_text() or "{}")
            pid = int(record["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return f"pid {pid}, gone; the lock file is open in pids {self._openers()}"
        held = time.time() - float(record.get("since", time.time()))
        return (f"pid {pid} thread {record.get('thread')!r} for {held:.0f} s, state {state}: "
                f"{command.strip()[:200]}; open in pids {self._openers()}")  # fmt: skip

    def _openers(self) -> list[int]:
        """Every other process with the lock file open: one of them holds the flock."""
        try:
            inode = self.lock_path.stat().st_ino
        except OSError:
            return []
        found = []
        for fd_dir in Path("/proc").glob("[0-9]*/fd"):
            pid = int(fd_dir.parent.name)
            if pid == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if any(fd.stat().st_ino == inode for fd in fd_dir.iterdir()):
                    found.append(pid)
        return sorted(found)

    def _unlock(self) -> None:
        self._entries = {}
        self._close()  # releases the flock

    def _close(self) -> None:
        with _FD_GUARD:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

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

    def _serialized(self) -> str:
        return json.dumps(self._entries, sort_keys=True)

    def _write(self) -> None:
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(self._entries, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
        self._on_disk = self._serialized()

    def _forget_after_fork(self) -> None:
        """In a forked child: the parent's lock (and whatever thread held it) is not ours."""
        self._mutex = threading.RLock()
        if self._fd is not None:
            os.close(self._fd)  # the parent's descriptor keeps its flock
        self._fd, self._depth, self._entries = None, 0, {}


_LIVE: weakref.WeakSet[Ledger] = weakref.WeakSet()
# Held while a ledger opens or closes its lock file, and around every fork: a child never
# holds a descriptor its ledger has not recorded.
_FD_GUARD = threading.Lock()


def _after_fork_in_child() -> None:
    _FD_GUARD.release()
    for ledger in list(_LIVE):
        ledger._forget_after_fork()


os.register_at_fork(
    before=_FD_GUARD.acquire, after_in_parent=_FD_GUARD.release, after_in_child=_after_fork_in_child
)


@lru_cache
def ledger_at(path: Path) -> Ledger:
    """The process's one Ledger for `path` (one lock owner per file and process)."""
    return Ledger(path)


def default_ledger() -> Ledger:
    """This installation's ledger, in the worker's state directory."""
    return ledger_at(get_settings().state_dir / FILE_NAME)
