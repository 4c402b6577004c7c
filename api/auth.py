"""Bearer API tokens (ccbench.teams): the request's team, or 401; its scope, or 403.

`CurrentTeam` reads (any scope); `WritingTeam` submits and changes (write or admin);
`AdminTeam` manages tokens and shares (admin)."""

from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from api.deps import get_session
from ccbench.access import Scope
from ccbench.db.models import ApiToken, Team
from ccbench.errors import Unauthorized
from ccbench.teams import authenticate, require_scope

_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer ccb_...`")


def current_token(
    session: Annotated[Session, Depends(get_session)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiToken:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    token = authenticate(session, credentials.credentials)
    if token is None:
        raise Unauthorized("invalid, revoked or expired API token")
    return token


CurrentToken = Annotated[ApiToken, Depends(current_token)]


def current_team(token: CurrentToken) -> Team:
    return token.team


def writing_team(token: CurrentToken) -> Team:
    require_scope(token, Scope.write)
    return token.team


def admin_team(token: CurrentToken) -> Team:
    require_scope(token, Scope.admin)
    return token.team


CurrentTeam = Annotated[Team, Depends(current_team)]
WritingTeam = Annotated[Team, Depends(writing_team)]
AdminTeam = Annotated[Team, Depends(admin_team)]
