"""The BPF ledger's lock (also the packing ledger's): a stuck holder makes a waiter fail, naming
the holder, instead of hanging until the run's time limit; a child forked while the lock is
being taken does not keep it (no root or bpftool needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workers.bpf_ledger import Ledger, LedgerError

HOLD = """
import sys, time
from pathlib import Path
from workers.bpf_ledger import Ledger
ledger = Ledger(Path(sys.argv[1]))
with ledger.open():
    with ledger.open() as entries:  # a nested block's changes are on disk when it ends
        entries["cb0000000_reno"] = {"pid": 1}
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_stuck_holder_is_named_and_the_wait_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "bpf-controllers.json"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        with pytest.raises(LedgerError) as raised, Ledger(path, wait_s=1.0).open():
            pass
        assert time.monotonic() - started < 10
        message = str(raised.value)
        assert f"pid {holder.pid} thread 'MainThread'" in message
        assert f"open in pids [{holder.pid}]" in message
    finally:
        holder.kill()
        holder.wait()
    # Once the holder is gone the ledger is usable, with what it wrote before it was killed.
    with Ledger(path, wait_s=1.0).open() as entries:
        assert entries == {"cb0000000_reno": {"pid": 1}}


def test_the_lock_is_reentrant_in_a_process_and_released_after(tmp_path: Path) -> None:
    path = tmp_path / "bpf-controllers.json"
    ledger = Ledger(path, wait_s=1.0)
    with ledger.open() as outer:
        with ledger.open() as inner:
            inner["cb0000001_bfa"] = {"pid": 2}
        assert "cb0000001_bfa" in path.read_text()  # written when the inner block ended
        outer.pop("cb0000001_bfa")
    other = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from workers.bpf_ledger import Ledger\n"
         "with Ledger(Path(sys.argv[1]), wait_s=1.0).open() as e: print(sorted(e))", str(path)],
        capture_output=True, text=True, check=True)  # fmt: skip
    assert other.stdout.strip() == "[]"


class LedgerForkedWhileLocking(Ledger):
    """Forks a child while it takes the lock, as Celery forks a pool process while another
    thread (the upkeep thread's orphan sweep) is taking it; the child lives on."""

    child = 0

    def _holder_record(self) -> str:
        if not self.child:
            pid = os.fork()
            if pid == 0:  # the pool process: busy with other things, it never touches the ledger
                time.sleep(30)
                os._exit(0)
            self.child = pid
        return Ledger._holder_record()


def test_a_child_forked_while_the_lock_is_taken_does_not_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "bpf-controllers.json"
    ledger = LedgerForkedWhileLocking(path, wait_s=1.0)
    try:
        with ledger.open() as entries:
            entries["cb0000002_reno"] = {"pid": 3}
        assert ledger.child
        # Released by the parent: another process takes it at once, the child still alive.
        other = subprocess.run(
            [sys.executable, "-c",
             "import sys; from pathlib import Path; from workers.bpf_ledger import Ledger\n"
             "with Ledger(Path(sys.argv[1]), wait_s=1.0).open() as e: print(sorted(e))",
             str(path)],
            capture_output=True, text=True)  # fmt: skip
        assert other.returncode == 0, other.stderr[-600:]
        assert other.stdout.strip() == "['cb0000002_reno']"
    finally:
        if ledger.child:
            os.kill(ledger.child, signal.SIGKILL)
            os.waitpid(ledger.child, 0)
