"""Hosts are never double-booked: a run on the `hosts` testbed holds every host it uses (its
senders, receivers and router) from the moment the dispatcher sends it until it ends, fails, is
cancelled or goes back to queued (ccbench.db.runs.release_hosts, which the reaper's move of a
dead worker's run also goes through). The holding is a row per (team, host) — the primary key
makes a second holder impossible on PostgreSQL and SQLite alike, whatever races — and the
dispatcher only sends a run whose hosts it could reserve; the others wait in `queued` with the
reason in their progress ("waiting": ...), shown on the run's page and by the CLI."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ccbench.db.models import HostReservation, Run
from schemas import ExperimentSpec


def hosts_of(spec: ExperimentSpec) -> list[str]:
    """The hosts a run holds while it runs: none off the hosts testbed."""
    return spec.host_names if spec.testbed.kind == "hosts" else []


def holders(session: Session, team_id: str, hosts: list[str]) -> dict[str, str]:
    """host -> the run holding it, for those of `hosts` that are held."""
    if not hosts:
        return {}
    rows = session.execute(
        select(HostReservation.host, HostReservation.run_id).where(
            HostReservation.team_id == team_id, HostReservation.host.in_(hosts)
        )
    ).all()
    return {str(host): str(run_id) for host, run_id in rows}


def reserve(session: Session, team_id: str, run_id: str, hosts: list[str]) -> dict[str, str]:
    """Hold every host for the run, or none: {} on success, else who holds what (another run;
    the run's own earlier holding counts as its own). In a savepoint, so a refusal leaves the
    caller's transaction usable."""
    held = holders(session, team_id, hosts)
    others = {host: holder for host, holder in held.items() if holder != run_id}
    if others:
        return others
    try:
        with session.begin_nested():
            session.add_all(HostReservation(team_id=team_id, host=host, run_id=run_id)
                            for host in hosts if host not in held)  # fmt: skip
    except IntegrityError:  # another dispatcher reserved one since we looked
        return {h: r for h, r in holders(session, team_id, hosts).items() if r != run_id}
    return {}


def waiting_reason(held: dict[str, str]) -> str:
    by_run: dict[str, list[str]] = {}
    for host, run_id in sorted(held.items()):
        by_run.setdefault(run_id, []).append(host)
    busy = "; ".join(
        f"{', '.join(hosts)} in use by run {run_id}" for run_id, hosts in by_run.items()
    )
    return f"waiting for hosts: {busy}"


def set_waiting(session: Session, run_id: str, reason: str | None) -> None:
    """Record (or clear) why a queued run is not sent yet; written only when it changes."""
    run = session.get(Run, run_id)
    if run is None:
        return
    current = run.progress.get("waiting") if run.progress else None
    if current == reason:
        return
    progress = {k: v for k, v in (run.progress or {}).items() if k != "waiting"}
    if reason is not None:
        progress["waiting"] = reason
    run.progress = progress
