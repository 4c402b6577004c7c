"""Bearer API tokens. A token belongs to one team; everything a request sees is that team's."""

import hashlib
import secrets
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.deps import get_session
from api.errors import Unauthorized
from ccbench.db.models import ApiToken, Team

TOKEN_PREFIX = "ccb_"

_bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer ccb_...`")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def authenticate(session: Session, token: str) -> Team | None:
    row = session.scalar(
        select(ApiToken).where(
            ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None)
        )
    )
    return row.team if row else None


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
