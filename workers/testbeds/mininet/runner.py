"""The local testbed: a run's sandbox, started and followed. Events come on a reader thread,
cancellation and the deadline are checked on the caller's thread, and the child is always
reaped.

The sandbox is `unshare --net --pid --mount --fork --kill-child=SIGKILL` with PDEATHSIG=SIGKILL on
the unshare process: if this worker dies, unshare dies, its child (PID 1 of the sandbox) gets
SIGKILL, and the PID and network namespaces take every process, veth and qdisc with them.
Stopping a sandbox on purpose is the same: SIGKILL the unshare process."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ccbench import rundir
from workers import bpf
from workers.bpf_trace import TraceRecorder
from workers.plan import Plan
from workers.testbeds.base import CancelCheck, EventSink, Status, TestbedResult

SANDBOX_SCRIPT = Path(__file__).with_name("sandbox.py")
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def sandbox_command(plan_path: Path, sandbox_python: str) -> list[str]:
    return [
        "unshare",
        "--net",
        "--pid",
        "--mount",
        "--fork",
        "--kill-child=SIGKILL",
        "--mount-proc",
        sandbox_python,
        str(SANDBOX_SCRIPT),
        str(plan_path),
    ]


def sandbox_environment() -> dict[str, str]:
    """The worker's environment, with setuptools' distutils shim turned off: Mininet imports
    `distutils.version`, which the shim (a .pth file of Debian's python3-setuptools) serves by
    importing setuptools and pkg_resources, 0.15-0.4 s of every run's set-up; the standard
    library's distutils (Python 3.11) is a 5 ms import."""
    return {**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}


class MininetTestbed:
    """The `mininet` testbed (workers.testbeds.base.Testbed): the plan's network emulated in a
    sandbox of its own on this host, with the run's BPF controllers registered around it."""

    def __init__(
        self,
        sandbox_python: str = "/usr/bin/python3",
        poll_s: float = 0.2,
        active_runs: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.sandbox_python = sandbox_python
        self.poll_s = poll_s
        # The attempts still active in the database (bpf.attempt_key): this installation's BPF
        # controllers of any other attempt were left by a killed worker and are removed before
        # this run registers its own.
        self.active_runs = active_runs

    def run(
        self, plan: Plan, events: EventSink, cancel: CancelCheck, deadline_s: float
    ) -> TestbedResult:
        """Register the run's BPF controllers (global, not namespaced), run the sandbox, and
        unregister them whatever happened."""
        if not plan.controllers:
            return self._sandbox(plan, events, cancel, deadline_s)
        run_dir = Path(plan.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            if self.active_runs is not None:
                bpf.sweep(self.active_runs)  # what killed workers left (it logs what it removes)
            with bpf.loaded(plan.controllers, run_dir) as loaded:
                recorder = TraceRecorder(run_dir / rundir.BPF_TRACE)
                for controller in plan.controllers:
                    recorder.add(controller.name, run_dir / rundir.bpf_object(controller.name))
                recorder.start()
                try:
                    result = self._sandbox(plan, events, cancel, deadline_s)
                finally:
                    trace = recorder.stop()
        except bpf.BpfError as exc:
            return TestbedResult("error", f"BPF congestion controllers: {exc}", None, 0.0)
        # The sandbox wrote the provenance; the state trace and how each controller's removal
        # went (removed, or pending while sockets still hold it) are the worker's part of it.
        provenance = run_dir / rundir.PROVENANCE
        if provenance.exists():
            data = json.loads(provenance.read_text())
            data["bpf_trace"] = trace
            data["bpf_teardown"] = loaded.teardown
            provenance.write_text(json.dumps(data, indent=2))
        return result

    def _sandbox(
        self, plan: Plan, events: EventSink, cancel: CancelCheck, deadline_s: float
    ) -> TestbedResult:
        return _run_sandbox(plan, events, cancel, deadline_s, self.poll_s, self.sandbox_python)


def _run_sandbox(
    plan: Plan,
    on_event: EventSink,
    should_cancel: CancelCheck,
    deadline_s: float,
    poll_s: float,
    sandbox_python: str,
) -> TestbedResult:
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / rundir.PLAN
    plan.write(plan_path)
    started = time.monotonic()
    stderr_path = run_dir / rundir.SANDBOX_STDERR
    with stderr_path.open("w") as stderr:
        try:
            proc = subprocess.Popen(
                sandbox_command(plan_path, sandbox_python),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                errors="replace",
                preexec_fn=_die_with_parent,
                env=sandbox_environment(),
            )
        except OSError as exc:
            return TestbedResult("error", f"cannot start the sandbox: {exc}", None, 0.0)
        events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        reader = threading.Thread(target=_read_events, args=(proc, events), daemon=True)
        reader.start()
        final: dict[str, Any] | None = None
        stopped: Status | None = None
        eof = False
        try:
            while True:
                if not eof:
                    try:
                        event = events.get(timeout=poll_s)
                    except queue.Empty:
                        pass
                    else:
                        if event is None:  # the reader's end-of-stream mark, after every event
                            eof = True
                        else:
                            if event.get("event") in ("done", "error"):
                                final = event
                            on_event(event)
                        continue
                else:
                    # Stdout is closed, the sandbox is exiting: wait for it, not for a poll tick.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=poll_s)
                    if proc.returncode is not None:
                        break
                if should_cancel():
                    stopped = "cancelled"
                elif time.monotonic() - started > deadline_s:
                    stopped = "timeout"
                if stopped:
                    proc.kill()
                    break
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            reader.join(timeout=5)
    duration = time.monotonic() - started
    if stopped is not None:
        return TestbedResult(stopped, None, proc.returncode, duration)
    if final is not None and final["event"] == "done" and proc.returncode == 0:
        return TestbedResult("done", None, 0, duration)
    message = final.get("message") if final else None
    if not message:
        tail = stderr_path.read_text(errors="replace").strip()[-2000:]
        message = f"the sandbox exited with code {proc.returncode}" + (f": {tail}" if tail else "")
    return TestbedResult("error", str(message), proc.returncode, duration)


def _read_events(proc: subprocess.Popen[str], events: queue.Queue[dict[str, Any] | None]) -> None:
    """Put each JSON event the sandbox prints, then None (always, even if reading fails)."""
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            line = line.strip()
            if not line:
                continue
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.put(event)
    finally:
        events.put(None)
