"""Request and response shapes of the teams domain: who am I, the team's API tokens."""

from datetime import datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.limits import NAME_MAX


class Me(BaseModel):
    team_id: str
    team_name: str


class TokenOut(BaseModel):
    """A token as listed: never its secret."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=NAME_MAX)
    expires_at: AwareDatetime | None = Field(
        None, description="when the token stops working (RFC 3339 with an offset); none: never"
    )


class TokenCreated(TokenOut):
    token: str = Field(description="the secret: shown this once, send it as a bearer token")
