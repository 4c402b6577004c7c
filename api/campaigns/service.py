"""Campaign use cases of the API: reads of the campaigns the caller's team may read (its own,
shared with it, public: ccbench.sharing), changes of its own (the campaign's life itself is the
domain's, ccbench.campaigns). Services never commit: the endpoint does."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import islice

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from api.campaigns.schemas import (
    CampaignDetail,
    CampaignSummary,
    OccurrenceExperiment,
    OccurrenceOut,
)
from ccbench import sharing
from ccbench.access import Access
from ccbench.browse import id_starts
from ccbench.campaigns.firing import remaining
from ccbench.campaigns.schedule import instants
from ccbench.db.models import Campaign, CampaignOccurrence, Experiment, Team, utcnow
from ccbench.errors import Forbidden, NotFound
from ccbench.sharing import ResourceKind, Shares
from schemas.campaign import CampaignState, OccurrenceState, stored_campaign

UPCOMING = 5  # instants shown ahead
RECENT_FAILURES = 10


KIND = ResourceKind.campaign


def _readable(team: Team) -> ColumnElement[bool]:
    return sharing.readable(KIND, team.id, Campaign.team_id, Campaign.id)


def get_campaign(session: Session, team: Team, campaign_id: str) -> Campaign:
    campaign = session.scalar(select(Campaign).where(Campaign.id == campaign_id, _readable(team)))
    if campaign is None:
        raise NotFound(f"campaign {campaign_id} not found")
    return campaign


def owned(session: Session, team: Team, campaign_id: str) -> Campaign:
    """A campaign of the team's own: one another team shared with it is read-only."""
    campaign = get_campaign(session, team, campaign_id)
    if campaign.team_id != team.id:
        owner = session.get(Team, campaign.team_id)
        raise Forbidden(
            f"campaign {campaign.id} belongs to team {owner.name if owner else '?'} and is "
            "shared with yours read-only"
        )
    return campaign


def shares(session: Session, team: Team, campaign_id: str) -> Shares:
    return sharing.shares_of(session, KIND, owned(session, team, campaign_id).id)


def share(session: Session, team: Team, campaign_id: str, *, public: bool,
          teams: list[str]) -> Shares:  # fmt: skip
    campaign = owned(session, team, campaign_id)
    return sharing.set_shares(session, KIND, campaign.id, team, public=public, teams=teams)


def list_campaigns(
    session: Session,
    team: Team,
    state: CampaignState | None,
    offset: int,
    limit: int,
    *,
    id_prefix: str | None = None,
) -> tuple[Sequence[Campaign], int]:
    query: Select[tuple[Campaign]] = select(Campaign).where(_readable(team))
    if state is not None:
        query = query.where(Campaign.state == state.value)
    if id_prefix:
        query = query.where(id_starts(Campaign.id, id_prefix))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(
        query.order_by(Campaign.created_at.desc(), Campaign.id).offset(offset).limit(limit)
    ).all()
    return page, total


def summary(session: Session, viewer: Team, campaign: Campaign) -> CampaignSummary:
    owner = session.get(Team, campaign.team_id)
    access = sharing.accesses(session, KIND, viewer.id, {campaign.id: campaign.team_id})
    return CampaignSummary(
        id=campaign.id,
        name=campaign.name,
        team=owner.name if owner else "",
        access=access.get(campaign.id, Access.public),
        state=CampaignState(campaign.state),
        schedule=campaign.spec["schedule"],
        next_due_at=campaign.next_due_at,
        fired=campaign.fired,
        missed=campaign.missed,
        failed=campaign.failed,
        created_at=campaign.created_at,
        updated_at=campaign.updated_at,
    )


def detail(session: Session, viewer: Team, campaign: Campaign) -> CampaignDetail:
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
        **summary(session, viewer, campaign).model_dump(),
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
