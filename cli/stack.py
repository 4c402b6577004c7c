"""The embedded local stack: API + worker on 127.0.0.1, a SQLite database, a SQLite broker."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ccbench.jobs import worker_queue
from ccbench.settings import REPO_ROOT, Settings
from ccbench.workerpool import worker_id


@dataclass
class StackProcess:
    name: str
    pid: int
    log: Path


def api_command(settings: Settings) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "api.app:app",
        "--host",
        settings.api_host,
        "--port",
        str(settings.api_port),
        "--log-level",
        "warning",
    ]


def worker_command(worker_id: str) -> list[str]:
    """A Celery worker consuming only its own queue (the process must see CCBENCH_WORKER_ID =
    worker_id: worker_env). Its pool has settings.worker_concurrency processes (Celery's
    configuration, ccbench.jobs), whose runs share the host's CPU budget (workers/packing.py)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.celery_app",
        "worker",
        "--queues",
        worker_queue(worker_id),
        "--pool",
        "prefork",
        "--hostname",
        f"{worker_id}@%h",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]


def scheduler_command() -> list[str]:
    return [sys.executable, "-m", "scheduler"]


def probe_command(*, json_output: bool) -> list[str]:
    """What this host can run, as a worker probes it (workers/probe.py)."""
    return [sys.executable, "-m", "workers.probe", *(["--json"] if json_output else [])]


def _pids_file(settings: Settings) -> Path:
    return settings.state_dir / "stack.json"


def start(settings: Settings) -> list[StackProcess]:
    logs = settings.state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CCBENCH_STATE_DIR=str(settings.state_dir))
    worker = worker_id(settings)
    env["CCBENCH_WORKER_ID"] = worker
    started = []
    for name, command in (("api", api_command(settings)), ("worker", worker_command(worker))):
        log_path = logs / f"{name}.log"
        with log_path.open("ab") as log_file:
            proc = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(StackProcess(name, proc.pid, log_path))
    _pids_file(settings).write_text(
        json.dumps([{"name": p.name, "pid": p.pid, "log": str(p.log)} for p in started])
    )
    return started


def wait_ready(settings: Settings, processes: list[StackProcess], timeout_s: float = 60.0) -> None:
    """Until the API answers /healthz and the worker logged that it is ready."""
    deadline = time.monotonic() + timeout_s
    url = f"http://{settings.api_host}:{settings.api_port}/healthz"
    api_ok = worker_ok = False
    while time.monotonic() < deadline:
        for p in processes:
            if not _alive(p.pid):
                tail = p.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the {p.name} process exited at start-up; its log:\n{tail}")
        if not api_ok:
            with contextlib.suppress(httpx.TransportError):
                api_ok = httpx.get(url, timeout=1.0).status_code == 200
        if not worker_ok:
            worker_log = next(p.log for p in processes if p.name == "worker")
            worker_ok = " ready." in worker_log.read_text(errors="replace")
        if api_ok and worker_ok:
            return
        time.sleep(0.2)
    raise TimeoutError(
        f"the embedded stack was not ready within {timeout_s:.0f} s "
        f"(api ready: {api_ok}, worker ready: {worker_ok}); logs in "
        f"{settings.state_dir / 'logs'}"
    )


def stop(settings: Settings, timeout_s: float = 20.0) -> list[str]:
    """Stop a detached stack: SIGTERM (the worker finishes cleanly), SIGKILL after timeout."""
    path = _pids_file(settings)
    if not path.exists():
        return []
    entries = json.loads(path.read_text())
    for entry in entries:
        _signal_group(entry["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_alive(e["pid"]) for e in entries):
        time.sleep(0.2)
    for entry in entries:
        _signal_group(entry["pid"], signal.SIGKILL)
    path.unlink()
    return [e["name"] for e in entries]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _alive(pid: int) -> bool:
    try:
        waited, _status = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
