"""Experiment use cases of the API: reads of what the team may read (its own, shared with it,
public), and changes of its own (annotations, cancellation, shares), pins and reruns.
Submission is the domain's (ccbench.experiments). Services never commit: the endpoint does."""

from collections import Counter
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.experiments import repository
from api.experiments.schemas import (
    ExperimentDetail,
    ExperimentPatch,
    ExperimentSummary,
    Failure,
    RunSummary,
)
from ccbench import browse, sharing
from ccbench.access import Access
from ccbench.browse import Listed, listed_counts
from ccbench.db.models import Experiment, ExperimentPin, ExperimentTag, Run, Team, utcnow
from ccbench.db.runs import cancel_queued, refresh_experiment_status
from ccbench.errors import Conflict, Forbidden
from ccbench.runstate import ExperimentStatus, RunStatus
from ccbench.sharing import ResourceKind, Shares

# Failed runs listed per distinct error on an experiment's page and detail.
FAILURE_RUN_IDS = 5


def find(session: Session, team: Team, experiment_id: str) -> Listed:
    """An experiment the team may read, by id or unique id prefix, with how it reads it."""
    return browse.resolve(session, team.id, experiment_id)


def get_experiment(session: Session, team: Team, experiment_id: str) -> Experiment:
    return find(session, team, experiment_id).experiment


def owned(session: Session, team: Team, experiment_id: str) -> Experiment:
    """An experiment of the team's own: another team's that it may read is read-only."""
    found = find(session, team, experiment_id)
    if found.access != Access.own:
        raise Forbidden(
            f"experiment {found.experiment.id} belongs to team {found.team} and is shared with "
            "yours read-only: run it again (POST .../rerun) to change it"
        )
    return found.experiment


def summary(listed: Listed) -> ExperimentSummary:
    e = listed.experiment
    return ExperimentSummary(
        id=e.id,
        short_id=browse.short_id(e.id),
        name=e.name,
        description=e.description,
        notes=e.notes,
        kind=e.kind,
        status=e.status,
        status_counts=e.status_counts,
        run_count=e.run_count,
        tags=[t.tag for t in e.tags],
        team=listed.team,
        access=listed.access,
        pinned=listed.pinned,
        algorithms=e.algorithms.split(),
        testbeds=e.testbed.split(),
        metrics={name: e.summary.get(name) for name in browse.AGGREGATE_METRICS},
        source_experiment_id=e.source_experiment_id,
        created_at=e.created_at,
        updated_at=e.updated_at,
    )


def failures(runs: list[Run]) -> list[Failure]:
    """Failed runs grouped by their error, most frequent first."""
    failed = [r for r in runs if r.status == RunStatus.failed.value]
    counts = Counter(r.error or "(no reason recorded)" for r in failed)
    return [
        Failure(
            error=error,
            runs=n,
            run_ids=[r.id for r in failed if (r.error or "(no reason recorded)") == error][
                :FAILURE_RUN_IDS
            ],
        )
        for error, n in counts.most_common()
    ]


def detail(session: Session, team: Team, listed: Listed) -> ExperimentDetail:
    experiment = listed.experiment
    runs = list(repository.runs_of(session, experiment.id))
    exact = repository.status_counts(session, experiment.id)
    reruns = session.scalars(
        select(Experiment.id)
        .where(Experiment.source_experiment_id == experiment.id)
        .where(browse.visible(team.id))
        .order_by(Experiment.created_at)
    ).all()
    return ExperimentDetail(
        **summary(listed).model_dump(exclude={"status_counts"}),
        status_counts=listed_counts({RunStatus(s): n for s, n in exact.items()}),
        status_counts_exact=exact,
        axes=list(experiment.axes),
        submission=experiment.submission,
        failures=failures(runs),
        reruns=list(reruns),
        runs=[RunSummary.model_validate(r, from_attributes=True) for r in runs],
    )


def cancel_experiment(session: Session, team: Team, experiment_id: str) -> Experiment:
    """Queued runs are cancelled here; a worker stops an active run at its next check."""
    experiment = owned(session, team, experiment_id)
    if ExperimentStatus(experiment.status) in {
        ExperimentStatus.done,
        ExperimentStatus.failed,
        ExperimentStatus.cancelled,
    }:
        raise Conflict(
            f"experiment {experiment.id} is already {experiment.status}: nothing to cancel"
        )
    if experiment.cancel_requested_at is None:
        experiment.cancel_requested_at = utcnow()
    cancel_queued(session, experiment.id)
    session.flush()
    refresh_experiment_status(session, experiment.id)
    return experiment


def annotate(session: Session, team: Team, experiment_id: str, patch: ExperimentPatch) -> None:
    """Change the name, description, notes or tags of one of the team's experiments."""
    experiment = owned(session, team, experiment_id)
    changes: dict[str, Any] = patch.model_dump(exclude_unset=True)
    for field in ("name", "description", "notes"):
        if changes.get(field) is not None:
            setattr(experiment, field, changes[field])
    if patch.tags is not None:
        wanted = set(patch.tags)
        for tag in list(experiment.tags):
            if tag.tag not in wanted:
                experiment.tags.remove(tag)
        have = {t.tag for t in experiment.tags}
        for text in sorted(wanted - have):
            experiment.tags.append(ExperimentTag(tag=text))
    experiment.updated_at = utcnow()
    session.flush()


def pin(session: Session, team: Team, experiment_id: str, pinned: bool) -> None:
    """Pin (or unpin) an experiment the team may read as one of its favourites."""
    experiment = get_experiment(session, team, experiment_id)
    existing = session.get(ExperimentPin, (team.id, experiment.id))
    if pinned and existing is None:
        session.add(ExperimentPin(team_id=team.id, experiment_id=experiment.id))
    elif not pinned and existing is not None:
        session.delete(existing)
    session.flush()


def shares(session: Session, team: Team, experiment_id: str) -> Shares:
    experiment = owned(session, team, experiment_id)
    return sharing.shares_of(session, ResourceKind.experiment, experiment.id)


def share(
    session: Session, team: Team, experiment_id: str, *, public: bool, teams: list[str]
) -> Shares:
    experiment = owned(session, team, experiment_id)
    return sharing.set_shares(session, ResourceKind.experiment, experiment.id, team,
                              public=public, teams=teams)  # fmt: skip
