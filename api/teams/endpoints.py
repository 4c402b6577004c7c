"""Who am I: the team behind the token (lets a client check its token)."""

from fastapi import APIRouter
from pydantic import BaseModel

from api.auth import CurrentTeam
from api.errors import AUTHENTICATED

router = APIRouter(prefix="/v1", tags=["teams"], responses=AUTHENTICATED)


class Me(BaseModel):
    team_id: str
    team_name: str


@router.get("/me", response_model=Me)
def me(team: CurrentTeam) -> Me:
    return Me(team_id=team.id, team_name=team.name)
