"""Queries on experiments and their runs, always scoped to one team."""

from collections.abc import Sequence

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ccbench.db.models import Experiment, ExperimentTag, Run


def get_for_team(session: Session, team_id: str, experiment_id: str) -> Experiment | None:
    return session.scalar(
        select(Experiment).where(Experiment.id == experiment_id, Experiment.team_id == team_id)
    )


def list_for_team(
    session: Session,
    team_id: str,
    *,
    status: str | None,
    name: str | None,
    tag: str | None,
    id_prefix: str | None = None,
    offset: int,
    limit: int,
) -> tuple[Sequence[Experiment], int]:
    query: Select[tuple[Experiment]] = select(Experiment).where(Experiment.team_id == team_id)
    if status:
        query = query.where(Experiment.status == status)
    if id_prefix:
        query = query.where(Experiment.id.startswith(id_prefix, autoescape=True))
    if name:
        query = query.where(Experiment.name.contains(name, autoescape=True))
    if tag:
        query = query.where(
            Experiment.id.in_(select(ExperimentTag.experiment_id).where(ExperimentTag.tag == tag))
        )
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(
        query.order_by(Experiment.created_at.desc(), Experiment.id).offset(offset).limit(limit)
    ).all()
    return page, total


def runs_of(session: Session, experiment_id: str) -> Sequence[Run]:
    return session.scalars(
        select(Run).where(Run.experiment_id == experiment_id).order_by(Run.order_index)
    ).all()


def status_counts(session: Session, experiment_id: str) -> dict[str, int]:
    rows = session.execute(
        select(Run.status, func.count())
        .where(Run.experiment_id == experiment_id)
        .group_by(Run.status)
    ).all()
    return {status: n for status, n in rows}
