"""Campaign use cases of the API, scoped to the caller's team (the campaign's life itself is
the domain's, ccbench.campaigns). Services never commit: the endpoint does."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import islice

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from api.campaigns.schemas import (
    CampaignDetail,
    CampaignSummary,
    OccurrenceExperiment,
    OccurrenceOut,
)
from ccbench.campaigns.firing import remaining
from ccbench.campaigns.schedule import instants
from ccbench.db.models import Campaign, CampaignOccurrence, Experiment, Team, utcnow
from ccbench.errors import NotFound
from schemas.campaign import CampaignState, OccurrenceState, stored_campaign

UPCOMING = 5  # instants shown ahead
RECENT_FAILURES = 10


def get_campaign(session: Session, team: Team, campaign_id: str) -> Campaign:
    campaign = session.scalar(
        select(Campaign).where(Campaign.id == campaign_id, Campaign.team_id == team.id)
    )
    if campaign is None:
        raise NotFound(f"campaign {campaign_id} not found")
    return campaign


def list_campaigns(
    session: Session,
    team: Team,
    state: CampaignState | None,
    offset: int,
    limit: int,
    id_prefix: str | None = None,
) -> tuple[Sequence[Campaign], int]:
    query: Select[tuple[Campaign]] = select(Campaign).where(Campaign.team_id == team.id)
    if id_prefix:
        query = query.where(Campaign.id.startswith(id_prefix, autoescape=True))
    if state is not None:
        query = query.where(Campaign.state == state.value)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(
        query.order_by(Campaign.created_at.desc(), Campaign.id).offset(offset).limit(limit)
    ).all()
    return page, total


def summary(campaign: Campaign) -> CampaignSummary:
    return CampaignSummary(
        id=campaign.id,
        name=campaign.name,
        state=CampaignState(campaign.state),
        schedule=campaign.spec["schedule"],
        next_due_at=campaign.next_due_at,
        fired=campaign.fired,
        missed=campaign.missed,
        failed=campaign.failed,
        created_at=campaign.created_at,
        updated_at=campaign.updated_at,
    )


def detail(session: Session, campaign: Campaign) -> CampaignDetail:
    failures = session.scalars(
        select(CampaignOccurrence)
        .where(
            CampaignOccurrence.campaign_id == campaign.id,
            CampaignOccurrence.state == OccurrenceState.failed.value,
        )
        .order_by(CampaignOccurrence.due_at.desc())
        .limit(RECENT_FAILURES)
    ).all()
    return CampaignDetail(
        **summary(campaign).model_dump(),
        spec=campaign.spec,
        seed=campaign.seed,
        upcoming=upcoming(campaign),
        recent_failures=occurrences_out(session, list(failures)),
    )


def upcoming(campaign: Campaign, count: int = UPCOMING) -> list[datetime]:
    """The schedule's next instants (none unless the campaign is active)."""
    if campaign.state != CampaignState.active.value or campaign.next_due_at is None:
        return []
    spec = stored_campaign(campaign.spec)
    assert spec.start is not None
    after = max(campaign.next_due_at, utcnow())
    ahead = islice(instants(spec.schedule, spec.start, campaign.seed, after,
                            after + timedelta(days=800)), count - 1)  # fmt: skip
    shown = [campaign.next_due_at, *ahead]
    if spec.stop is not None:
        shown = [at for at in shown if at <= spec.stop]
    left = remaining(spec, campaign)
    if left is not None:
        count = min(count, left)
    return shown[: max(count, 0)]


def occurrences_page(
    session: Session, campaign: Campaign, state: OccurrenceState | None, offset: int, limit: int
) -> tuple[list[OccurrenceOut], int]:
    query = select(CampaignOccurrence).where(CampaignOccurrence.campaign_id == campaign.id)
    if state is not None:
        query = query.where(CampaignOccurrence.state == state.value)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(
        query.order_by(CampaignOccurrence.due_at.desc()).offset(offset).limit(limit)
    ).all()
    return occurrences_out(session, list(rows)), total


def occurrences_out(session: Session, occurrences: list[CampaignOccurrence]) -> list[OccurrenceOut]:
    experiments: dict[str, list[OccurrenceExperiment]] = defaultdict(list)
    ids = [o.id for o in occurrences]
    if ids:
        for e in session.scalars(
            select(Experiment).where(Experiment.occurrence_id.in_(ids)).order_by(Experiment.path)
        ):
            assert e.occurrence_id is not None
            experiments[e.occurrence_id].append(
                OccurrenceExperiment(
                    id=e.id, path=e.path, status=e.status, run_count=e.run_count
                )  # fmt: skip
            )
    return [
        OccurrenceOut(
            id=o.id,
            due_at=o.due_at,
            state=OccurrenceState(o.state),
            fired_at=o.fired_at,
            error=o.error,
            experiments=experiments[o.id],
        )  # fmt: skip
        for o in occurrences
    ]
