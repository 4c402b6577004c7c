"""Teams and their API tokens. A token belongs to one team; everything a request sees is that
team's. Only a token's SHA-256 is stored: the secret is shown once, when it is created."""

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from ccbench.db.models import ApiToken, Team
from ccbench.errors import Conflict, NotFound, ValidationFailed
from schemas.limits import NAME_MAX

TOKEN_PREFIX = "ccb_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def authenticate(session: Session, token: str) -> Team | None:
    """The team of a valid, unrevoked token; None otherwise."""
    row = session.scalar(
        select(ApiToken).where(
            ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None)
        )
    )
    return row.team if row else None


def _check_name(field: str, name: str) -> None:
    if not 0 < len(name) <= NAME_MAX:
        raise ValidationFailed.field(field, f"1 to {NAME_MAX} characters, got {len(name)}")


def create_team(session: Session, name: str) -> Team:
    _check_name("name", name)
    if session.scalar(select(Team).where(Team.name == name)) is not None:
        raise Conflict(f"team {name!r} already exists")
    team = Team(name=name)
    session.add(team)
    session.flush()
    return team


def get_team_by_name(session: Session, name: str) -> Team:
    team = session.scalar(select(Team).where(Team.name == name))
    if team is None:
        raise NotFound(f"team {name!r} not found")
    return team


def create_token(session: Session, team: Team, name: str) -> str:
    """Store a new token for the team and return its secret (shown only this once)."""
    _check_name("name", name)
    secret = new_token_secret()
    session.add(ApiToken(team_id=team.id, name=name, token_hash=hash_token(secret)))
    session.flush()
    return secret
