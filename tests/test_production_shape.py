"""The production shape, started exactly as the README documents: PostgreSQL and Redis (here
the harness's), `ccbench db upgrade`, `ccbench admin create-team/create-token`, `ccbench api`
and `ccbench worker` as separate processes, then `ccbench submit --wait` from a client that only
knows the API URL and its token."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ccbench.settings import REPO_ROOT
from tests.hoststate import HostState
from tests.services import cancel_leftover_runs, free_port, run_cli

CCBENCH = [sys.executable, "-m", "cli"]

pytestmark = [pytest.mark.root, pytest.mark.services]


def test_api_worker_postgres_redis_as_separate_processes(tmp_path: Path, unique: str) -> None:
    before = HostState.capture()
    server_env = dict(os.environ, CCBENCH_STATE_DIR=str(tmp_path / "server"))
    assert server_env["CCBENCH_DATABASE_URL"].startswith("postgresql")
    assert server_env["CCBENCH_BROKER_URL"].startswith("redis://")

    def cli(*args: str, env: dict[str, str] = server_env, timeout: float = 60) -> str:
        done = run_cli(env, *args, timeout=timeout)
        assert done.returncode == 0, f"ccbench {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    assert "database at head" in cli("db", "upgrade")
    cli("admin", "create-team", f"prod-{unique}")
    token = cli("admin", "create-token", "--team", f"prod-{unique}").strip()
    cancel_leftover_runs()
    port = free_port()
    logs = {name: (tmp_path / f"{name}.log").open("w") for name in ("api", "worker")}
    processes = [
        subprocess.Popen(
            [*CCBENCH, "api", "--port", str(port)],
            cwd=REPO_ROOT,
            env=server_env,
            stdout=logs["api"],
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ),
        subprocess.Popen(
            [*CCBENCH, "worker"],
            cwd=REPO_ROOT,
            env={**server_env, "CCBENCH_WORKER_ID": f"prod-{unique}"},
            stdout=logs["worker"],
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ),
    ]
    try:
        deadline = time.monotonic() + 60
        while " ready." not in (tmp_path / "worker.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.2)
        # The client side knows nothing but the URL and the token.
        client_env = {k: v for k, v in os.environ.items() if not k.startswith("CCBENCH_")}
        client_env.update(
            CCBENCH_API_URL=f"http://127.0.0.1:{port}",
            CCBENCH_TOKEN=token,
            CCBENCH_STATE_DIR=str(tmp_path / "client"),
        )
        spec = copy.deepcopy(
            yaml.safe_load((REPO_ROOT / "schemas/examples/dumbbell-reno-vs-cubic.yaml").read_text())
        )
        spec["duration"] = "5s"
        spec_file = tmp_path / "spec.yaml"
        spec_file.write_text(yaml.safe_dump(spec))
        while True:
            ping = subprocess.run(
                [*CCBENCH, "submit", str(spec_file), "--wait"],
                cwd=REPO_ROOT,
                env=client_env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if "cannot reach" not in ping.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert "[ok ] delay" in ping.stdout and "[ok ] rate" in ping.stdout, ping.stdout
        experiment_id = ping.stdout.split()[1]
        report = json.loads(cli("report", experiment_id, "--json", env=client_env))
        assert report["runs"][0]["status"] == "done"
    finally:
        for proc in processes:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in processes:
            proc.wait(30)
        for log in logs.values():
            log.close()
    assert HostState.capture().leftovers_since(before) == []
