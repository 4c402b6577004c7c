"""Queries on one experiment's runs (which experiments a team may read: ccbench.browse)."""

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ccbench.db.models import Run


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
