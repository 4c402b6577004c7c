"""Response shapes of the campaigns endpoints (the spec and report shapes live in schemas/)."""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ccbench.access import Access
from schemas.campaign import CampaignState, OccurrenceState


class CampaignSummary(BaseModel):
    id: str
    name: str
    team: str = Field(description="the team that owns it")
    access: Access = Field(description="own, shared with the caller's team by name, or public")
    state: CampaignState
    schedule: dict[str, Any]
    next_due_at: datetime | None = Field(description="when the next occurrence fires")
    fired: int = Field(description="occurrences that created their experiments")
    missed: int = Field(description="occurrences no scheduler was running for")
    failed: int = Field(description="occurrences refused at their time (e.g. a host gone)")
    created_at: datetime
    updated_at: datetime


class OccurrenceExperiment(BaseModel):
    id: str
    path: str | None
    status: str
    run_count: int


class OccurrenceOut(BaseModel):
    id: str
    due_at: datetime
    state: OccurrenceState
    fired_at: datetime | None
    error: str | None
    experiments: list[OccurrenceExperiment]


class CampaignDetail(CampaignSummary):
    spec: dict[str, Any] = Field(description="the campaign as stored (its start filled in)")
    seed: int = Field(description="draws the random schedule's instants")
    upcoming: list[datetime] = Field(description="the next few instants of the schedule")
    recent_failures: list[OccurrenceOut] = Field(
        description="the latest failed occurrences, newest first, with their reasons"
    )
