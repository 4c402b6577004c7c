"""Start throwaway PostgreSQL and Redis servers on loopback for tests and benchmarks.

Both listen on free 127.0.0.1 ports and keep their data in a temporary directory that is
removed when they stop. PostgreSQL refuses to run as root, so it runs as the `postgres` user
that Debian's package creates."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s} s")


@dataclass
class Services:
    root: Path
    # Where they listen besides 127.0.0.1 (e.g. a bridge that namespace "machines" reach).
    host: str = "127.0.0.1"
    pg_port: int = 0
    redis_port: int = 0
    # Redis refuses clients beyond loopback without a password (protected mode).
    redis_password: str = field(default_factory=lambda: secrets.token_hex(16))
    _redis: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def database_url(self) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.pg_port}/ccbench"

    @property
    def redis_url(self) -> str:
        if self.host == "127.0.0.1":
            return f"redis://{self.host}:{self.redis_port}/0"
        return f"redis://:{self.redis_password}@{self.host}:{self.redis_port}/0"

    def start(self) -> Services:
        self._start_postgres()
        self._start_redis()
        return self

    def _as_postgres(self, *cmd: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *cmd],
            check=True,
            capture_output=True,
            cwd="/",
        )

    def _start_postgres(self) -> None:
        data = self.root / "pg"
        data.mkdir(parents=True)
        shutil.chown(self.root, "postgres")
        shutil.chown(data, "postgres")
        self.pg_port = free_port()
        self._as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        if self.host != "127.0.0.1":
            with (data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all all {self.host}/24 trust\n")
        listen = ",".join(dict.fromkeys(["127.0.0.1", self.host]))
        self._as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(data / "server.log"),
            "-w",
            "-o",
            f"-p {self.pg_port} -k {data} -c listen_addresses={listen} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off",
            "start",
        )
        self._as_postgres(
            str(PG_BIN / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.pg_port),
            "-U",
            "postgres",
            "-c",
            "CREATE DATABASE ccbench",
        )

    def _start_redis(self) -> None:
        self.redis_port = free_port()
        self._redis = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                *dict.fromkeys(["127.0.0.1", self.host]),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.root),
                *(["--requirepass", self.redis_password] if self.host != "127.0.0.1" else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_port(self.redis_port, 10, "redis-server")

    def stop(self) -> None:
        if self._redis is not None:
            self._redis.terminate()
            self._redis.wait(timeout=10)
        data = self.root / "pg"
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [
                    "runuser",
                    "-u",
                    "postgres",
                    "--",
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                capture_output=True,
                cwd="/",
            )
        shutil.rmtree(self.root, ignore_errors=True)


def start_services(host: str = "127.0.0.1") -> Services:
    root = Path(tempfile.mkdtemp(prefix="ccbench-services-"))
    os.chmod(root, 0o755)
    return Services(root, host).start()


def cancel_leftover_runs() -> int:
    """Cancel the queued runs earlier tests left in the harness's database (they submitted
    runs without a worker): a worker started by a test must only run the runs that test
    submits, and the dispatcher would hand it every queued run."""
    from sqlalchemy import update

    from ccbench.db.models import Run
    from ccbench.db.session import session_scope

    with session_scope() as session:
        done = session.execute(
            update(Run).where(Run.status == "queued")
            .values(status="cancelled", error="cancelled by the test harness: an earlier test's")
            .execution_options(synchronize_session=False)
        )  # fmt: skip
        return int(getattr(done, "rowcount", 0) or 0)


def run_cli(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`ccbench ARGS` as a user runs it, from the repository, with the given environment."""
    import sys

    from ccbench.settings import REPO_ROOT

    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def chaos_report(**figures: Any) -> None:
    """A line of figures for `make bench-chaos`, which runs the chaos tests with
    CCBENCH_CHAOS_REPORT naming a JSON-lines file; nothing otherwise."""
    if path := os.environ.get("CCBENCH_CHAOS_REPORT"):
        with open(path, "a") as handle:
            handle.write(json.dumps(figures) + "\n")
