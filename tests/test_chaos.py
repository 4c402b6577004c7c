"""Crashes as an operator meets them, with real processes: the API SIGKILLed at random instants
while matrices are submitted (on PostgreSQL + Redis and on the embedded SQLite default) loses
no run, strands none and duplicates none; a cancelled 10,000-run matrix does not hold up
another team's run."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from ccbench.settings import get_settings
from tests.hoststate import HostState
from tests.processes import Api, Worker
from tests.services import chaos_report, free_port, run_cli

pytestmark = [pytest.mark.root, pytest.mark.services]

# API kills per stack: 6 in the suite (CI time), more in `make bench-chaos`.
SUBMISSIONS = int(os.environ.get("CCBENCH_CHAOS_SUBMISSIONS", "6"))
# `make bench-chaos` reads each test's figures from this file (JSON lines).
FINAL = ("done", "failed", "cancelled")


def matrix(name: str, repetitions: int = 2, duration: str = "1s") -> dict[str, Any]:
    return {
        "kind": "matrix",
        "name": name,
        "base": {
            "name": name,
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbit", "delay": "5ms"}},
            "flows": [{"algorithm": "reno"}],
            "duration": duration,
        },
        "axes": [{"path": "flows[*].algorithm", "values": ["reno"]}],
        "repetitions": repetitions,
    }


@dataclass
class Stack:
    """The database and broker a stack's processes share, and a team's token."""

    env: dict[str, str]
    database_url: str
    token: str
    logs: Path
    tally: dict[str, int] = field(default_factory=dict)

    def sql(self, query: str, **params: Any) -> list[Any]:
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as connection:
                return list(connection.execute(text(query), params).all())
        finally:
            engine.dispose()


def postgres_redis_stack(tmp_path: Path, team: str) -> Stack:
    env = dict(os.environ, CCBENCH_STATE_DIR=str(tmp_path / "state"))
    return _with_team(Stack(env, get_settings().effective_database_url, "", tmp_path), team)


def embedded_stack(tmp_path: Path, team: str) -> Stack:
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CCBENCH_DATABASE_URL", "CCBENCH_BROKER_URL")}  # fmt: skip
    env["CCBENCH_STATE_DIR"] = str(state)
    assert run_cli(env, "db", "upgrade").returncode == 0
    return _with_team(Stack(env, f"sqlite:///{state / 'ccbench.sqlite'}", "", tmp_path), team)


def _with_team(stack: Stack, team: str) -> Stack:
    assert run_cli(stack.env, "admin", "create-team", team).returncode == 0
    made = run_cli(stack.env, "admin", "create-token", "--team", team)
    assert made.returncode == 0, made.stderr
    stack.token = made.stdout.strip()
    return stack


def submission_time(stack: Stack) -> float:
    """How long a fresh API takes to answer a submission: the kills are spread over it."""
    api = Api(free_port(), stack.env, stack.logs / "api.log")
    try:
        started = time.monotonic()
        headers = {"Authorization": f"Bearer {stack.token}"}
        answer = httpx.post(f"{api.url}/v1/experiments", json=matrix("calibration", 1),
                            headers=headers, timeout=30)  # fmt: skip
        assert answer.status_code == 201, answer.text
        return time.monotonic() - started
    finally:
        api.kill_hard()


def submit_under_fire(stack: Stack, name: str, rng: random.Random, span_s: float) -> str:
    """Submit a matrix while the API is SIGKILLed at a random instant within `span_s`; then,
    as the CLI does, start the API again and retry with the same Idempotency-Key until it
    answers. Returns the experiment's id; counts in stack.tally what the kill left behind."""
    headers = {"Authorization": f"Bearer {stack.token}", "Idempotency-Key": name}
    body = matrix(name)
    port = free_port()
    api = Api(port, stack.env, stack.logs / "api.log")
    answered: list[httpx.Response] = []

    def post() -> None:
        with contextlib.suppress(httpx.TransportError):
            answered.append(httpx.post(f"{api.url}/v1/experiments", json=body, headers=headers,
                                       timeout=10))  # fmt: skip

    sender = threading.Thread(target=post)
    sender.start()
    time.sleep(rng.uniform(0.0, span_s))
    api.kill_hard()
    sender.join()
    stored = stack.sql("SELECT r.dispatched_at FROM runs r JOIN experiments e ON "
                       "e.id = r.experiment_id WHERE e.name = :name", name=name)  # fmt: skip
    kind = ("answered" if answered else "not stored" if not stored
            else "stored, not dispatched" if any(d is None for (d,) in stored)
            else "stored and dispatched, no answer")  # fmt: skip
    stack.tally[kind] = stack.tally.get(kind, 0) + 1
    api = Api(free_port(), stack.env, stack.logs / "api.log")
    try:
        retried = httpx.post(f"{api.url}/v1/experiments", json=body, headers=headers, timeout=30)
    finally:
        api.kill_hard()
    assert retried.status_code == 201, retried.text
    if answered:
        assert retried.json()["id"] == answered[0].json()["id"]
        assert retried.headers.get("Idempotent-Replayed") == "true"
    return str(retried.json()["id"])


@pytest.fixture
def host_state() -> Iterator[HostState]:
    before = HostState.capture()
    yield before
    deadline = time.monotonic() + 10
    while HostState.capture().leftovers_since(before) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.parametrize("kind", ["postgres_redis", "embedded"])
def test_api_killed_during_submissions_loses_no_run(
    kind: str, tmp_path: Path, unique: str, host_state: HostState
) -> None:
    make = postgres_redis_stack if kind == "postgres_redis" else embedded_stack
    stack = make(tmp_path, f"chaos-{unique}")
    worker = Worker(tmp_path / "worker.log", env=stack.env if kind == "embedded" else None)
    rng = random.Random(f"{kind}-17")
    [(team_id,)] = stack.sql("SELECT id FROM teams WHERE name = :name", name=f"chaos-{unique}")
    try:
        span = 1.3 * submission_time(stack)
        ids = [submit_under_fire(stack, f"chaos-{unique}-{i}", rng, span)
               for i in range(SUBMISSIONS)]  # fmt: skip
        # Every stored run reaches a final state: dispatched by the worker's upkeep even when
        # the API died between the commit and its own dispatch.
        deadline = time.monotonic() + 60 + 4 * SUBMISSIONS * 2
        while True:
            states = stack.sql("SELECT r.status FROM runs r JOIN experiments e ON "
                               "e.id = r.experiment_id WHERE e.team_id = :team",
                               team=team_id)  # fmt: skip
            if all(s in FINAL for (s,) in states) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        worker.stop()
    print(f"{kind}: kills within {span * 1000:.0f} ms of the request left: {stack.tally}")
    final = [s for (s,) in states if s in FINAL]
    chaos_report(test="api_kills", stack=kind, kills=SUBMISSIONS, tally=stack.tally,
           runs_expected=2 * SUBMISSIONS + 1, runs_stored=len(states),
           runs_stuck=len(states) - len(final), runs_done=final.count("done"))  # fmt: skip
    assert sorted(s for (s,) in states) == ["done"] * (2 * SUBMISSIONS + 1), stack.tally
    # No submission was stored twice.
    experiments = stack.sql("SELECT id FROM experiments WHERE name LIKE :prefix",
                            prefix=f"chaos-{unique}-%")  # fmt: skip
    assert sorted(e for (e,) in experiments) == sorted(ids)


def test_a_cancelled_10000_run_matrix_does_not_hold_up_another_team(
    tmp_path: Path, unique: str, host_state: HostState
) -> None:
    from fastapi.testclient import TestClient

    from api.app import app
    from ccbench import teams
    from ccbench.db.session import session_scope

    with session_scope() as session:
        big = teams.create_token(session, teams.create_team(session, f"big-{unique}"), "t")
        small = teams.create_token(session, teams.create_team(session, f"small-{unique}"), "t")
    client = TestClient(app)
    worker = Worker(tmp_path / "worker.log")
    try:
        a = {"Authorization": f"Bearer {big}"}
        made = client.post("/v1/experiments", json=matrix("big", 10_000, "60s"), headers=a)
        assert made.status_code == 201, made.text
        big_id = made.json()["id"]

        def running() -> bool:
            detail = client.get(f"/v1/experiments/{big_id}", headers=a).json()
            return bool(detail["status_counts"].get("running"))

        deadline = time.monotonic() + 60
        while not running():
            assert time.monotonic() < deadline, "the big matrix never started"
            time.sleep(0.2)
        assert client.post(f"/v1/experiments/{big_id}/cancel", headers=a).status_code == 200
        b = {"Authorization": f"Bearer {small}"}
        one = client.post("/v1/experiments", json=matrix("small", 1, "1s"), headers=b).json()
        submitted = time.monotonic()
        while True:
            detail = client.get(f"/v1/experiments/{one['id']}", headers=b).json()
            if detail["runs"][0]["status"] != "queued":
                break
            assert time.monotonic() - submitted < 30, "the other team's run never started"
            time.sleep(0.05)
        waited = time.monotonic() - submitted
        print(f"the other team's run started {waited:.2f} s after its submission")
        chaos_report(test="cancelled_matrix", other_team_start_s=round(waited, 3))
        assert waited < 2.0
        while client.get(f"/v1/experiments/{one['id']}", headers=b).json()["status"] != "done":
            assert time.monotonic() - submitted < 60
            time.sleep(0.2)
        counts = client.get(f"/v1/experiments/{big_id}", headers=a).json()["status_counts"]
        assert counts == {"cancelled": 10_000}, counts
    finally:
        worker.stop()
