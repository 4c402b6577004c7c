"""REST endpoints of runs: one run with its flows, time series and provenance; its log."""

from fastapi import APIRouter
from fastapi.responses import FileResponse, PlainTextResponse

from api.auth import CurrentTeam
from api.deps import DbSession
from api.errors import AUTHENTICATED, NOT_FOUND
from api.runs import service
from api.runs.schemas import RunDetail, RunFile

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=AUTHENTICATED)


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
