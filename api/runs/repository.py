"""Queries on runs, of the experiments a team may read (ccbench.browse.visible)."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ccbench.browse import id_matches, id_starts, visible
from ccbench.db.models import Experiment, Run, RunSeries


def find_for_team(session: Session, team_id: str, run_id: str) -> Sequence[Run]:
    """The runs with this id, or this id prefix (at most 6), that the team may read."""
    return session.scalars(
        select(Run)
        .join(Experiment, Experiment.id == Run.experiment_id)
        .where(
            id_matches(Run.id, run_id),
            visible(team_id),
        )
        .order_by(Run.id)
        .limit(6)
    ).all()


def list_for_team(
    session: Session,
    team_id: str,
    *,
    id_prefix: str | None,
    experiment_id: str | None,
    status: str | None,
    offset: int,
    limit: int,
) -> tuple[Sequence[Run], int]:
    """A page of the runs the team may read (newest experiment first, then matrix order) and
    the total."""
    query: Select[tuple[Run]] = (
        select(Run).join(Experiment, Experiment.id == Run.experiment_id).where(visible(team_id))
    )
    if id_prefix:
        query = query.where(id_starts(Run.id, id_prefix))
    if experiment_id:
        query = query.where(Run.experiment_id == experiment_id)
    if status:
        query = query.where(Run.status == status)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    order = (Experiment.created_at.desc(), Experiment.id, Run.order_index)
    return session.scalars(query.order_by(*order).offset(offset).limit(limit)).all(), total


def series_of(session: Session, run_id: str) -> Sequence[RunSeries]:
    return session.scalars(
        select(RunSeries).where(RunSeries.run_id == run_id).order_by(RunSeries.name)
    ).all()


def series_of_experiment(
    session: Session, experiment_id: str
) -> dict[str, dict[str, dict[str, Any]]]:
    """Every stored series of an experiment's runs: run id -> series name -> columns."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    rows = session.scalars(
        select(RunSeries)
        .join(Run, Run.id == RunSeries.run_id)
        .where(Run.experiment_id == experiment_id)
        .order_by(RunSeries.run_id, RunSeries.name)
    )
    for row in rows:
        out.setdefault(row.run_id, {})[row.name] = row.data
    return out
