"""The reaper against the real database: a run whose worker stopped heartbeating is queued
again while it has attempts left, then failed; fresh heartbeats and final runs are left alone."""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from ccbench.db.models import Run, Team, utcnow
from ccbench.db.session import session_scope
from ccbench.reaper import reap_stale_runs
from ccbench.settings import get_settings

pytestmark = pytest.mark.services

SPEC = {
    "name": "reaper",
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbit", "delay": "5ms"}},
    "flows": [{"algorithm": "reno"}],
    "duration": "5s",
}


def make_run(team_name: str) -> str:
    from ccbench.experiments import create_experiment
    from schemas import ExperimentSpec

    with session_scope() as session:
        team = session.query(Team).filter_by(name=team_name).one()
        _, [run] = create_experiment(
            session, team, ExperimentSpec.model_validate(SPEC), run_limit=1
        )
        return run.id


def set_state(run_id: str, status: str, attempt: int, heartbeat_age_s: float) -> None:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.status, run.attempt, run.worker_id = status, attempt, "gone@host"
        run.heartbeat_at = utcnow() - timedelta(seconds=heartbeat_age_s)


def state(run_id: str) -> tuple[str, str | None]:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.status, run.error


def test_stale_runs_are_retried_then_failed(team_token: tuple[str, str]) -> None:
    settings = get_settings().model_copy(update={"heartbeat_timeout_s": 30, "run_max_attempts": 2})
    run_id = make_run(team_token[0])
    set_state(run_id, "running", attempt=1, heartbeat_age_s=5)
    assert [r for r in reap_stale_runs(settings) if r.run_id == run_id] == []
    assert state(run_id)[0] == "running"

    set_state(run_id, "running", attempt=1, heartbeat_age_s=120)
    reaped = [r for r in reap_stale_runs(settings) if r.run_id == run_id]
    assert [r.action for r in reaped] == ["requeued"]
    status, error = state(run_id)
    assert status == "queued" and "retrying" in (error or "") and "gone@host" in (error or "")
    with session_scope() as session:  # the retry waits for the dispatcher, unsent
        retried = session.get(Run, run_id)
        assert retried is not None and retried.dispatched_at is None

    set_state(run_id, "collecting", attempt=2, heartbeat_age_s=120)
    reaped = [r for r in reap_stale_runs(settings) if r.run_id == run_id]
    assert [r.action for r in reaped] == ["failed"]
    status, error = state(run_id)
    assert status == "failed" and "attempt 2 of 2" in (error or "")

    # Final runs are never touched, and a redelivered task for them does nothing.
    assert [r for r in reap_stale_runs(settings) if r.run_id == run_id] == []
    from workers.lifecycle import execute

    assert execute(run_id, worker_id="redelivered") == "skipped"
    assert state(run_id)[0] == "failed"


def test_a_forked_process_opens_its_own_database_connections() -> None:
    """Celery replaces a killed pool process by forking the worker's main process, whose
    upkeep thread (reaper, dispatcher) holds connections: the child must not use them."""
    import os

    from sqlalchemy import text

    def backend_pid() -> int:
        with session_scope() as session:
            return int(session.scalar(text("SELECT pg_backend_pid()")) or 0)

    from ccbench.db.session import get_engine

    get_engine().dispose()  # one pooled connection: the parent's next checkout is that one
    parent = backend_pid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child reports its connection's server process, then exits at once
        try:
            os.write(write, str(backend_pid()).encode())
        finally:
            os._exit(0)
    os.close(write)
    reported = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(child, 0)
    assert reported and int(reported) != parent
    assert backend_pid() == parent  # the parent's connection still works


def test_a_poll_the_database_cannot_answer_keeps_the_run_until_the_reaper_would_take_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "database is locked" on an overloaded host once failed runs that were going
    well: a worker's poll that the database cannot answer keeps the run and its events for the
    next poll, and fails only past half the heartbeat timeout."""
    from ccbench import teams
    from ccbench.db.migrate import upgrade
    from schemas import ExperimentSpec
    from workers.artifacts import Uploader
    from workers.lifecycle import Claim, Monitor

    database = tmp_path / "locked.sqlite"
    monkeypatch.setenv("CCBENCH_DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("CCBENCH_SQLITE_BUSY_TIMEOUT_S", "0.2")
    monkeypatch.setenv("CCBENCH_HEARTBEAT_TIMEOUT_S", "2")
    get_settings.cache_clear()
    try:
        upgrade(get_settings().effective_database_url)
        with session_scope() as session:
            teams.create_team(session, "locked")
        run_id = make_run("locked")
        set_state(run_id, "running", attempt=1, heartbeat_age_s=0)
        with session_scope() as session:
            run = session.get(Run, run_id)
            assert run is not None
            experiment_id = run.experiment_id
            team_id = session.query(Team).filter_by(name="locked").one().id
        settings = get_settings()
        monitor = Monitor(Claim(run_id, 1, experiment_id, team_id,
                                ExperimentSpec.model_validate(SPEC), tmp_path,
                                Uploader(settings, run_id, 1, tmp_path)))  # fmt: skip
        monitor.on_event({"event": "progress", "elapsed_s": 3, "duration_s": 5})

        locker = sqlite3.connect(database, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")  # another writer holds the database
        assert monitor.should_cancel() is False  # no answer: not a failure
        locker.execute("ROLLBACK")
        assert monitor.should_cancel() is False
        with session_scope() as session:
            run = session.get(Run, run_id)
            assert run is not None and run.status == "running"
            assert run.progress == {"elapsed_s": 3, "duration_s": 5}  # the kept event

        locker.execute("BEGIN EXCLUSIVE")
        assert monitor.should_cancel() is False
        time.sleep(settings.heartbeat_timeout_s / 2 + 0.1)
        with pytest.raises(OperationalError, match="locked"):
            monitor.should_cancel()  # away too long: the run fails before the reaper takes it
        locker.execute("ROLLBACK")
        locker.close()
    finally:
        get_settings.cache_clear()
