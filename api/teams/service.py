"""Teams and their API tokens (created from the CLI: `ccbench admin ...`)."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.auth import hash_token, new_token_secret
from api.errors import Conflict, NotFound
from ccbench.db.models import ApiToken, Team


def create_team(session: Session, name: str) -> Team:
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
    secret = new_token_secret()
    session.add(ApiToken(team_id=team.id, name=name, token_hash=hash_token(secret)))
    session.flush()
    return secret
