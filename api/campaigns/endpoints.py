"""REST endpoints of measurement campaigns: create, list, show, occurrences, pause, resume,
edit, stop, report and export."""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from api.auth import AdminTeam, CurrentTeam, WritingTeam
from api.campaigns import report, service
from api.campaigns.schemas import CampaignDetail, CampaignSummary, OccurrenceOut
from api.deps import DbSession
from api.errors import AUTHENTICATED, CONFLICT, FORBIDDEN, NOT_FOUND
from api.experiments.endpoints import CsvResponse
from api.experiments.schemas import ID_PREFIX_HELP, PAGE_MAX, PAGE_SIZE_MAX, Page, SharesBody
from ccbench.campaigns import manage
from schemas.campaign import (
    CampaignChanges,
    CampaignReport,
    CampaignSpec,
    CampaignState,
    OccurrenceState,
)
from schemas.limits import ID_LENGTH

router = APIRouter(prefix="/v1/campaigns", tags=["campaigns"], responses=AUTHENTICATED)

# Changes are the owning team's (403 for a team it is shared with, or a read token).
CHANGES = {**NOT_FOUND, **FORBIDDEN, **CONFLICT}
SHARES = {**NOT_FOUND, **FORBIDDEN}
METRIC_HELP = "an aggregate metric of the catalogue, e.g. goodput_bps or equivalence_ratio"
BY_HELP = "a matrix axis of the campaign's experiment: one series per path and axis value"


@router.post(
    "", status_code=status.HTTP_201_CREATED, response_model=CampaignDetail, responses=FORBIDDEN
)
def create_campaign(
    spec: CampaignSpec, session: DbSession, team: WritingTeam, response: Response
) -> CampaignDetail:
    """Check the campaign against the team's hosts and store it; its first occurrence fires at
    `next_due_at`. Its `Location` is /v1/campaigns/{id}."""
    campaign = manage.create_campaign(session, team, spec)
    session.commit()
    response.headers["Location"] = f"/v1/campaigns/{campaign.id}"
    return service.detail(session, team, campaign)


@router.get("", response_model=Page[CampaignSummary])
def list_campaigns(
    session: DbSession,
    team: CurrentTeam,
    state: CampaignState | None = None,
    id_prefix: Annotated[
        str | None, Query(max_length=ID_LENGTH, description=ID_PREFIX_HELP)
    ] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
    page_size: Annotated[int, Query(ge=1, le=PAGE_SIZE_MAX)] = 50,
) -> Page[CampaignSummary]:
    """The campaigns the team may read (its own, shared with it, public), newest first."""
    items, total = service.list_campaigns(
        session, team, state, (page - 1) * page_size, page_size, id_prefix=id_prefix
    )
    return Page(items=[service.summary(session, team, c) for c in items], total=total,
                page=page, page_size=page_size)  # fmt: skip


@router.get("/{campaign_id}", response_model=CampaignDetail, responses=NOT_FOUND)
def get_campaign(campaign_id: str, session: DbSession, team: CurrentTeam) -> CampaignDetail:
    return service.detail(session, team, service.get_campaign(session, team, campaign_id))


@router.get("/{campaign_id}/occurrences", response_model=Page[OccurrenceOut], responses=NOT_FOUND)
def list_occurrences(
    campaign_id: str,
    session: DbSession,
    team: CurrentTeam,
    state: OccurrenceState | None = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
    page_size: Annotated[int, Query(ge=1, le=PAGE_SIZE_MAX)] = 50,
) -> Page[OccurrenceOut]:
    """Occurrences newest first, each with its experiments (one per path) or its reason."""
    campaign = service.get_campaign(session, team, campaign_id)
    items, total = service.occurrences_page(session, campaign, state, (page - 1) * page_size,
                                            page_size)  # fmt: skip
    return Page(items=items, total=total, page=page, page_size=page_size)


@router.patch("/{campaign_id}", response_model=CampaignDetail, responses=CHANGES)
def edit_campaign(
    campaign_id: str, changes: CampaignChanges, session: DbSession, team: WritingTeam
) -> CampaignDetail:
    """A new schedule, stop, count, catch-up policy or description, from now on."""
    campaign = service.owned(session, team, campaign_id)
    manage.reschedule(session, campaign, changes.model_dump(mode="json", exclude_unset=True))
    session.commit()
    return service.detail(session, team, campaign)


def _state_change(verb: str) -> str:
    return f"/{{campaign_id}}/{verb}"


@router.post(_state_change("pause"), response_model=CampaignDetail, responses=CHANGES)
def pause_campaign(campaign_id: str, session: DbSession, team: WritingTeam) -> CampaignDetail:
    """No occurrence fires until it is resumed."""
    campaign = service.owned(session, team, campaign_id)
    manage.pause(campaign)
    session.commit()
    return service.detail(session, team, campaign)


@router.post(_state_change("resume"), response_model=CampaignDetail, responses=CHANGES)
def resume_campaign(campaign_id: str, session: DbSession, team: WritingTeam) -> CampaignDetail:
    """Active again from now: instants that passed while it was paused are not run."""
    campaign = service.owned(session, team, campaign_id)
    manage.resume(campaign)
    session.commit()
    return service.detail(session, team, campaign)


@router.post(_state_change("stop"), response_model=CampaignDetail, responses=CHANGES)
def stop_campaign(campaign_id: str, session: DbSession, team: WritingTeam) -> CampaignDetail:
    """No occurrence after this; experiments already created keep running."""
    campaign = service.owned(session, team, campaign_id)
    manage.stop(campaign)
    session.commit()
    return service.detail(session, team, campaign)


@router.get("/{campaign_id}/report", response_model=CampaignReport, responses=NOT_FOUND)
def campaign_report(
    campaign_id: str,
    session: DbSession,
    team: CurrentTeam,
    metric: Annotated[str, Query(description=METRIC_HELP)] = "goodput_bps",
    by: Annotated[str | None, Query(description=BY_HELP)] = None,
) -> CampaignReport:
    """Every occurrence's value per path, and per path the median and SIQR over all
    occurrences and per time-of-day window."""
    campaign = service.get_campaign(session, team, campaign_id)
    return report.build_campaign_report(session, campaign, metric, by)


@router.get(
    "/{campaign_id}/export.csv",
    response_class=CsvResponse,
    responses={**NOT_FOUND, 200: {"content": {"text/csv": {}}}},
)
def campaign_export(campaign_id: str, session: DbSession, team: CurrentTeam) -> CsvResponse:
    """One row per run with its occurrence's time, path, axes and aggregate metrics."""
    campaign = service.get_campaign(session, team, campaign_id)
    return CsvResponse(report.export_csv(session, campaign))


@router.get(
    "/{campaign_id}/export.parquet",
    response_class=Response,
    responses={**NOT_FOUND, 200: {"content": {"application/vnd.apache.parquet": {}}}},
)
def campaign_export_parquet(campaign_id: str, session: DbSession, team: CurrentTeam) -> Response:
    """The same table as Parquet, the occurrence's time a timestamp column."""
    campaign = service.get_campaign(session, team, campaign_id)
    return Response(report.export_parquet(session, campaign),
                    media_type="application/vnd.apache.parquet")  # fmt: skip


@router.get(
    "/{campaign_id}/shares", response_model=SharesBody, responses={**NOT_FOUND, **FORBIDDEN}
)
def get_shares(campaign_id: str, session: DbSession, team: CurrentTeam) -> SharesBody:
    """Who besides the owning team may read the campaign (the owner's to see)."""
    shares = service.shares(session, team, campaign_id)
    return SharesBody(public=shares.public, teams=shares.teams)


@router.put(
    "/{campaign_id}/shares", response_model=SharesBody, responses={**NOT_FOUND, **FORBIDDEN}
)
def set_shares(
    campaign_id: str, body: SharesBody, session: DbSession, team: AdminTeam
) -> SharesBody:
    """Share the campaign read-only with exactly these teams, and publicly or not (an admin
    token of the owning team): they read it, its report and exports and its occurrences'
    experiments; only its team changes it."""
    shares = service.share(session, team, campaign_id, public=body.public, teams=body.teams)
    session.commit()
    return SharesBody(public=shares.public, teams=shares.teams)
