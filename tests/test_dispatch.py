"""Dispatch, idempotent submission, final cancellation and token lifetimes, against the real
PostgreSQL and Redis the harness starts. No worker process runs here: workers are registered
as a worker registers itself (its capabilities), and their queues are read directly."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from amqp.exceptions import ChannelError
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from api.app import app
from ccbench import teams, workerpool
from ccbench.db.models import ApiToken, Experiment, Run, Team, utcnow
from ccbench.db.session import session_scope
from ccbench.dispatch import dispatch
from ccbench.jobs import make_celery, worker_queue
from ccbench.reaper import reap_stale_runs
from ccbench.settings import get_settings
from schemas import MatrixSpec
from tests.services import cancel_leftover_runs

pytestmark = pytest.mark.services

BASE = {
    "name": "dispatch",
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbit", "delay": "5ms"}},
    "flows": [{"algorithm": "reno"}],
    "duration": "5s",
}


def matrix(runs: int, name: str = "m") -> dict[str, Any]:
    return {"kind": "matrix", "name": name, "base": BASE, "repetitions": runs,
            "axes": [{"path": "flows[*].algorithm", "values": ["reno"]}]}  # fmt: skip


def store(team_name: str, runs: int) -> str:
    """An experiment of `runs` queued runs, committed without dispatching (as after a crash
    between the commit and the dispatch)."""
    from ccbench.experiments import create_experiment

    with session_scope() as session:
        team = session.scalars(select(Team).where(Team.name == team_name)).one()
        experiment, _ = create_experiment(
            session, team, MatrixSpec.model_validate(matrix(runs)), run_limit=10_000
        )
        return experiment.id


LOCAL = workerpool.Capabilities(
    testbeds=["mininet", "hosts"], congestion_controls=["reno", "cubic"], nfqueue=True
)


def waiting_messages(worker: str) -> int:
    """Messages in the worker's queue (Redis has no queue that never held one)."""
    with make_celery(get_settings()).connection_for_write() as connection:
        try:
            declared = connection.default_channel.queue_declare(worker_queue(worker), passive=True)
        except ChannelError:
            return 0
        return int(declared.message_count)


def dispatched(experiment_id: str) -> list[str]:
    with session_scope() as session:
        return list(session.scalars(select(Run.id).where(
            Run.experiment_id == experiment_id, Run.dispatched_at.is_not(None))))  # fmt: skip


@pytest.fixture
def quiet_queue() -> None:
    """No run of another test is waiting in the database."""
    cancel_leftover_runs()


@pytest.fixture
def register(unique: str) -> Iterator[Callable[..., str]]:
    """Register workers (ids unique to the test); they stop being live when the test ends."""
    made: list[str] = []

    def make(pool: str = "default", capabilities: workerpool.Capabilities = LOCAL,
             slots: int = 1) -> str:  # fmt: skip
        name = f"w{len(made)}-{unique}"
        with session_scope() as session:
            workerpool.register(session, name, pool, capabilities, slots, "test")
        made.append(name)
        return name

    yield make
    with session_scope() as session:
        for name in made:
            workerpool.stopped(session, name)


def test_stored_runs_are_sent_to_a_worker_with_room(
    team_token: tuple[str, str], quiet_queue: None, register: Callable[..., str]
) -> None:
    settings = get_settings().model_copy(update={"dispatch_prefetch": 1})
    experiment_id = store(team_token[0], 12)
    assert dispatch(settings) == 0  # no live worker: the runs wait, stored
    worker = register(slots=3)
    assert dispatched(experiment_id) == []  # stored, not yet sent: no message was lost
    assert dispatch(settings) == 4 and waiting_messages(worker) == 4  # 3 slots + 1 waiting
    assert dispatch(settings) == 0 and waiting_messages(worker) == 4  # the worker is full
    # It claims two and finishes them: two more are sent.
    with session_scope() as session:
        two = session.scalars(select(Run.id).where(Run.id.in_(dispatched(experiment_id)))
                              .limit(2)).all()  # fmt: skip
        session.execute(update(Run).where(Run.id.in_(two))
                        .values(status="provisioning", worker_id=worker))  # fmt: skip
        assert dispatch(settings) == 0  # executing 2, waiting 2: no room
        session.execute(update(Run).where(Run.id.in_(two)).values(status="done"))
    assert dispatch(settings) == 2 and len(dispatched(experiment_id)) == 6
    # A message unclaimed for longer than the lease is presumed lost and sent again.
    with session_scope() as session:
        session.execute(update(Run).where(Run.experiment_id == experiment_id)
                        .values(dispatched_at=utcnow() - timedelta(hours=1)))  # fmt: skip
    assert dispatch(settings) == 4
    # A worker that stops being live: its messages go to another.
    other = register(slots=3)
    with session_scope() as session:
        workerpool.stopped(session, worker)
    assert dispatch(settings) == 4
    with session_scope() as session:
        targets = set(session.scalars(select(Run.dispatched_to).where(
            Run.experiment_id == experiment_id, Run.status == "queued",
            Run.dispatched_to.is_not(None))))  # fmt: skip
    assert other in targets


def test_runs_go_only_to_workers_that_can_run_them(
    team_token: tuple[str, str], quiet_queue: None, register: Callable[..., str]
) -> None:
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {team_token[1]}"}
    plain = register(pool="lab")
    vegas = register(pool="lab", capabilities=workerpool.Capabilities(
        testbeds=["mininet"], congestion_controls=["reno", "vegas"], nfqueue=True))  # fmt: skip
    spec = {**BASE, "testbed": {"kind": "mininet", "pool": "lab"},
            "flows": [{"algorithm": "vegas"}]}  # fmt: skip
    made = client.post("/v1/experiments", json=spec, headers=headers)
    assert made.status_code == 201, made.text  # the API dispatched it at once, to `vegas`
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.experiment_id == made.json()["id"])).one()
        assert run.dispatched_to == vegas and waiting_messages(plain) == 0
    # A spec no live worker can run is refused at submission, with the reason.
    for testbed, reason in (
        ({"kind": "mininet", "pool": "nowhere"}, "no live worker serves the pool 'nowhere'"),
        ({"kind": "mininet", "pool": "lab"}, "lacks the kernel congestion control bbr"),
    ):
        body = {**spec, "testbed": testbed, "flows": [{"algorithm": "bbr"}]}
        refused = client.post("/v1/experiments", headers=headers, json=body)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == "testbed"
        assert reason in refused.json()["errors"][0]["reason"], refused.json()


def test_teams_are_served_in_turn(
    unique: str, quiet_queue: None, register: Callable[..., str]
) -> None:
    with session_scope() as session:
        for name in (f"a-{unique}", f"b-{unique}"):
            teams.create_team(session, name)
    big = store(f"a-{unique}", 50)  # submitted first
    small = store(f"b-{unique}", 2)
    register(slots=3)
    settings = get_settings().model_copy(update={"dispatch_prefetch": 1})
    assert dispatch(settings) == 4
    assert len(dispatched(small)) == 2 and len(dispatched(big)) == 2


def test_cancelled_runs_are_never_sent_nor_started(
    team_token: tuple[str, str], quiet_queue: None, register: Callable[..., str]
) -> None:
    from workers.lifecycle import claim

    client = TestClient(app)
    headers = {"Authorization": f"Bearer {team_token[1]}"}
    register(slots=4)  # room for every run: only the cancellation keeps them unsent
    experiment_id = store(team_token[0], 3)
    with session_scope() as session:
        run_ids = list(session.scalars(select(Run.id).where(Run.experiment_id == experiment_id)))
        # One run is active with a dead worker, one is queued with a message in the broker.
        dead = {"status": "provisioning", "attempt": 1,
                "heartbeat_at": utcnow() - timedelta(hours=1)}  # fmt: skip
        session.execute(update(Run).where(Run.id == run_ids[0]).values(**dead))
    assert (
        client.post(f"/v1/experiments/{experiment_id}/cancel", headers=headers).status_code == 200
    )
    with session_scope() as session:  # a stale message's run, as if queued again by a race
        session.execute(update(Run).where(Run.id == run_ids[1]).values(status="queued"))
    assert dispatch(get_settings()) == 0
    assert claim(run_ids[1], "test-worker", get_settings()) is None  # the stale message
    reaped = {r.run_id: r.action for r in reap_stale_runs(get_settings())}
    assert reaped.get(run_ids[0]) == "cancelled"  # not requeued
    with session_scope() as session:
        states = set(session.scalars(select(Run.status).where(Run.experiment_id == experiment_id)))
        assert states == {"cancelled"}
        assert session.get(Experiment, experiment_id).status == "cancelled"  # type: ignore[union-attr]


def test_an_idempotency_key_makes_a_retried_submission_return_the_first(
    team_token: tuple[str, str],
) -> None:
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {team_token[1]}", "Idempotency-Key": "k-" + team_token[0]}
    first = client.post("/v1/experiments", json=matrix(3), headers=headers)
    assert first.status_code == 201, first.text
    assert first.headers["Location"] == f"/v1/experiments/{first.json()['id']}"
    again = client.post("/v1/experiments", json=matrix(3), headers=headers)
    assert again.status_code == 201 and again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    other = client.post("/v1/experiments", json=matrix(4), headers=headers)
    assert other.status_code == 422
    assert other.json()["errors"][0]["field"] == "Idempotency-Key"
    # Requests racing with one key store one experiment.
    racing = {**headers, "Idempotency-Key": "race-" + team_token[0]}
    ids: list[str] = []

    def submit() -> None:
        response = TestClient(app).post("/v1/experiments", json=matrix(2), headers=racing)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 4 and len(set(ids)) == 1
    with session_scope() as session:
        names = session.scalars(select(Experiment.id).where(Experiment.id.in_(ids))).all()
        assert len(names) == 1


def test_revoked_and_expired_tokens_are_refused_at_once(team_token: tuple[str, str]) -> None:
    client = TestClient(app)
    admin = {"Authorization": f"Bearer {team_token[1]}"}
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    made = client.post("/v1/tokens", json={"name": "ci", "expires_at": later}, headers=admin)
    assert made.status_code == 201, made.text
    token = made.json()
    mine = {"Authorization": f"Bearer {token['token']}"}
    assert client.get("/v1/me", headers=mine).status_code == 200
    listed = client.get("/v1/tokens", headers=admin).json()
    assert any(t["id"] == token["id"] for t in listed)
    assert all("token" not in t and "token_hash" not in t for t in listed)
    assert client.delete(f"/v1/tokens/{token['id']}", headers=admin).status_code == 204
    refused = client.get("/v1/me", headers=mine)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    # Expiry: a token past its time is refused, without anyone revoking it.
    second = client.post("/v1/tokens", json={"name": "short"}, headers=admin).json()
    with session_scope() as session:
        session.execute(update(ApiToken).where(ApiToken.id == second["id"])
                        .values(expires_at=utcnow() - timedelta(seconds=1)))  # fmt: skip
    assert (
        client.get("/v1/me", headers={"Authorization": f"Bearer {second['token']}"}).status_code
        == 401
    )
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    bad = client.post("/v1/tokens", json={"name": "x", "expires_at": past}, headers=admin)
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "expires_at"
    naive = client.post("/v1/tokens", json={"name": "x", "expires_at": "2099-01-01T00:00:00"},
                        headers=admin)  # fmt: skip
    assert naive.status_code == 422


def test_timestamps_carry_their_offset(team_token: tuple[str, str]) -> None:
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {team_token[1]}"}
    created = client.post("/v1/experiments", json=matrix(1), headers=headers).json()
    detail = client.get(f"/v1/experiments/{created['id']}", headers=headers).json()
    for key in ("created_at", "updated_at"):
        assert datetime.fromisoformat(detail[key]).utcoffset() == timedelta(0), detail[key]
