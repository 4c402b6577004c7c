"""REST endpoints of runs: the runs the team may read; one run with its flows, time series
and provenance; its log, its files and its bundle."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, PlainTextResponse, StreamingResponse

from api.auth import CurrentTeam
from api.deps import DbSession
from api.errors import AUTHENTICATED, NOT_FOUND
from api.experiments.schemas import ID_PREFIX_HELP, PAGE_MAX, PAGE_SIZE_MAX, Page
from api.runs import bundle, repository, service
from api.runs.schemas import RunDetail, RunFile, RunListed
from ccbench.runstate import RunStatus
from schemas.limits import ID_LENGTH

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=AUTHENTICATED)


@router.get("", response_model=Page[RunListed])
def list_runs(
    session: DbSession,
    team: CurrentTeam,
    id_prefix: Annotated[
        str | None, Query(max_length=ID_LENGTH, description=ID_PREFIX_HELP)
    ] = None,
    experiment_id: Annotated[
        str | None, Query(max_length=ID_LENGTH, description="only this experiment's runs")
    ] = None,
    status_: Annotated[RunStatus | None, Query(alias="status")] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
    page_size: Annotated[int, Query(ge=1, le=PAGE_SIZE_MAX)] = 50,
) -> Page[RunListed]:
    """The runs the team may read (its own, shared with it, public): newest experiment
    first, each experiment's in matrix order."""
    runs, total = repository.list_for_team(
        session,
        team.id,
        id_prefix=id_prefix,
        experiment_id=experiment_id,
        status=status_.value if status_ else None,
        offset=(page - 1) * page_size,
        limit=page_size,
    )
    items = [RunListed.model_validate(r, from_attributes=True) for r in runs]
    return Page(items=items, total=total, page=page, page_size=page_size)


@router.get("/{run_id}", response_model=RunDetail, responses=NOT_FOUND)
def get_run(run_id: str, session: DbSession, team: CurrentTeam, series: bool = True) -> RunDetail:
    return service.run_detail(session, team, run_id, series=series)


@router.get("/{run_id}/log", response_class=PlainTextResponse, responses=NOT_FOUND)
def get_run_log(run_id: str, session: DbSession, team: CurrentTeam) -> PlainTextResponse:
    return PlainTextResponse(service.run_log(session, team, run_id))


@router.get("/{run_id}/files", response_model=list[RunFile], responses=NOT_FOUND)
def list_run_files(run_id: str, session: DbSession, team: CurrentTeam) -> list[RunFile]:
    """The raw files of the run's latest attempt, whichever machine ran it."""
    return service.run_files(session, team, run_id)


@router.get(
    "/{run_id}/files/{name}",
    response_class=FileResponse,
    responses={**NOT_FOUND, 200: {"content": {"application/octet-stream": {}}}},
)
def get_run_file(run_id: str, name: str, session: DbSession, team: CurrentTeam) -> FileResponse:
    path = service.run_file(session, team, run_id, name)
    return FileResponse(path, media_type="application/octet-stream", filename=path.name)


BUNDLE_TYPE = "application/gzip"


@router.get(
    "/{run_id}/bundle",
    response_class=StreamingResponse,
    responses={**NOT_FOUND, 200: {"content": {BUNDLE_TYPE: {}}}},
)
def get_run_bundle(run_id: str, session: DbSession, team: CurrentTeam) -> StreamingResponse:
    """Everything of the run in one .tar.gz: run.json, spec.json, submission.json (runs the
    experiment again), provenance.json, series/, files/ (logs, agents' outputs, packet logs)
    and SHA256SUMS, streamed as it is written."""
    return bundle_response(*service.bundle(session, team, run_id))


def bundle_response(root: str, members: list[bundle.Member]) -> StreamingResponse:
    """The streamed bundle as a download (also served to the run page, api/web)."""
    return StreamingResponse(
        bundle.stream(root, members),
        media_type=BUNDLE_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{root}.tar.gz"'},
    )
