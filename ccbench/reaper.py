"""Runs whose worker died: an active run whose heartbeat went stale is queued again while it
has attempts left (settings.run_max_attempts, not counting re-runs after load spoiled its
checks) and its experiment is not being cancelled, else marked failed (or cancelled). A
requeued run has no message: the dispatcher sends it. Safe to run from several workers at
once: every move is a conditional UPDATE."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select

from ccbench.db.models import Experiment, Run, utcnow
from ccbench.db.runs import refresh_experiment_status, transition
from ccbench.db.session import session_scope
from ccbench.runstate import ACTIVE, RunStatus
from ccbench.settings import Settings, get_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reaped:
    run_id: str
    action: str  # "requeued" | "failed" | "cancelled"
    detail: str


def reap_stale_runs(settings: Settings | None = None) -> list[Reaped]:
    settings = settings or get_settings()
    cutoff = utcnow() - timedelta(seconds=settings.heartbeat_timeout_s)
    reaped: list[Reaped] = []
    with session_scope() as session:
        stale = session.execute(
            select(
                Run.id,
                Run.experiment_id,
                Run.attempt,
                Run.load_reruns,
                Run.worker_id,
                Run.heartbeat_at,
                Experiment.cancel_requested_at,
            )
            .join(Experiment, Experiment.id == Run.experiment_id)
            .where(Run.status.in_([s.value for s in ACTIVE]))
            .where((Run.heartbeat_at < cutoff) | Run.heartbeat_at.is_(None))
        ).all()
        for run_id, experiment_id, attempt, reruns, worker_id, heartbeat_at, cancelled in stale:
            # Attempts re-run because load spoiled their checks (workers/packing.py) do not
            # count against the attempts a dead worker may cost.
            lost_attempts = attempt - reruns
            detail = (
                f"worker {worker_id} stopped heartbeating (last at "
                f"{heartbeat_at.isoformat() if heartbeat_at else 'never'}) during attempt "
                f"{attempt} of {settings.run_max_attempts}"
            )
            if cancelled is not None:
                # Cancellation is final: the run is not started again.
                if transition(
                    session,
                    run_id,
                    RunStatus.cancelled,
                    expect_attempt=attempt,
                    error=f"cancelled by user ({detail})",
                    finished_at=utcnow(),
                ):
                    reaped.append(Reaped(run_id, "cancelled", detail))
            elif lost_attempts < settings.run_max_attempts:
                if transition(
                    session,
                    run_id,
                    RunStatus.queued,
                    expect_attempt=attempt,
                    worker_id=None,
                    error=f"retrying: {detail}",
                    queued_at=utcnow(),
                    dispatched_at=None,
                ):
                    reaped.append(Reaped(run_id, "requeued", detail))
            elif transition(
                session,
                run_id,
                RunStatus.failed,
                expect_attempt=attempt,
                error=detail,
                finished_at=utcnow(),
            ):
                reaped.append(Reaped(run_id, "failed", detail))
            refresh_experiment_status(session, experiment_id)
    for r in reaped:
        log.warning("reaper: run %s %s: %s", r.run_id, r.action, r.detail)
    return reaped
