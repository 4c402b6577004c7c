"""Sending queued runs to the workers: crash-safe, bounded and fair.

A submission stores its runs with no message (`dispatched_at` unset) in one transaction; the
dispatcher sends them afterwards. So a crash at any instant leaves every stored run either sent
or still unsent, and the next dispatch pass (the API's right after a commit, every worker's
each `dispatch_interval_s`) sends what is unsent — within seconds, never twice on purpose. A
message is sent before its run is marked sent: a crash in between sends it again, which is
harmless because a worker claims a run only while it is queued (a stale message costs a skip).

At most `dispatch_window` runs wait in the broker at a time. The rest stay in the database, so
cancelling a 10,000-run matrix leaves at most that many stale messages ahead of other teams'
runs, and each pass picks the next runs fairly: the team with the fewest runs in flight first,
each team's runs in submission order. A run whose message has waited longer than
`dispatch_lease_s` without a worker claiming it is presumed lost (a broker that lost its queue)
and sent again."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from ccbench import jobs
from ccbench.db.models import Experiment, Run, utcnow
from ccbench.db.session import session_scope
from ccbench.runstate import ACTIVE, RunStatus
from ccbench.settings import Settings, get_settings

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key: one dispatch pass at a time on PostgreSQL (ASCII "ccbdispa").
ADVISORY_LOCK = 0x63636264697370


@dataclass(frozen=True)
class Candidate:
    run_id: str
    team_id: str
    spec: dict[str, Any]


def dispatch(settings: Settings | None = None) -> int:
    """One pass: send queued runs until `dispatch_window` messages wait. Returns how many
    were sent. Concurrent passes are serialised by the database (an advisory lock on
    PostgreSQL, the write lock on SQLite); a duplicate message is harmless either way."""
    settings = settings or get_settings()
    with session_scope() as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(select(func.pg_advisory_xact_lock(ADVISORY_LOCK)))
        now = utcnow()
        lease_start = now - timedelta(seconds=settings.dispatch_lease_s)
        waiting = session.scalar(
            select(func.count()).select_from(Run).where(_in_broker(lease_start))
        )
        room = settings.dispatch_window - int(waiting or 0)
        if room <= 0:
            return 0
        chosen = fair_choice(session, room, lease_start)
        for candidate in chosen:
            jobs.enqueue_run(candidate.run_id, jobs.spec_budget(candidate.spec, settings))
        if chosen:
            session.execute(
                update(Run)
                .where(Run.id.in_([c.run_id for c in chosen]), Run.status == RunStatus.queued)
                .values(dispatched_at=now)
                .execution_options(synchronize_session=False)
            )
    if chosen:
        log.info("dispatched %d run(s)", len(chosen))
    return len(chosen)


def dispatch_quietly(settings: Settings | None = None) -> int:
    """dispatch(), logging instead of raising: for callers whose own work is done (a
    submission is stored; the next pass sends what this one could not)."""
    try:
        return dispatch(settings)
    except Exception:  # noqa: BLE001 - a broker or database hiccup: the next pass retries
        log.exception("dispatch pass failed; the next one retries")
        return 0


def _in_broker(lease_start: datetime) -> Any:
    """Queued runs whose message is (presumably) still waiting in the broker."""
    return and_(Run.status == RunStatus.queued, Run.dispatched_at > lease_start)


def fair_choice(session: Session, room: int, lease_start: datetime) -> list[Candidate]:
    """Up to `room` runs to send: queued, without a live message, of experiments not being
    cancelled; teams served in turn, the one with the fewest runs in flight first."""
    unsent = or_(Run.dispatched_at.is_(None), Run.dispatched_at <= lease_start)
    rank = (
        func.row_number()
        .over(partition_by=Experiment.team_id, order_by=(Experiment.created_at, Run.order_index))
        .label("rank")
    )
    ranked = (
        select(Run.id, Experiment.team_id, Run.spec, rank)
        .join(Experiment, Experiment.id == Run.experiment_id)
        .where(Run.status == RunStatus.queued, unsent, Experiment.cancel_requested_at.is_(None))
        .subquery()
    )
    rows = session.execute(
        select(ranked.c.id, ranked.c.team_id, ranked.c.spec)
        .where(ranked.c.rank <= room)
        .order_by(ranked.c.team_id, ranked.c.rank)
    ).all()
    per_team: dict[str, list[Candidate]] = defaultdict(list)
    for run_id, team_id, spec in rows:
        per_team[team_id].append(Candidate(run_id, team_id, spec))
    in_flight = _in_flight_per_team(session, lease_start)
    chosen: list[Candidate] = []
    while len(chosen) < room and any(per_team.values()):
        team = min((t for t, c in per_team.items() if c), key=lambda t: (in_flight[t], t))
        chosen.append(per_team[team].pop(0))
        in_flight[team] += 1
    return chosen


def _in_flight_per_team(session: Session, lease_start: datetime) -> defaultdict[str, int]:
    """Runs each team has waiting in the broker or on a worker."""
    flying = or_(_in_broker(lease_start), Run.status.in_([s.value for s in ACTIVE]))
    rows = session.execute(
        select(Experiment.team_id, func.count())
        .join(Run, Run.experiment_id == Experiment.id)
        .where(flying)
        .group_by(Experiment.team_id)
    ).all()
    counts: defaultdict[str, int] = defaultdict(int)
    counts.update({team: int(n) for team, n in rows})
    return counts
