"""What a comparison reads: one number per run (or per flow) and one spec per matrix point —
never whole runs, so ten experiments of a thousand runs stay one query each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, false, or_, select
from sqlalchemy.orm import Session

from ccbench.db.models import FlowResult, Run


@dataclass(frozen=True)
class Value:
    run_id: str
    experiment_id: str
    point_index: int
    status: str
    flow: int | None  # the flow's index (per-flow metrics), None for the aggregate
    algorithm: str | None
    value: float | None


def selected(
    experiments: Sequence[str], points: dict[str, set[int]], runs: Sequence[str]
) -> ColumnElement[bool]:
    """Runs of whole experiments, of chosen matrix points, or chosen one by one."""
    clauses: list[ColumnElement[bool]] = []
    if experiments:
        clauses.append(Run.experiment_id.in_(list(experiments)))
    clauses += [and_(Run.experiment_id == e, Run.point_index.in_(sorted(indexes)))
                for e, indexes in points.items()]  # fmt: skip
    if runs:
        clauses.append(Run.id.in_(list(runs)))
    return or_(*clauses) if clauses else false()


def aggregate_values(session: Session, where: ColumnElement[bool], metric: str) -> list[Value]:
    rows = session.execute(
        select(
            Run.id,
            Run.experiment_id,
            Run.point_index,
            Run.status,
            Run.aggregate["aggregate"][metric].as_float(),
        ).where(where)  # fmt: skip
    ).all()
    return [Value(r[0], r[1], r[2], r[3], None, None, r[4]) for r in rows]


def flow_values(session: Session, where: ColumnElement[bool], metric: str) -> list[Value]:
    rows = session.execute(
        select(Run.id, Run.experiment_id, Run.point_index, Run.status, FlowResult.flow_index,
               FlowResult.algorithm, FlowResult.metrics[metric].as_float())
        .join(FlowResult, FlowResult.run_id == Run.id)
        .where(where)
    ).all()  # fmt: skip
    return [Value(*r) for r in rows]


def point_specs(
    session: Session, points: dict[str, set[int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The spec of each matrix point (its first repetition's: repetitions differ only in
    their seed)."""
    if not points:
        return {}
    where = or_(*(and_(Run.experiment_id == e, Run.point_index.in_(sorted(indexes)))
                  for e, indexes in points.items()))  # fmt: skip
    rows = session.execute(
        select(Run.experiment_id, Run.point_index, Run.spec).where(where, Run.repetition == 0)
    ).all()
    return {(e, p): spec for e, p, spec in rows}
