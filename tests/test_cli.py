"""The `ccbench` command as people use it: the real CLI (a subprocess) against a real API.

On the embedded stack (`ccbench up`, root: a real worker runs the runs) a matrix is followed
in a terminal (a pty, its screen emulated by pyte): the progress display is redrawn in place.
Against an API on the harness's PostgreSQL (no worker: runs stay queued): `list` filters, id
prefixes resolve and an ambiguous one is refused naming the candidates, errors are printed
once, shell completion offers ids. And without any server: help on every argument, the
progress estimates."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pexpect
import pyte
import pytest
import typer
import yaml

from ccbench.settings import REPO_ROOT
from cli.main import app
from cli.progress import MatrixState, duration_text, remaining_s
from tests.hoststate import HostState
from tests.services import free_port, run_cli
from tests.test_stack import embedded_env

MATRIX: dict[str, Any] = {
    "schema_version": 1,
    "kind": "matrix",
    "name": "cli-live",
    "tags": ["cli-test"],
    "base": {
        "name": "cli-live",
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {"rate": "10Mbit", "delay": "10ms", "buffer": "1bdp"},
        },
        "flows": [{"algorithm": "reno"}, {"algorithm": "reno"}],
        "duration": "3s",
        "measurement": {"skip_start": "0.5s"},
    },
    "axes": [{"path": "flows[*].algorithm", "values": ["reno", "cubic"]}],
    "combine": "product",
    "repetitions": 2,
}
SCREEN = (200, 160)  # rows, columns of the emulated terminal: the report fits below


def screen_of(raw: bytes) -> list[str]:
    """The lines a terminal shows after `raw` (pyte emulates its cursor movements)."""
    screen = pyte.Screen(SCREEN[1], SCREEN[0])
    screen.set_mode(pyte.modes.LNM)  # a pty turns \n into \r\n; pexpect's raw stream has both
    stream = pyte.ByteStream(screen)
    stream.feed(raw)
    # Lines scrolled off the top are gone from `display`: the screen is tall enough for the
    # display's last frame and the report below it.
    return [line.rstrip() for line in screen.display]


def in_a_terminal(env: dict[str, str], *args: str, timeout: float) -> tuple[int, bytes]:
    """`ccbench ARGS` with a pty as its terminal: exit code and everything it wrote."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "cli", *args],
        cwd=str(REPO_ROOT),
        env={**env, "TERM": "xterm-256color"},
        dimensions=SCREEN,
        timeout=timeout,
    )
    raw = b""
    while True:
        try:
            raw += child.read_nonblocking(1 << 16, timeout=timeout)
        except pexpect.EOF:
            break
    child.close()
    return int(child.exitstatus if child.exitstatus is not None else -1), raw


@pytest.mark.root
def test_matrix_progress_renders_in_place_on_the_embedded_stack(tmp_path: Path) -> None:
    before = HostState.capture()
    env = embedded_env(tmp_path / "state", free_port())
    spec = tmp_path / "matrix.yaml"
    spec.write_text(yaml.safe_dump(MATRIX))
    up = run_cli(env, "up", "--detach")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        code, raw = in_a_terminal(env, "submit", str(spec), "--wait", timeout=300)
        text = raw.decode(errors="replace")
        assert code == 0, text[-3000:]
        experiment_id = re.search(r"experiment ([0-9a-f]{32}) \(cli-live\)", text)[1]  # type: ignore[index]
        head = f"experiment {experiment_id[:8]} cli-live"
        # Drawn again at every poll (cursor up, erase line) ...
        assert text.count(head) >= 3 and "\x1b[1A\x1b[2K" in text, text[:3000]
        assert re.search(r"ETA (\d+m )?\d+s", text), "no ETA was shown"
        assert re.search(r"run \d/4 flows\[\*\]\.algorithm=\w+ rep \d .*running", text)
        # ... but on the screen once, finished: in place, not a line per update.
        lines = screen_of(raw)
        drawn = [line for line in lines if line.startswith(head)]
        assert len(drawn) == 1 and "4/4 runs" in drawn[0] and "4 done" in drawn[0], lines
        assert f"experiment {experiment_id} done: 4 done" in text
        shown = "\n".join(lines)
        assert "matrix points (median ± SIQR over repetitions)" in shown
        assert re.search(r"goodput +mean RTT", shown) and "Mbit/s" in shown, shown

        # The same runs through short ids: a run's log and files.
        status = run_cli(env, "status", experiment_id[:6])
        assert status.returncode == 0, status.stderr
        run_ids = re.findall(r"^\s*\d+\s+([0-9a-f]{8})\s", status.stdout, re.MULTILINE)
        assert len(run_ids) == 4, status.stdout
        log = run_cli(env, "logs", run_ids[0])
        assert log.returncode == 0 and "ip link set" in log.stdout, log.stdout + log.stderr
        files = run_cli(env, "logs", run_ids[0], "--files")
        assert "provenance.json" in files.stdout and " kB" in files.stdout, files.stdout
        provenance = run_cli(env, "logs", run_ids[0], "--file", "provenance.json")
        assert provenance.stdout.lstrip().startswith("{"), provenance.stdout[:200]
        listed = run_cli(env, "list", "--tag", "cli-test", "--status", "done").stdout
        assert listed.splitlines()[1].split()[:4] == [experiment_id[:8], "cli-live", "done", "4"]
    finally:
        down = run_cli(env, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert HostState.capture().leftovers_since(before) == []


@pytest.fixture
def api_env(tmp_path: Path, team_token: tuple[str, str]) -> Iterator[dict[str, str]]:
    """A client environment for an API server (`ccbench api`) on the harness's database."""
    port = free_port()
    api = subprocess.Popen(
        [sys.executable, "-m", "cli", "api", "--port", str(port)],
        cwd=REPO_ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline and api.poll() is None, "the API did not start"
        time.sleep(0.2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCBENCH_")}
    env.update(CCBENCH_API_URL=url, CCBENCH_TOKEN=team_token[1],
               CCBENCH_STATE_DIR=str(tmp_path / "client"))  # fmt: skip
    try:
        yield env
    finally:
        api.terminate()
        api.wait(10)


def submit(env: dict[str, str], tmp_path: Path, **changes: Any) -> str:
    spec = {**MATRIX, **changes}
    path = tmp_path / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    done = run_cli(env, "submit", str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[1]


def errors_once(done: subprocess.CompletedProcess[str]) -> str:
    """The one error a failed command printed: once, without a traceback."""
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and done.stderr.count("error") == 1, done.stderr
    return done.stderr


def test_list_filters_prefixes_and_errors_against_the_api(
    api_env: dict[str, str], tmp_path: Path
) -> None:
    env = api_env
    tagged = submit(env, tmp_path, name="tagged-one", tags=["sweep"])
    ids = [tagged] + [submit(env, tmp_path, name=f"plain-{i}", tags=[]) for i in range(16)]
    # `list` and its filters.
    listed = run_cli(env, "list")
    assert listed.returncode == 0 and "1-17 of 17 experiment(s)" in listed.stderr
    assert all(i[:8] in listed.stdout for i in ids), listed.stdout
    by_tag = run_cli(env, "list", "--tag", "sweep").stdout
    assert tagged[:8] in by_tag and ids[1][:8] not in by_tag
    assert run_cli(env, "list", "--name", "plain-1").stdout.count("plain-1") == 7  # 1, 10-15
    assert run_cli(env, "list", "--status", "done").stderr.strip() == "0 experiment(s)"
    paged = run_cli(env, "list", "--page", "2", "--page-size", "10")
    assert "11-17 of 17" in paged.stderr and len(paged.stdout.splitlines()) == 1 + 7

    # A unique prefix is the experiment; the shortest prefix two ids share is refused, naming
    # every candidate (17 ids: two share their first digit at least).
    status = run_cli(env, "status", tagged[:7])
    assert status.returncode == 0 and f"experiment {tagged} (tagged-one)" in status.stdout
    shared = next(i[0] for i in ids if sum(j[0] == i[0] for j in ids) > 1)
    candidates = [i for i in ids if i.startswith(shared)]
    refused = errors_once(run_cli(env, "report", shared))
    assert f"{shared} is ambiguous: the ids of {len(candidates)} experiments start with it" in (
        refused
    )
    assert all(c in refused for c in candidates), refused
    assert "give more of the id" in refused
    assert "no experiment of your team" in errors_once(run_cli(env, "cancel", "abcdef0123"))
    assert "is not an experiment id" in errors_once(run_cli(env, "status", "some-id"))
    # Runs by prefix too: a queued run has no log yet, said once.
    run_id = httpx.get(f"{env['CCBENCH_API_URL']}/v1/runs", params={"experiment_id": tagged},
                       headers={"Authorization": f"Bearer {env['CCBENCH_TOKEN']}"}
                       ).json()["items"][0]["id"]  # fmt: skip
    assert f"run {run_id} has no log (yet)" in errors_once(run_cli(env, "logs", run_id[:9]))
    cancelled = run_cli(env, "cancel", tagged[:10])
    assert cancelled.stdout.strip() == f"experiment {tagged}: cancelled"

    # A refused submission: each field once, without pydantic's prefixes.
    bad = {**MATRIX, "base": {**MATRIX["base"], "duration": 20, "flows": [{"algorithm": "x"}]}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    said = errors_once(run_cli(env, "submit", str(tmp_path / "bad.yaml")))
    assert said.count("base.duration: 20 has no unit: add one, e.g. 20ms") == 1, said
    assert "Value error" not in said and said.count("base.flows.0.algorithm") == 1, said
    # Bad usage: the usage, the hint and the reason, without pydantic's prefix.
    usage = run_cli(env, "list", "--status", "bogus")
    assert usage.returncode == 2 and "Try 'ccbench list -h' for help." in usage.stderr
    assert "Invalid value for '--status': 'bogus' is not one of" in usage.stderr
    assert "Value error" not in usage.stderr and "Traceback" not in usage.stderr

    # Shell completion offers the ids that start with what was typed.
    completing = {**env, "_CCBENCH_COMPLETE": "complete_bash",
                  "COMP_WORDS": f"ccbench status {shared}", "COMP_CWORD": "2"}  # fmt: skip
    offered = run_cli(completing, timeout=30).stdout.split()
    assert sorted(offered) == sorted(candidates), offered


def test_every_command_and_argument_has_help() -> None:
    missing = []

    def walk(command: Any, path: str) -> None:
        if not (command.help or "").strip():
            missing.append(path)
        for param in command.params:
            if param.name != "help" and not (getattr(param, "help", None) or "").strip():
                missing.append(f"{path} {param.name}")
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "ccbench")
    assert missing == []


def test_version() -> None:
    from ccbench.version import CCBENCH_VERSION

    done = run_cli(dict(os.environ), "--version")
    assert done.returncode == 0 and done.stdout.strip() == f"ccbench {CCBENCH_VERSION}"


def run(status: str, started: datetime | None = None, finished: datetime | None = None,
        progress: dict[str, float] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "id": os.urandom(16).hex(), "order_index": 0, "repetition": 0, "axis_values": {},
        "status": status, "progress": progress or {}, "error": None,
        "started_at": started.isoformat() if started else None,
        "finished_at": finished.isoformat() if finished else None,
    }  # fmt: skip


def test_remaining_time_from_the_runs_so_far() -> None:
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    ago = lambda s: now - timedelta(seconds=s)  # noqa: E731
    # Nothing known: no estimate. A running run's duration is the first (lower) bound.
    assert remaining_s([run("queued"), run("queued")], now) is None
    first = [run("running", ago(5), progress={"elapsed_s": 3, "duration_s": 20}), run("queued")]
    assert remaining_s(first, now) == pytest.approx(15 + 20)
    # Then the median wall time of the done runs (30 s), queued ones 30 s each, the active
    # ones what is left of 30 s, spread over the 2 runs active at once.
    runs = [
        run("done", ago(100), ago(70)),
        run("done", ago(70), ago(40)),
        run("done", ago(40), ago(0)),  # 40 s: the median stays 30
        run("failed", ago(3), ago(2)),  # failures do not count
        run("running", ago(10)),
        run("provisioning", ago(40)),  # late: nothing left of its 30 s
        run("queued"),
        run("queued"),
    ]
    assert remaining_s(runs, now) == pytest.approx((2 * 30 + 20 + 0) / 2)
    state = MatrixState.of({"id": "e" * 32, "name": "m", "status": "running", "runs": runs}, now)
    assert (state.total, state.finished, len(state.active)) == (8, 4, 2)
    assert state.summary() == "3 done · 1 failed · 2 running · 2 queued"
    assert [duration_text(s) for s in (None, 44.6, 130, 3900)] == ["-", "45s", "2m 10s", "1h 05m"]
