"""REST endpoints of experiments: submit, list, get, cancel, report."""

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query, status
from fastapi.responses import PlainTextResponse, Response
from sqlalchemy.exc import IntegrityError

from api.auth import CurrentTeam
from api.deps import DbSession
from api.errors import AUTHENTICATED, CONFLICT, NOT_FOUND
from api.experiments import repository, service
from api.experiments.export import (
    Comparison,
    RunSeriesData,
    Table,
    compare,
    export_csv,
    export_parquet,
)
from api.experiments.report import build_experiment_report
from api.experiments.schemas import (
    ID_PREFIX_HELP,
    PAGE_MAX,
    PAGE_SIZE_MAX,
    ExperimentCreated,
    ExperimentDetail,
    ExperimentSummary,
    Page,
    RunSummary,
)
from api.runs.repository import series_of_experiment
from ccbench import experiments as submissions
from ccbench.db.models import Experiment
from ccbench.dispatch import dispatch_quietly
from ccbench.runstate import ExperimentStatus
from ccbench.settings import get_settings
from schemas import ExperimentReport, Submission
from schemas.limits import ID_LENGTH, IDEMPOTENCY_KEY_MAX, NAME_MAX, TAG_MAX

router = APIRouter(prefix="/v1/experiments", tags=["experiments"], responses=AUTHENTICATED)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=ExperimentCreated)
def create_experiment(
    submission: Annotated[Submission, Body(description="An experiment spec or a matrix spec")],
    session: DbSession,
    team: CurrentTeam,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=IDEMPOTENCY_KEY_MAX,
            description="a key of the client's choosing (e.g. a UUID): retrying the request "
            "with the same key and body returns the experiment the first one created, marked "
            "`Idempotent-Replayed: true`, instead of a duplicate",
        ),
    ] = None,
) -> ExperimentCreated:
    """Store the experiment and its runs; its `Location` is /v1/experiments/{id}."""
    limit = get_settings().matrix_run_limit
    try:
        experiment, runs = submissions.create_experiment(
            session, team, submission, run_limit=limit, idempotency_key=idempotency_key
        )
        session.commit()
    except IntegrityError:
        # The same key, committed by a concurrent request first: answer with its experiment.
        session.rollback()
        if idempotency_key is None:
            raise
        found = submissions.replayed(
            session, team, idempotency_key, submissions.submission_digest(submission)
        )
        if found is None:
            raise
        experiment, runs = found, []
    if runs:
        dispatch_quietly()  # else the next pass of any worker's dispatcher sends them
    elif idempotency_key is not None:
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/experiments/{experiment.id}"
    return ExperimentCreated(
        id=experiment.id,
        name=experiment.name,
        kind=experiment.kind,
        status=experiment.status,
        run_count=experiment.run_count,
    )


@router.get("", response_model=Page[ExperimentSummary])
def list_experiments(
    session: DbSession,
    team: CurrentTeam,
    status_: Annotated[ExperimentStatus | None, Query(alias="status")] = None,
    name: Annotated[
        str | None, Query(max_length=NAME_MAX, description="substring of the name")
    ] = None,
    tag: Annotated[str | None, Query(max_length=TAG_MAX)] = None,
    id_prefix: Annotated[
        str | None, Query(max_length=ID_LENGTH, description=ID_PREFIX_HELP)
    ] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
    page_size: Annotated[int, Query(ge=1, le=PAGE_SIZE_MAX)] = 50,
) -> Page[ExperimentSummary]:
    """The team's experiments, newest first."""
    items, total = repository.list_for_team(
        session,
        team.id,
        status=status_.value if status_ else None,
        name=name,
        tag=tag,
        id_prefix=id_prefix,
        offset=(page - 1) * page_size,
        limit=page_size,
    )
    return Page(items=[_with_tags(e) for e in items], total=total, page=page, page_size=page_size)


def _with_tags(experiment: Experiment) -> ExperimentSummary:
    return ExperimentSummary(
        id=experiment.id,
        name=experiment.name,
        description=experiment.description,
        kind=experiment.kind,
        status=experiment.status,
        run_count=experiment.run_count,
        tags=[t.tag for t in experiment.tags],
        created_at=experiment.created_at,
        updated_at=experiment.updated_at,
    )


@router.get("/{experiment_id}", response_model=ExperimentDetail, responses=NOT_FOUND)
def get_experiment(experiment_id: str, session: DbSession, team: CurrentTeam) -> ExperimentDetail:
    experiment = service.get_experiment(session, team, experiment_id)
    runs = repository.runs_of(session, experiment.id)
    summary = _with_tags(experiment)
    return ExperimentDetail(
        **summary.model_dump(),
        axes=list(experiment.axes),
        submission=experiment.submission,
        status_counts=repository.status_counts(session, experiment.id),
        runs=[RunSummary.model_validate(r, from_attributes=True) for r in runs],
    )


@router.post(
    "/{experiment_id}/cancel",
    response_model=ExperimentSummary,
    responses={**NOT_FOUND, **CONFLICT},
)
def cancel_experiment(
    experiment_id: str, session: DbSession, team: CurrentTeam
) -> ExperimentSummary:
    experiment = service.cancel_experiment(session, team, experiment_id)
    session.commit()
    return _with_tags(experiment)


@router.get("/{experiment_id}/compare", response_model=Comparison, responses=NOT_FOUND)
def experiment_compare(
    experiment_id: str,
    session: DbSession,
    team: CurrentTeam,
    metric: Annotated[str, Query(description="an aggregate metric, e.g. utilization")],
    x: Annotated[str, Query(description="the matrix axis on the x axis")],
    by: Annotated[str | None, Query(description="one series per value of this axis")] = None,
) -> Comparison:
    """One metric against one matrix axis (median and SIQR over repetitions)."""
    experiment = service.get_experiment(session, team, experiment_id)
    return compare(build_experiment_report(session, experiment), metric, x, by)


class CsvResponse(PlainTextResponse):
    media_type = "text/csv"


TABLE_HELP = (
    "runs (aggregate metrics), flows (per-flow metrics) or series (every run's time series in "
    "long form: series, variable, t_s, value)"
)


def _series(session: DbSession, experiment: Experiment, table: Table) -> RunSeriesData | None:
    return series_of_experiment(session, experiment.id) if table == "series" else None


@router.get(
    "/{experiment_id}/export.csv",
    response_class=CsvResponse,
    responses={**NOT_FOUND, 200: {"content": {"text/csv": {}}}},
)
def experiment_export(
    experiment_id: str,
    session: DbSession,
    team: CurrentTeam,
    table: Annotated[Table, Query(description=TABLE_HELP)] = "runs",
) -> CsvResponse:
    """The experiment's runs, flows or time series as CSV, axes as columns."""
    experiment = service.get_experiment(session, team, experiment_id)
    text = export_csv(build_experiment_report(session, experiment), table,
                      _series(session, experiment, table))  # fmt: skip
    return CsvResponse(text)


@router.get(
    "/{experiment_id}/export.parquet",
    response_class=Response,
    responses={**NOT_FOUND, 200: {"content": {"application/vnd.apache.parquet": {}}}},
)
def experiment_export_parquet(
    experiment_id: str,
    session: DbSession,
    team: CurrentTeam,
    table: Annotated[Table, Query(description=TABLE_HELP)] = "runs",
) -> Response:
    """The experiment's runs, flows or time series as Parquet, axes as columns."""
    experiment = service.get_experiment(session, team, experiment_id)
    data = export_parquet(build_experiment_report(session, experiment), table,
                          _series(session, experiment, table))  # fmt: skip
    return Response(data, media_type="application/vnd.apache.parquet")


@router.get("/{experiment_id}/report", response_model=ExperimentReport, responses=NOT_FOUND)
def experiment_report(
    experiment_id: str, session: DbSession, team: CurrentTeam
) -> ExperimentReport:
    experiment = service.get_experiment(session, team, experiment_id)
    return build_experiment_report(session, experiment)
