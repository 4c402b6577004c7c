"""A campaign's life: created (checked against the team's hosts, the experiment and the
schedule before anything is stored), paused and resumed, rescheduled, stopped. Services never
commit: the caller does."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from ccbench.campaigns.paths import resolve, submission_for
from ccbench.campaigns.schedule import next_instant
from ccbench.db.models import Campaign, Team, utcnow
from ccbench.errors import Conflict, ValidationFailed
from schemas import ExperimentSpec, MatrixSpec, errors_of
from schemas.campaign import (
    CampaignSpec,
    CampaignState,
    IntervalSchedule,
    Schedule,
    stored_campaign,
)


def create_campaign(session: Session, team: Team, spec: CampaignSpec) -> Campaign:
    paths = resolve(session, team.id, spec.hosts)
    experiment = submission_for(spec, paths[0])
    base = experiment.base if isinstance(experiment, MatrixSpec) else experiment
    _check_schedule(spec.schedule, base, spec.stop)
    now = utcnow()
    start = spec.start or now
    stored = spec.model_copy(update={"start": start})
    seed = spec.seed if spec.seed is not None else secrets.randbelow(2**31)
    campaign = Campaign(team_id=team.id, name=spec.name, spec=stored.model_dump(mode="json"),
                        state=CampaignState.active, seed=seed)  # fmt: skip
    # A start in the past anchors the schedule; its instants before now were never due.
    anchor = max(start, now) - timedelta(microseconds=1)
    if start < now:
        campaign.last_due_at = anchor
    _schedule_from(campaign, stored, anchor)
    session.add(campaign)
    session.flush()
    return campaign


def _check_schedule(schedule: Schedule, base: ExperimentSpec, stop: datetime | None) -> None:
    """An interval shorter than one run of the experiment would overlap itself; a stop in
    the past leaves nothing to run."""
    if stop is not None and stop <= utcnow():
        raise ValidationFailed.field("stop", "already past")
    if isinstance(schedule, IntervalSchedule) and schedule.every < base.duration:
        raise ValidationFailed.field(
            "schedule.every",
            f"{schedule.every:g} s is shorter than the experiment's runs ({base.duration:g} s)",
        )


def _schedule_from(campaign: Campaign, spec: CampaignSpec, after: datetime) -> None:
    assert spec.start is not None
    try:
        upcoming = next_instant(spec.schedule, spec.start, campaign.seed, after)
    except ValueError as exc:
        raise ValidationFailed.field("schedule", str(exc)) from exc
    if spec.stop is not None and upcoming > spec.stop:
        raise ValidationFailed.field("stop", "no occurrence of the schedule comes before it")
    campaign.next_due_at = upcoming


def pause(campaign: Campaign) -> None:
    if campaign.state != CampaignState.active:
        raise Conflict(f"campaign {campaign.id} is {campaign.state}: only an active one pauses")
    campaign.state = CampaignState.paused


def resume(campaign: Campaign, now: datetime | None = None) -> None:
    """Active again from now: the instants that passed while it was paused are not run."""
    if campaign.state != CampaignState.paused:
        raise Conflict(f"campaign {campaign.id} is {campaign.state}: only a paused one resumes")
    now = now or utcnow()
    spec = stored_campaign(campaign.spec)
    campaign.state = CampaignState.active
    campaign.last_due_at = max(campaign.last_due_at or now, now)
    _schedule_from(campaign, spec, campaign.last_due_at)


def reschedule(
    session: Session, campaign: Campaign, changes: dict[str, Any], now: datetime | None = None
) -> None:
    """A new schedule, stop, count, catch-up policy or description (the campaign validated as
    a whole), from now on."""
    now = now or utcnow()
    if campaign.state in (CampaignState.stopped, CampaignState.finished):
        raise Conflict(f"campaign {campaign.id} is {campaign.state}")
    try:
        spec = stored_campaign({**campaign.spec, **changes})
    except ValidationError as exc:
        errors = [{"field": e["loc"], "reason": e["msg"]} for e in errors_of(exc)]
        raise ValidationFailed.of(errors, "invalid campaign") from exc
    paths = resolve(session, campaign.team_id, spec.hosts)
    experiment = submission_for(spec, paths[0])
    base = experiment.base if isinstance(experiment, MatrixSpec) else experiment
    _check_schedule(spec.schedule, base, spec.stop)
    campaign.spec = spec.model_dump(mode="json")
    if campaign.state == CampaignState.active:
        _schedule_from(campaign, spec, max(campaign.last_due_at or now, now))


def stop(campaign: Campaign) -> None:
    """No occurrence after this; its experiments keep running (cancel them to stop them)."""
    if campaign.state in (CampaignState.stopped, CampaignState.finished):
        raise Conflict(f"campaign {campaign.id} is already {campaign.state}")
    campaign.state, campaign.next_due_at = CampaignState.stopped, None
