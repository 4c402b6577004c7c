"""Bearer API tokens (ccbench.teams): the request's team, or 401."""

from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from api.deps import get_session
from ccbench.db.models import Team
from ccbench.errors import Unauthorized
from ccbench.teams import authenticate

_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer ccb_...`")


def current_team(
    session: Annotated[Session, Depends(get_session)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Team:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    team = authenticate(session, credentials.credentials)
    if team is None:
        raise Unauthorized("invalid or revoked API token")
    return team


CurrentTeam = Annotated[Team, Depends(current_team)]
