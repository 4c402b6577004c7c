"""REST endpoints of experiments: submit, browse, get, annotate, pin, share, run again, cancel,
report, compare (one experiment's axes), export."""

from typing import Annotated

from fastapi import APIRouter, Body, Header, Query, status
from fastapi.responses import PlainTextResponse, Response
from pydantic import AwareDatetime
from sqlalchemy.exc import IntegrityError

from api.auth import AdminTeam, CurrentTeam, WritingTeam
from api.deps import DbSession
from api.errors import AUTHENTICATED, CONFLICT, FORBIDDEN, NOT_FOUND
from api.experiments import service
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
    ExperimentPatch,
    ExperimentSummary,
    Page,
    Rerun,
    SharesBody,
)
from api.runs.repository import series_of_experiment
from ccbench import browse
from ccbench import experiments as submissions
from ccbench.access import Access
from ccbench.db.models import Experiment, Run
from ccbench.dispatch import dispatch_quietly
from ccbench.runstate import ExperimentStatus
from ccbench.settings import get_settings
from schemas import ExperimentReport, Submission
from schemas.limits import (
    AXIS_PATH_MAX,
    FACET_VALUE_MAX,
    ID_LENGTH,
    IDEMPOTENCY_KEY_MAX,
    NAME_MAX,
    TAG_MAX,
)

router = APIRouter(prefix="/v1/experiments", tags=["experiments"], responses=AUTHENTICATED)


@router.post(
    "", status_code=status.HTTP_201_CREATED, response_model=ExperimentCreated, responses=FORBIDDEN
)
def create_experiment(
    submission: Annotated[Submission, Body(description="An experiment spec or a matrix spec")],
    session: DbSession,
    team: WritingTeam,
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
    return _created(experiment, runs, idempotency_key, response)


def _created(
    experiment: Experiment, runs: list[Run], idempotency_key: str | None, response: Response
) -> ExperimentCreated:
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
        source_experiment_id=experiment.source_experiment_id,
    )


@router.get("", response_model=Page[ExperimentSummary])
def list_experiments(
    session: DbSession,
    team: CurrentTeam,
    q: Annotated[
        str | None,
        Query(
            max_length=NAME_MAX,
            description="text in the name, description, notes or a tag, or an id prefix",
        ),
    ] = None,
    name: Annotated[
        str | None, Query(max_length=NAME_MAX, description="substring of the name")
    ] = None,
    tag: Annotated[list[str], Query(max_length=TAG_MAX, description="has every tag")] = [],  # noqa: B006
    algorithm: Annotated[
        list[str], Query(max_length=32, description="a flow runs any of these algorithms")
    ] = [],  # noqa: B006
    param: Annotated[
        list[str],
        Query(
            max_length=AXIS_PATH_MAX + FACET_VALUE_MAX + 1,
            description="PATH=VALUE: a run's spec has this value there, e.g. "
            "topology.bottleneck.buffer=1bdp, flows[*].params.beta=0.5, topology.bottleneck."
            "delay=20ms (any unit); every one must match",
        ),
    ] = [],  # noqa: B006
    status_: Annotated[
        list[ExperimentStatus], Query(alias="status", description="any of these statuses")
    ] = [],  # noqa: B006
    created_after: Annotated[
        AwareDatetime | None, Query(description="created at or after (RFC 3339)")
    ] = None,
    created_before: Annotated[
        AwareDatetime | None, Query(description="created before (RFC 3339)")
    ] = None,
    team_: Annotated[
        str | None, Query(alias="team", max_length=NAME_MAX, description="owned by this team")
    ] = None,
    access: Annotated[
        Access | None,
        Query(
            description="own: the team's; shared: shared with it by name; public: made "
            "public by another team; none: all it may read"
        ),
    ] = None,
    pinned: Annotated[bool | None, Query(description="pinned by the team (or not)")] = None,
    testbed: Annotated[str | None, Query(max_length=32, description="testbed kind")] = None,
    sort: Annotated[
        str | None,
        Query(
            max_length=40,
            description="column, '-' first for descending: "
            + ", ".join(browse.SORT_KEYS)
            + "; default: pinned first, then newest",
        ),
    ] = None,
    id_prefix: Annotated[
        str | None, Query(max_length=ID_LENGTH, description=ID_PREFIX_HELP)
    ] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
    page_size: Annotated[int, Query(ge=1, le=PAGE_SIZE_MAX)] = 50,
) -> Page[ExperimentSummary]:
    """The experiments the team may read — its own, those other teams shared with it and
    public ones — filtered, sorted and a page at a time."""
    filters = browse.Filters(
        text=q,
        name=name,
        id_prefix=id_prefix,
        tags=tag,
        algorithms=algorithm,
        params=[browse.ParamFilter.parse(p, f"param.{i}") for i, p in enumerate(param)],
        statuses=[s.value for s in status_],
        created_after=created_after,
        created_before=created_before,
        team=team_,
        access=access,
        pinned=pinned,
        testbed=testbed,
    )
    key, descending = (sort[1:], True) if sort and sort.startswith("-") else (sort, False)
    items, total = browse.list_experiments(
        session, team.id, filters, sort=key or None, descending=descending,
        offset=(page - 1) * page_size, limit=page_size,
    )  # fmt: skip
    return Page(
        items=[service.summary(i) for i in items], total=total, page=page, page_size=page_size
    )


@router.get("/{experiment_id}", response_model=ExperimentDetail, responses=NOT_FOUND)
def get_experiment(experiment_id: str, session: DbSession, team: CurrentTeam) -> ExperimentDetail:
    """One experiment (by id or unique id prefix) with its runs and why any failed."""
    return service.detail(session, team, service.find(session, team, experiment_id))


@router.patch(
    "/{experiment_id}",
    response_model=ExperimentSummary,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def annotate_experiment(
    experiment_id: str, body: ExperimentPatch, session: DbSession, team: WritingTeam
) -> ExperimentSummary:
    """Change an experiment's name, description, notes or tags (the team's own)."""
    service.annotate(session, team, experiment_id, body)
    session.commit()
    return service.summary(service.find(session, team, experiment_id))


@router.put(
    "/{experiment_id}/pin",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def pin_experiment(experiment_id: str, session: DbSession, team: WritingTeam) -> Response:
    """Pin an experiment the team may read as a favourite: listed first by default."""
    service.pin(session, team, experiment_id, True)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete(
    "/{experiment_id}/pin",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def unpin_experiment(experiment_id: str, session: DbSession, team: WritingTeam) -> Response:
    service.pin(session, team, experiment_id, False)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{experiment_id}/shares", response_model=SharesBody, responses={**NOT_FOUND, **FORBIDDEN}
)
def get_shares(experiment_id: str, session: DbSession, team: CurrentTeam) -> SharesBody:
    """Who besides the owning team may read the experiment (the owner's to see)."""
    shares = service.shares(session, team, experiment_id)
    return SharesBody(public=shares.public, teams=shares.teams)


@router.put(
    "/{experiment_id}/shares", response_model=SharesBody, responses={**NOT_FOUND, **FORBIDDEN}
)
def set_shares(
    experiment_id: str, body: SharesBody, session: DbSession, team: AdminTeam
) -> SharesBody:
    """Share the experiment read-only with exactly these teams, and publicly or not (an admin
    token of the owning team). Whoever it is shared with sees it, its runs and their files, and
    may run it again into their own team; nobody but its team may change or cancel it."""
    shares = service.share(session, team, experiment_id, public=body.public, teams=body.teams)
    session.commit()
    return SharesBody(public=shares.public, teams=shares.teams)


@router.post(
    "/{experiment_id}/rerun",
    status_code=status.HTTP_201_CREATED,
    response_model=ExperimentCreated,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def rerun_experiment(
    experiment_id: str,
    session: DbSession,
    team: WritingTeam,
    response: Response,
    body: Annotated[Rerun | None, Body()] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1, max_length=IDEMPOTENCY_KEY_MAX, description="as for POST /v1/experiments"
        ),
    ] = None,
) -> ExperimentCreated:
    """Run an experiment again (the team's own, or one shared with it): its stored
    submission, changed by `edits`, becomes a new experiment of the caller's team linked to
    it. Without edits every run gets the seed it had. Its `Location` is the new experiment."""
    source = service.get_experiment(session, team, experiment_id)
    limit = get_settings().matrix_run_limit
    edits = body.edits if body else None
    try:
        experiment, runs = submissions.rerun(session, team, source, edits, run_limit=limit,
                                             idempotency_key=idempotency_key)  # fmt: skip
        session.commit()
    except IntegrityError:
        session.rollback()
        if idempotency_key is None:
            raise
        experiment, runs = submissions.rerun(session, team, source, edits, run_limit=limit,
                                             idempotency_key=idempotency_key)  # fmt: skip
    return _created(experiment, runs, idempotency_key, response)


@router.post(
    "/{experiment_id}/cancel",
    response_model=ExperimentSummary,
    responses={**NOT_FOUND, **FORBIDDEN, **CONFLICT},
)
def cancel_experiment(
    experiment_id: str, session: DbSession, team: WritingTeam
) -> ExperimentSummary:
    """Cancel the team's own experiment: queued runs at once, active ones at their next
    check."""
    experiment = service.cancel_experiment(session, team, experiment_id)
    session.commit()
    return service.summary(service.find(session, team, experiment.id))


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
