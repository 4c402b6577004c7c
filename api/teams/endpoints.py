"""Who am I (the team behind the token), and the team's API tokens: list, create, revoke."""

from fastapi import APIRouter, Response, status

from api.auth import AdminTeam, CurrentTeam, CurrentToken
from api.deps import DbSession
from api.errors import AUTHENTICATED, FORBIDDEN, NOT_FOUND
from api.teams.schemas import Me, TokenCreate, TokenCreated, TokenOut
from ccbench import teams

router = APIRouter(prefix="/v1", tags=["teams"], responses=AUTHENTICATED)


@router.get("/me", response_model=Me)
def me(token: CurrentToken) -> Me:
    return Me(team_id=token.team.id, team_name=token.team.name, scope=token.scope)


@router.get("/tokens", response_model=list[TokenOut])
def list_tokens(session: DbSession, team: CurrentTeam) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in teams.list_tokens(session, team)]


@router.post(
    "/tokens",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreated,
    responses=FORBIDDEN,
)
def create_token(body: TokenCreate, session: DbSession, team: AdminTeam) -> TokenCreated:
    """A new token of the team (an admin token's to create), with a scope and an expiry."""
    token, secret = teams.issue_token(session, team, body.name, body.expires_at, body.scope)
    session.commit()
    return TokenCreated(**TokenOut.model_validate(token).model_dump(), token=secret)


@router.delete(
    "/tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def revoke_token(token_id: str, session: DbSession, team: AdminTeam) -> Response:
    """Revoke a token: requests with it are refused from now on (this one's own included)."""
    teams.revoke_token(session, team, token_id)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
