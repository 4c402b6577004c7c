"""Run state changes, each a conditional UPDATE: it only applies when the run is in a state the
state machine allows to move to the target (and, for a worker, still in the attempt it owns).
The UPDATE takes the row lock in PostgreSQL and the database write lock in SQLite, so two
workers, a worker and the reaper, or a worker and a cancel can never both win a move."""

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from ccbench.browse import listed_counts, metric_medians
from ccbench.db.models import Experiment, HostReservation, Run, utcnow
from ccbench.runstate import ACTIVE, FINAL, RunStatus, experiment_status, sources_of


def transition(
    session: Session,
    run_id: str,
    target: RunStatus,
    *,
    expect_attempt: int | None = None,
    only_from: frozenset[RunStatus] | None = None,
    **values: Any,
) -> bool:
    """Move the run to `target` (only from a state allowed to precede it, and only while it is
    still attempt `expect_attempt`); True when this call made the move."""
    allowed = sources_of(target) if only_from is None else sources_of(target) & only_from
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.status.in_([s.value for s in allowed]))
        .values(status=target.value, **values)
        .execution_options(synchronize_session=False)
    )
    if expect_attempt is not None:
        stmt = stmt.where(Run.attempt == expect_attempt)
    result = session.execute(stmt)
    assert isinstance(result, CursorResult)
    moved = result.rowcount == 1
    if moved and (target in FINAL or target == RunStatus.queued):
        release_hosts(session, [run_id])
    return moved


def release_hosts(session: Session, run_ids: list[str]) -> None:
    """The runs' hosts are free again (ccbench.reservations): every move to a final state or
    back to queued comes through here, so a reservation never outlives its run's turn."""
    if run_ids:
        session.execute(delete(HostReservation).where(HostReservation.run_id.in_(run_ids)))


def refresh_experiment_status(session: Session, experiment_id: str) -> str:
    """Recompute the experiment's stored status from its runs' states, with what the listing
    shows of them (ccbench.browse): run counts, and metric medians when a run got done.

    The experiment's row is locked before the runs are counted: two runs finishing at once on
    two workers each count the other's run as still active when they count first, and the
    one that writes last leaves a finished experiment `running` for good (seen in the scale-out
    test: 12 of 12 runs done, the experiment running 240 s later). Counted after the lock,
    in PostgreSQL's read committed, the second sees the first's committed run."""
    experiment = session.get(Experiment, experiment_id, with_for_update=True)
    assert experiment is not None
    rows = session.execute(
        select(Run.status, func.count())
        .where(Run.experiment_id == experiment_id)
        .group_by(Run.status)
    ).all()
    counts = {RunStatus(status): n for status, n in rows}
    status = experiment_status(counts, experiment.cancel_requested_at is not None).value
    if experiment.status != status:
        experiment.status = status
    listed = listed_counts(counts)
    if listed.get("done", 0) != experiment.status_counts.get("done", 0):
        experiment.summary = metric_medians(session, experiment_id)
    if experiment.status_counts != listed:
        experiment.status_counts = listed
    return status


def heartbeat(session: Session, run_id: str, attempt: int, now: datetime | None = None) -> bool:
    """Refresh the run's heartbeat; False when the run is no longer this attempt's to run."""
    result = session.execute(
        update(Run)
        .where(
            Run.id == run_id,
            Run.attempt == attempt,
            Run.status.in_([s.value for s in ACTIVE]),
        )
        .values(heartbeat_at=now or utcnow())
        .execution_options(synchronize_session=False)
    )
    assert isinstance(result, CursorResult)
    return result.rowcount == 1


def cancel_queued(session: Session, experiment_id: str, reason: str = "cancelled by user") -> int:
    """Cancel every run of the experiment that no worker has claimed yet; how many were."""
    queued = Run.experiment_id == experiment_id, Run.status == RunStatus.queued.value
    reserved = select(HostReservation.run_id).join(Run, Run.id == HostReservation.run_id)
    release_hosts(session, list(session.scalars(reserved.where(*queued))))
    result = session.execute(
        update(Run)
        .where(*queued)
        .values(status=RunStatus.cancelled.value, finished_at=utcnow(), error=reason)
        .execution_options(synchronize_session=False)
    )
    assert isinstance(result, CursorResult)
    return result.rowcount


def active_attempts(session: Session) -> list[tuple[str, int]]:
    """Runs a worker is executing now (provisioning .. analyzing), each with the attempt."""
    rows = session.execute(
        select(Run.id, Run.attempt).where(Run.status.in_([s.value for s in ACTIVE]))
    ).all()
    return [(run_id, attempt) for run_id, attempt in rows]
