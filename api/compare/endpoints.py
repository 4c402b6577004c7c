"""GET /v1/compare: one metric across runs, matrix points and experiments the team may read."""

from typing import Annotated

from fastapi import APIRouter, Query

from api.auth import CurrentTeam
from api.compare import service
from api.compare.schemas import CrossComparison, Scope
from api.deps import DbSession
from api.errors import AUTHENTICATED, NOT_FOUND
from schemas.limits import AXIS_PATH_MAX

router = APIRouter(prefix="/v1", tags=["compare"], responses=AUTHENTICATED)


@router.get("/compare", response_model=CrossComparison, responses=NOT_FOUND)
def compare(
    session: DbSession,
    team: CurrentTeam,
    metric: Annotated[str, Query(max_length=64, description="a metric of schemas/metrics.py")],
    x: Annotated[
        str,
        Query(
            max_length=AXIS_PATH_MAX,
            description="a spec field path (e.g. topology."
            "bottleneck.buffer, flows[*].algorithm) or experiment; with scope=flow also flow "
            "or algorithm",
        ),
    ],
    experiment: Annotated[
        list[str], Query(max_length=32, description="every run of this experiment (id or prefix)")
    ] = [],  # noqa: B006
    point: Annotated[
        list[str], Query(max_length=40, description="EXPERIMENT:POINT_INDEX: one matrix point")
    ] = [],  # noqa: B006
    run: Annotated[list[str], Query(max_length=32, description="one run (id or prefix)")] = [],  # noqa: B006
    by: Annotated[
        str | None,
        Query(
            max_length=AXIS_PATH_MAX,
            description="one series per value of this (as x); "
            "default: experiment when several are compared",
        ),
    ] = None,
    scope: Annotated[
        Scope, Query(description="aggregate: the run's metric; flow: each flow's")
    ] = "aggregate",
) -> CrossComparison:
    """One metric (median ± SIQR over the runs, or flows, that fall on each point) against a
    field of the runs' specs, a series per value of another, across experiments of any team
    that shared them. `permalink` is the same comparison as a page."""
    selection = service.Selection(experiments=experiment, runs=run, points=point)
    return service.compare(session, team, selection, metric=metric, x=x, by=by, scope=scope)
