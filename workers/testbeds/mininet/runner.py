"""Start a run's sandbox and follow it: events on a reader thread, cancellation and the deadline
checked on the caller's thread, and the child always reaped.

The sandbox is `unshare --net --pid --mount --fork --kill-child=SIGKILL` with PDEATHSIG=SIGKILL on
the unshare process: if this worker dies, unshare dies, its child (PID 1 of the sandbox) gets
SIGKILL, and the PID and network namespaces take every process, veth and qdisc with them.
Stopping a sandbox on purpose is the same: SIGKILL the unshare process."""

from __future__ import annotations

import contextlib
import ctypes
import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from workers import bpf
from workers.bpf_trace import TRACE_FILE, TraceRecorder
from workers.testbeds.mininet.plan import Plan

SANDBOX_SCRIPT = Path(__file__).with_name("sandbox.py")
PR_SET_PDEATHSIG = 1

Status = Literal["done", "error", "cancelled", "timeout"]


@dataclass
class SandboxResult:
    status: Status
    message: str | None
    returncode: int | None
    duration_s: float

    def describe(self) -> str:
        if self.status == "timeout":
            return f"the run exceeded its time limit ({self.duration_s:.0f} s) and was stopped"
        if self.status == "cancelled":
            return "cancelled"
        return self.message or f"the sandbox exited with code {self.returncode}"


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


def run_sandbox(
    plan: Plan,
    on_event: Callable[[dict[str, Any]], None],
    should_cancel: Callable[[], bool],
    deadline_s: float,
    poll_s: float = 0.2,
    sandbox_python: str = "/usr/bin/python3",
) -> SandboxResult:
    """Register the run's BPF controllers (global, not namespaced), run the sandbox, and
    unregister them whatever happened."""
    if not plan.controllers:
        return _run_sandbox(plan, on_event, should_cancel, deadline_s, poll_s, sandbox_python)
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        with bpf.loaded(plan.controllers, run_dir):
            recorder = TraceRecorder(run_dir / TRACE_FILE)
            for controller in plan.controllers:
                recorder.add(controller.name, run_dir / f"{controller.name}.bpf.o")
            recorder.start()
            try:
                result = _run_sandbox(
                    plan, on_event, should_cancel, deadline_s, poll_s, sandbox_python
                )
            finally:
                trace = recorder.stop()
    except bpf.BpfError as exc:
        return SandboxResult("error", f"BPF congestion controllers: {exc}", None, 0.0)
    # The sandbox wrote the provenance; the state trace is the worker's part of it.
    provenance = run_dir / "provenance.json"
    if provenance.exists():
        data = json.loads(provenance.read_text())
        data["bpf_trace"] = trace
        provenance.write_text(json.dumps(data, indent=2))
    return result


def _run_sandbox(
    plan: Plan,
    on_event: Callable[[dict[str, Any]], None],
    should_cancel: Callable[[], bool],
    deadline_s: float,
    poll_s: float,
    sandbox_python: str,
) -> SandboxResult:
    run_dir = Path(plan.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_path = run_dir / "plan.json"
    plan.write(plan_path)
    started = time.monotonic()
    stderr_path = run_dir / "sandbox.stderr"
    with stderr_path.open("w") as stderr:
        try:
            proc = subprocess.Popen(
                sandbox_command(plan_path, sandbox_python),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                errors="replace",
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            return SandboxResult("error", f"cannot start the sandbox: {exc}", None, 0.0)
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
        return SandboxResult(stopped, None, proc.returncode, duration)
    if final is not None and final["event"] == "done" and proc.returncode == 0:
        return SandboxResult("done", None, 0, duration)
    message = final.get("message") if final else None
    if not message:
        tail = stderr_path.read_text(errors="replace").strip()[-2000:]
        message = f"the sandbox exited with code {proc.returncode}" + (f": {tail}" if tail else "")
    return SandboxResult("error", str(message), proc.returncode, duration)


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
