"""Request and response shapes of the teams domain: who am I, the team's API tokens."""

from datetime import datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from ccbench.access import Scope
from schemas.limits import NAME_MAX


class Me(BaseModel):
    team_id: str
    team_name: str
    scope: Scope = Field(description="what the token of this request may do")


class TokenOut(BaseModel):
    """A token as listed: never its secret."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    scope: Scope = Field(
        description="read: reads; write: also submits and changes the team's experiments "
        "and hosts; admin: also manages tokens and shares"
    )
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=NAME_MAX)
    scope: Scope = Field(Scope.read, description="what the new token may do (default: read)")
    expires_at: AwareDatetime | None = Field(
        None, description="when the token stops working (RFC 3339 with an offset); none: never"
    )


class TokenCreated(TokenOut):
    token: str = Field(description="the secret: shown this once, send it as a bearer token")
