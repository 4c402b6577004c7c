"""ccbench's processes as a deployment runs them, for tests that kill and restart them: a
Celery worker (`ccbench worker`) and an API server (`ccbench api`), each in a session of its
own, logging to a file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ccbench.settings import REPO_ROOT

CCBENCH = [sys.executable, "-m", "cli"]


class Worker:
    """A worker process with an id of its own; `env` None: this process's environment (the
    harness's database and broker), whose leftover queued runs are cancelled first."""

    def __init__(
        self,
        log_path: Path,
        env: dict[str, str] | None = None,
        netns: str | None = None,
        worker_id: str | None = None,
        concurrency: int = 1,
    ) -> None:
        """`netns`: run it in that network namespace (a separate "machine"). `concurrency`:
        runs at once (packing, workers/packing.py); one unless a test is about packing."""
        from cli.stack import worker_command
        from tests.services import cancel_leftover_runs

        if env is None:
            cancel_leftover_runs()
        self.id = worker_id or f"test-{os.getpid()}-{time.monotonic_ns()}"
        self.log_path = log_path
        self.log = log_path.open("ab")
        inside = ["ip", "netns", "exec", netns] if netns else []
        self.proc = subprocess.Popen(
            [*inside, *worker_command(self.id)],
            cwd=REPO_ROOT,
            env={
                **(env or os.environ),
                "CCBENCH_WORKER_ID": self.id,
                "CCBENCH_WORKER_CONCURRENCY": str(concurrency),
            },  # fmt: skip
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while " ready." not in log_path.read_text(errors="replace"):
            assert self.proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "worker not ready in 60 s"
            time.sleep(0.2)

    def kill_hard(self) -> None:
        """SIGKILL the whole worker (main process and its pool child), as an OOM killer would."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def kill_pool_process(self) -> None:
        """SIGKILL the worker's pool process (the one running its task); Celery's main process
        stays and forks a new one."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        assert len(children) == 1, f"worker {self.id}: pool processes {children}"
        os.kill(int(children[0]), signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill_hard()
        self.log.close()


class Api:
    """An API server on 127.0.0.1:`port`, started and ready (GET /healthz answers)."""

    def __init__(
        self, port: int, env: dict[str, str], log_path: Path, host: str = "127.0.0.1"
    ) -> None:
        self.url = f"http://{host}:{port}"
        self.log = log_path.open("ab")
        self.proc = subprocess.Popen(
            [*CCBENCH, "api", "--host", host, "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            assert time.monotonic() < deadline, "API not ready in 30 s"
            time.sleep(0.05)

    def kill_hard(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()
