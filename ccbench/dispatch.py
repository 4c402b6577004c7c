"""Sending queued runs to the workers: crash-safe, bounded, fair and routed.

A submission stores its runs with no message (`dispatched_at` unset) in one transaction; the
dispatcher sends them afterwards. So a crash at any instant leaves every stored run either sent
or still unsent, and the next dispatch pass (the API's right after a commit, the scheduler's and
every worker's each `dispatch_interval_s`) sends what is unsent — within seconds. A message is
sent before its run is marked sent: a crash in between sends it again, which is harmless
because a worker claims a run only while it is queued (a stale message costs a skip).

A message goes to the queue of one live worker (ccbench.workerpool) of the run's pool that can
run it, and only while that worker has room: a message per free slot plus `dispatch_prefetch`
waiting. The rest wait in the database, so cancelling a 10,000-run matrix leaves at most a few
stale messages ahead of other teams' runs, and each pass picks the next runs fairly: the team
with the fewest runs in flight first, each team's runs in submission order. A run whose message
has waited longer than `dispatch_lease_s` (a broker that lost its queue), or went to a worker
that is no longer live, is sent again. A run on real hosts is sent only once it holds them all
(ccbench.reservations): two runs never use one host at the same time."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from ccbench import jobs, reservations
from ccbench.db.models import Experiment, Run, Worker, utcnow
from ccbench.db.session import session_scope
from ccbench.runstate import ACTIVE, RunStatus
from ccbench.settings import Settings, get_settings
from ccbench.workerpool import Capabilities, live_workers, missing, requirements_of
from schemas import ExperimentSpec
from schemas.units import SI_NUMBERS

log = logging.getLogger(__name__)

# pg_advisory_xact_lock key: one dispatch pass at a time on PostgreSQL (ASCII "ccbdispa").
ADVISORY_LOCK = 0x63636264697370


@dataclass(frozen=True)
class Candidate:
    run_id: str
    team_id: str
    spec: dict[str, Any]


def dispatch(settings: Settings | None = None) -> int:
    """One pass: send queued runs to live workers with room. Returns how many were sent.
    Concurrent passes are serialised by the database (an advisory lock on PostgreSQL, the
    write lock on SQLite); a duplicate message is harmless either way."""
    settings = settings or get_settings()
    sent = 0
    with session_scope() as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(select(func.pg_advisory_xact_lock(ADVISORY_LOCK)))
        now = utcnow()
        lease_start = now - timedelta(seconds=settings.dispatch_lease_s)
        workers = live_workers(session, settings)
        room = _room(session, workers, lease_start, settings.dispatch_prefetch)
        if sum(room.values()) <= 0:
            return 0
        live = {w.id for w in workers}
        for candidate in fair_choice(session, 2 * sum(room.values()), lease_start, live):
            spec = ExperimentSpec.model_validate(candidate.spec, context=SI_NUMBERS)
            worker = _worker_for(spec, workers, room)
            if worker is None:
                continue  # its pool is busy or cannot run it: it waits in the database
            held = reservations.reserve(session, candidate.team_id, candidate.run_id,
                                        reservations.hosts_of(spec))  # fmt: skip
            reason = reservations.waiting_reason(held) if held else None
            reservations.set_waiting(session, candidate.run_id, reason)
            if held:
                continue  # another run uses its hosts: it waits, the reason on its page
            budget = jobs.spec_budget(candidate.spec, settings)
            jobs.enqueue_run(candidate.run_id, budget, jobs.worker_queue(worker.id))
            session.execute(
                update(Run)
                .where(Run.id == candidate.run_id, Run.status == RunStatus.queued)
                .values(dispatched_at=now, dispatched_to=worker.id)
                .execution_options(synchronize_session=False)
            )
            room[worker.id] -= 1
            sent += 1
            if sum(room.values()) <= 0:
                break
    if sent:
        log.info("dispatched %d run(s)", sent)
    return sent


def _room(
    session: Session, workers: list[Worker], lease_start: datetime, prefetch: int
) -> dict[str, int]:
    """Messages each live worker can take now: its slots plus `prefetch`, less the runs it
    executes and the messages waiting for it."""
    ids = [w.id for w in workers]
    waiting = _count_by(session, Run.dispatched_to, _in_broker(lease_start), ids)
    executing = _count_by(session, Run.worker_id, Run.status.in_([s.value for s in ACTIVE]), ids)
    return {w.id: w.slots + prefetch - waiting.get(w.id, 0) - executing.get(w.id, 0)
            for w in workers}  # fmt: skip


def _count_by(session: Session, column: Any, condition: Any, ids: list[str]) -> dict[str, int]:
    """Runs meeting `condition`, counted per value of `column` among `ids`."""
    rows = session.execute(
        select(column, func.count()).where(condition, column.in_(ids)).group_by(column)
    ).all()
    return {str(key): int(n) for key, n in rows}


def _worker_for(spec: ExperimentSpec, workers: list[Worker], room: dict[str, int]) -> Worker | None:
    """The live worker of the run's pool that can run it and has the most room."""
    needs = requirements_of(spec)
    able = [w for w in workers if room[w.id] > 0 and w.pool == needs.pool
            and not missing(Capabilities.from_dict(w.capabilities), needs)]  # fmt: skip
    return max(able, key=lambda w: (room[w.id], w.id), default=None)


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


def fair_choice(
    session: Session, room: int, lease_start: datetime, live: set[str]
) -> list[Candidate]:
    """Up to `room` runs to send: queued, without a live message (never sent, sent longer than
    the lease ago, or sent to a worker that is not live), of experiments not being cancelled;
    teams served in turn, the one with the fewest runs in flight first."""
    unsent = or_(
        Run.dispatched_at.is_(None),
        Run.dispatched_at <= lease_start,
        Run.dispatched_to.is_(None),
        Run.dispatched_to.not_in(live),
    )
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
