"""Teams and their API tokens. A token belongs to one team; a request sees that team's
resources and those other teams shared with it (ccbench.sharing). Only a token's SHA-256 is
stored: the secret is shown once, when it is created. A token may expire; a revoked or expired
token is refused at once. Its scope bounds what it may do: `read` reads, `write` also submits
and changes the team's experiments (and its host inventory), `admin` also manages the team's
tokens and shares its resources with other teams."""

import hashlib
import secrets
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from ccbench.access import Scope
from ccbench.db.models import ApiToken, Team, utcnow
from ccbench.errors import Conflict, Forbidden, NotFound, ValidationFailed
from schemas.limits import NAME_MAX

TOKEN_PREFIX = "ccb_"


def require_scope(token: ApiToken, needed: Scope) -> None:
    """Forbidden unless the token's scope covers `needed`."""
    if not Scope(token.scope).allows(needed):
        raise Forbidden(
            f"this token's scope is {token.scope}: it needs {needed.value} (create one with "
            f"`ccbench tokens create NAME --scope {needed.value}`)"
        )


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def authenticate(session: Session, token: str) -> ApiToken | None:
    """A valid token (not revoked, not expired) with its team; None otherwise."""
    return session.scalar(
        select(ApiToken).where(
            ApiToken.token_hash == hash_token(token),
            ApiToken.revoked_at.is_(None),
            or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > utcnow()),
        )
    )


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


def create_token(
    session: Session,
    team: Team,
    name: str,
    expires_at: datetime | None = None,
    scope: Scope = Scope.admin,
) -> str:
    """Store a new token for the team and return its secret (shown only this once). The
    operator's command (`ccbench admin create-token`) makes admin tokens by default."""
    return issue_token(session, team, name, expires_at, scope)[1]


def issue_token(
    session: Session,
    team: Team,
    name: str,
    expires_at: datetime | None = None,
    scope: Scope = Scope.read,
) -> tuple[ApiToken, str]:
    """A new token of the team: its row and its secret (shown only this once)."""
    _check_name("name", name)
    if expires_at is not None and (expires_at.tzinfo is None or expires_at <= utcnow()):
        raise ValidationFailed.field("expires_at", "must be a future time with its time zone")
    secret = new_token_secret()
    token = ApiToken(team_id=team.id, name=name, token_hash=hash_token(secret),
                     expires_at=expires_at, scope=Scope(scope).value)  # fmt: skip
    session.add(token)
    session.flush()
    return token, secret


def ensure_bootstrap(session: Session, team_name: str, secret: str) -> Team:
    """The team `team_name` and a token with exactly this secret, created when missing (a
    deployment's first start; idempotent on every later one). The secret comes from the
    deployment's secrets (CCBENCH_BOOTSTRAP_TOKEN), so its operator knows it."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) < len(TOKEN_PREFIX) + 24:
        raise ValidationFailed.field(
            "CCBENCH_BOOTSTRAP_TOKEN", f"must start with {TOKEN_PREFIX} and have 24 characters "
            "after it (e.g. `ccbench admin secret-key`'s output behind the prefix)",
        )  # fmt: skip
    team = session.scalar(select(Team).where(Team.name == team_name))
    if team is None:
        team = create_team(session, team_name)
    digest = hash_token(secret)
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if token is None:
        session.add(ApiToken(team_id=team.id, name="bootstrap", token_hash=digest,
                             scope=Scope.admin.value))  # fmt: skip
        session.flush()
    elif token.team_id != team.id:
        raise Conflict("CCBENCH_BOOTSTRAP_TOKEN already belongs to another team")
    return team


def list_tokens(session: Session, team: Team) -> Sequence[ApiToken]:
    return session.scalars(
        select(ApiToken).where(ApiToken.team_id == team.id).order_by(ApiToken.created_at)
    ).all()


def revoke_token(session: Session, team: Team, token_id: str) -> ApiToken:
    """Revoke one of the team's tokens (from then on it is refused); revoking twice is fine."""
    token = session.scalar(
        select(ApiToken).where(ApiToken.id == token_id, ApiToken.team_id == team.id)
    )
    if token is None:
        raise NotFound(f"token {token_id} not found")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        session.flush()
    return token
