"""Queries on runs, scoped to the team that owns their experiment."""

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from ccbench.db.models import Experiment, Run, RunSeries


def get_for_team(session: Session, team_id: str, run_id: str) -> Run | None:
    return session.scalar(
        select(Run)
        .join(Experiment, Experiment.id == Run.experiment_id)
        .where(Run.id == run_id, Experiment.team_id == team_id)
    )


def series_of(session: Session, run_id: str) -> Sequence[RunSeries]:
    return session.scalars(
        select(RunSeries).where(RunSeries.run_id == run_id).order_by(RunSeries.name)
    ).all()
