"""Endpoints for ccbench's own workers, not for teams: a worker on another machine uploads its
run files here (ccbench.artifacts), authorised by the secret the API and the workers share
(CCBENCH_WORKER_TOKEN). Without that setting the routes refuse everything."""

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.deps import DbSession
from api.errors import AUTHENTICATED, NOT_FOUND
from ccbench import artifacts
from ccbench.db.models import Run
from ccbench.errors import NotFound, Unauthorized
from ccbench.settings import get_settings

_bearer = HTTPBearer(auto_error=False, description="CCBENCH_WORKER_TOKEN, shared by workers")


def worker(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    expected = get_settings().worker_token
    given = credentials.credentials if credentials else ""
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized("a worker token (CCBENCH_WORKER_TOKEN) is required here")


router = APIRouter(
    prefix="/v1/internal", tags=["internal"], responses=AUTHENTICATED,
    dependencies=[Depends(worker)],
)  # fmt: skip


@router.put(
    "/runs/{run_id}/attempts/{attempt}/files/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=NOT_FOUND,
)
async def put_run_file(
    run_id: str,
    attempt: Annotated[int, Path(ge=1, le=1000)],
    name: str,
    request: Request,
    session: DbSession,
) -> None:
    """Store one file of a run attempt (the request body, any size up to
    CCBENCH_ARTIFACT_MAX_BYTES), replacing an earlier upload of it."""
    if session.get(Run, run_id) is None:
        raise NotFound(f"run {run_id} not found")
    await artifacts.store(run_id, attempt, name, request.stream(),
                          get_settings().artifact_max_bytes)  # fmt: skip
