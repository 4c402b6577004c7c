"""The embedded local stack as a user runs it: `ccbench up --detach`, `submit --wait`,
`report --json`, `down` — SQLite database and SQLite broker, no server needed. Also the CLI's
messages when the API is unreachable or the token is wrong."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ccbench.settings import REPO_ROOT
from tests.hoststate import HostState
from tests.services import free_port, run_cli

CCBENCH = [sys.executable, "-m", "cli"]


def embedded_env(state_dir: Path, port: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CCBENCH_DATABASE_URL", "CCBENCH_BROKER_URL")
    }
    env.update(CCBENCH_STATE_DIR=str(state_dir), CCBENCH_API_PORT=str(port))
    return env


def ccbench(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return run_cli(env, *args, timeout=timeout)


@pytest.mark.root
def test_embedded_stack_runs_the_example(tmp_path: Path) -> None:
    before = HostState.capture()
    env = embedded_env(tmp_path / "state", free_port())
    spec = yaml.safe_load((REPO_ROOT / "schemas/examples/dumbbell-reno-vs-cubic.yaml").read_text())
    spec["duration"] = "6s"
    spec_file = tmp_path / "short.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    up = ccbench(env, "up", "--detach")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        submitted = ccbench(env, "submit", str(spec_file), "--wait", timeout=180)
        out = submitted.stdout
        assert submitted.returncode == 0, out + submitted.stderr
        experiment_id = out.split()[1]
        # Not a terminal: progress is a few plain lines on stderr (tests/test_cli.py: a pty).
        progress = submitted.stderr.splitlines()
        assert progress[0] == "[0/1] 1 queued" or progress[0].startswith("[0/1] 1 running")
        assert "[1/1] run 1/1 rep 0: done" in progress and len(progress) <= 6, progress
        assert progress[-1].startswith(f"experiment {experiment_id} done: 1 done (followed ")
        assert re.search(r"^ +0 +reno +\d+(\.\d+)? Mbit/s +\d+(\.\d+)? ms", out, re.M), out
        assert "Jain's index" in out and "[ok ] delay" in out, out
        plotted = ccbench(env, "report", experiment_id, "--plot", str(tmp_path / "figures"))
        assert plotted.returncode == 0, plotted.stderr
        drawn = sorted(p.name for p in (tmp_path / "figures").iterdir())
        figures = ["goodput", "throughput", "cwnd", "cwnd_queue", "rtt", "rtt_vs_cwnd", "queue",
                   "fairness", "rtt_cdf", "queue_delay_cdf", "goodput_cdf"]  # fmt: skip
        assert drawn == sorted(f"rep1_{n}.{f}" for n in figures for f in ("png", "svg", "pdf"))
        report = json.loads(ccbench(env, "report", experiment_id, "--json").stdout)
        [run] = report["runs"]
        assert run["status"] == "done"
        assert all(f["rtt_mean_s"] >= 0.040 for f in run["flows"])
        assert {"utilization", "jain_index", "queue_mean_pkts", "power"} <= set(run["aggregate"])
    finally:
        down = ccbench(env, "down")
    assert down.returncode == 0 and "worker" in down.stdout, down.stdout + down.stderr
    assert HostState.capture().leftovers_since(before) == []
    # Nobody else may read the state: database (and its WAL), broker, logs, run artifacts.
    state = tmp_path / "state"
    readable = [str(p) for p in [state, *state.rglob("*")] if p.stat().st_mode & 0o077]
    assert readable == [], readable
    names = {p.name for p in state.rglob("*")}
    assert {"ccbench.sqlite", "broker.sqlite", "api.log", "provenance.json"} <= names, names


def test_cli_says_when_the_api_is_unreachable_or_the_token_is_wrong(
    tmp_path: Path, team_token: tuple[str, str]
) -> None:
    env = embedded_env(tmp_path / "state", free_port())
    env.update(CCBENCH_API_URL=f"http://127.0.0.1:{free_port()}", CCBENCH_TOKEN="ccb_x")
    result = ccbench(env, "status", "abc123")
    assert result.returncode == 1
    assert "cannot reach the ccbench API" in result.stderr, result.stderr

    # A real API (on the test database): a wrong token is refused with advice, a right one works.
    port = free_port()
    api_env = dict(os.environ, CCBENCH_API_PORT=str(port))
    api = subprocess.Popen(
        [*CCBENCH, "api"],
        cwd=REPO_ROOT,
        env=api_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        env.update(CCBENCH_API_URL=f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while "cannot reach" in (result := ccbench(env, "status", "abc123")).stderr:
            assert time.monotonic() < deadline, "API did not start"
            time.sleep(0.2)
        assert result.returncode == 1
        assert "refused the token" in result.stderr and "create-token" in result.stderr
        env["CCBENCH_TOKEN"] = team_token[1]
        missing = ccbench(env, "status", "abc123")
        assert missing.returncode == 1, missing.stderr
        assert (
            "no experiment of your team or shared with it has an id starting with abc123"
            in missing.stderr
        )

        # compare and export print what the API computes.
        from tests.test_api import finish_runs_with, matrix

        matrix_file = tmp_path / "matrix.yaml"
        matrix_file.write_text(yaml.safe_dump(matrix(["reno", "cubic"], ["1bdp", "2bdp"], 1)))
        submitted = ccbench(env, "submit", str(matrix_file))
        assert submitted.returncode == 0, submitted.stderr
        experiment_id = submitted.stdout.split()[1]
        finish_runs_with(experiment_id, lambda run: 0.9)
        compared = ccbench(
            env,
            "compare",
            experiment_id,
            "--metric",
            "utilization",
            "--x",
            "topology.bottleneck.buffer",
            "--by",
            "flows[*].algorithm",
        )
        assert compared.returncode == 0, compared.stderr
        assert "flows[*].algorithm = cubic" in compared.stdout
        assert "topology.bottleneck.buffer=2bdp: 0.9 ± 0 (n=1)" in compared.stdout
        exported = ccbench(env, "export", experiment_id, "--table", "flows")
        assert exported.returncode == 0 and len(exported.stdout.strip().splitlines()) == 5
        parquet_file = tmp_path / "runs.parquet"
        written = ccbench(
            env, "export", experiment_id, "--format", "parquet", "-o", str(parquet_file)
        )
        assert written.returncode == 0, written.stderr
        assert parquet_file.read_bytes()[:4] == b"PAR1"
        refused = ccbench(env, "export", experiment_id, "--format", "parquet")
        assert refused.returncode == 1 and "--output FILE" in refused.stderr
    finally:
        api.terminate()
        api.wait(10)
