"""Firing each due occurrence of each active campaign exactly once, with any number of
schedulers running and across restarts of any of them.

The database is the truth: a campaign row says when its next occurrence is due
(`next_due_at`); a tick fires campaigns whose time has come, each in a transaction of its own
that locks the campaign's row (PostgreSQL; the write lock on SQLite), records the occurrence
— unique per (campaign, instant), so a second scheduler's attempt fails even so — creates its
experiments (one per path) and moves `next_due_at` on. A scheduler that dies mid-way rolls its
transaction back: the next tick fires that occurrence again, once.

An instant whose tick comes more than GRACE_S late was missed (no scheduler ran): the
campaign's `catch_up` policy says what happens — `skip` records it as missed, `run_once` runs
the latest of the missed instants once, now — never a burst."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ccbench.campaigns.paths import label, resolve, submission_for
from ccbench.campaigns.schedule import instants, next_instant
from ccbench.db.models import Campaign, CampaignOccurrence, Team, utcnow
from ccbench.db.session import session_scope
from ccbench.errors import CCBenchError
from ccbench.experiments import OccurrenceLink, create_experiment
from ccbench.settings import Settings, get_settings
from schemas.campaign import CampaignSpec, CampaignState, OccurrenceState, stored_campaign

log = logging.getLogger(__name__)

GRACE_S = 60.0  # later than this after its instant, an occurrence was missed
MISSED_KEPT = 100  # missed instants recorded one by one per tick; the rest are counted
SCAN_LIMIT = 100_000  # due instants enumerated per tick (a long outage of a dense schedule)
BATCH = 200  # campaigns fired per tick at most; the next tick takes the rest


@dataclass
class TickResult:
    fired: list[str] = field(default_factory=list)  # occurrence ids
    missed: int = 0
    failed: int = 0


def tick(now: datetime | None = None, settings: Settings | None = None) -> TickResult:
    """Fire every campaign due at `now` (default: the clock)."""
    now = now or utcnow()
    settings = settings or get_settings()
    with session_scope() as session:
        due = list(session.scalars(
            select(Campaign.id)
            .where(Campaign.state == CampaignState.active, Campaign.next_due_at <= now)
            .order_by(Campaign.next_due_at)
            .limit(BATCH)
        ))  # fmt: skip
    result = TickResult()
    for campaign_id in due:
        try:
            fire_due(campaign_id, now, settings, result)
        except IntegrityError:
            log.info("campaign %s: another scheduler fired this occurrence", campaign_id)
        except CCBenchError as exc:  # refused while writing (e.g. no worker can run it now)
            log.warning("campaign %s: occurrence not fired, retried next tick: %s",
                        campaign_id, exc.message)  # fmt: skip
    return result


def fire_due(campaign_id: str, now: datetime, settings: Settings, result: TickResult) -> None:
    with session_scope() as session:
        # Write first, read after: the UPDATE takes the row lock on PostgreSQL and the write
        # lock on SQLite before anything is read, so a second scheduler waits here and then
        # sees the first one's commit (a read first would, on SQLite, fail its later write).
        session.execute(
            update(Campaign).where(Campaign.id == campaign_id).values(state=Campaign.state)
        )
        campaign = session.get(Campaign, campaign_id, populate_existing=True)
        if campaign is None or campaign.state != CampaignState.active:
            return
        if campaign.next_due_at is None:
            return
        if campaign.next_due_at > now:
            return  # another scheduler got here first
        spec = stored_campaign(campaign.spec)
        assert spec.start is not None  # set when the campaign was created
        until = min(now, spec.stop) if spec.stop is not None else now
        after = campaign.last_due_at or spec.start - timedelta(microseconds=1)
        due = list(islice(instants(spec.schedule, spec.start, campaign.seed, after, until),
                          SCAN_LIMIT))  # fmt: skip
        if not due:  # only the stop time passed
            campaign.state, campaign.next_due_at = CampaignState.finished, None
            return
        latest = due[-1]
        on_time = (now - latest).total_seconds() <= GRACE_S
        run = on_time or spec.catch_up == "run_once"
        missed = due[:-1] if run else due
        allowed = remaining(spec, campaign)
        if allowed is not None:
            missed = missed[:allowed]
            run = run and allowed > len(missed)
        for at in missed[-MISSED_KEPT:]:
            session.add(CampaignOccurrence(
                campaign_id=campaign.id, due_at=at, state=OccurrenceState.missed,
                error="no scheduler ran at this time",
            ))  # fmt: skip
        campaign.missed += len(missed)
        result.missed += len(missed)
        if run:
            _fire(session, campaign, spec, latest, now, settings, result)
        campaign.last_due_at = latest
        _advance(campaign, spec, latest)


def _fire(
    session: Session,
    campaign: Campaign,
    spec: CampaignSpec,
    due_at: datetime,
    now: datetime,
    settings: Settings,
    result: TickResult,
) -> None:
    """The occurrence and its experiments, one per path; a failure (a host gone, no worker
    able to run it) fails this occurrence, named, and the campaign goes on."""
    occurrence = CampaignOccurrence(
        campaign_id=campaign.id, due_at=due_at, state=OccurrenceState.fired, fired_at=now
    )
    session.add(occurrence)
    session.flush()  # a second scheduler's occurrence fails here: unique (campaign, instant)
    team = session.get(Team, campaign.team_id)
    assert team is not None
    try:  # everything that can refuse the occurrence, before anything of it is written
        paths = resolve(session, campaign.team_id, spec.hosts)
        submissions = [(path, submission_for(spec, path)) for path in paths]
    except CCBenchError as exc:
        occurrence.state, occurrence.error = OccurrenceState.failed, exc.message
        campaign.failed += 1
        result.failed += 1
        log.warning("campaign %s occurrence %s failed: %s", campaign.id, due_at, exc.message)
        return
    for path, submission in submissions:
        link = OccurrenceLink(campaign.id, occurrence.id, label(path))
        create_experiment(session, team, submission, run_limit=settings.matrix_run_limit,
                          repetitions=spec.repetitions, occurrence=link)  # fmt: skip
    campaign.fired += 1
    result.fired.append(occurrence.id)
    log.info("campaign %s: occurrence %s fired, %d experiment(s)",
             campaign.id, due_at.isoformat(), len(submissions))  # fmt: skip


def remaining(spec: CampaignSpec, campaign: Campaign) -> int | None:
    """Occurrences the campaign may still have (its `count`), or None without a count."""
    if spec.count is None:
        return None
    return max(0, spec.count - campaign.fired - campaign.missed - campaign.failed)


def _advance(campaign: Campaign, spec: CampaignSpec, after: datetime) -> None:
    """The next instant, or finished when the count or the stop time is reached."""
    assert spec.start is not None
    left = remaining(spec, campaign)
    upcoming = next_instant(spec.schedule, spec.start, campaign.seed, after)
    if left == 0 or (spec.stop is not None and upcoming > spec.stop):
        campaign.state, campaign.next_due_at = CampaignState.finished, None
    else:
        campaign.next_due_at = upcoming
