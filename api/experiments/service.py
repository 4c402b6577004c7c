"""Experiment use cases. Services never commit: the endpoint does, and the runs a submission
stored are sent to the workers once it has (ccbench.jobs.enqueue_after_commit)."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.experiments import repository
from ccbench import jobs
from ccbench.db.models import Experiment, ExperimentTag, Host, Run, Team, utcnow
from ccbench.db.runs import cancel_queued, refresh_experiment_status
from ccbench.errors import Conflict, NotFound, ValidationFailed
from ccbench.runstate import ExperimentStatus, RunStatus
from ccbench.settings import get_settings
from schemas import ExperimentSpec, SpecError, Submission, expand_submission


def _validation_failed(exc: SpecError) -> ValidationFailed:
    errors = [{"field": e["loc"], "reason": e["msg"]} for e in exc.errors]
    return ValidationFailed.of(errors, "invalid submission")


def _check_hosts_registered(session: Session, team: Team, specs: list[ExperimentSpec]) -> None:
    """Every host a hosts-testbed run names must be in the team's inventory."""
    registered = set(session.scalars(select(Host.name).where(Host.team_id == team.id)).all())
    errors = []
    for spec in specs:
        if spec.testbed.kind != "hosts":
            continue
        named = [(f"flows.{i}.{key}", getattr(flow, key))
                 for i, flow in enumerate(spec.flows) for key in ("src", "dst")]  # fmt: skip
        if spec.testbed.router is not None:
            named.append(("testbed.router", spec.testbed.router))
        for field, name in named:
            if name not in registered:
                errors.append(
                    {"field": field, "reason": f"host {name!r} is not in the team's inventory"}
                )
        if errors:
            break  # one point names them all: the others share the hosts or repeat them
    if errors:
        raise ValidationFailed.of(errors, "invalid submission")


def create_experiment(
    session: Session, team: Team, submission: Submission, *, run_limit: int
) -> tuple[Experiment, list[Run]]:
    """Store the experiment and one queued run per matrix point and repetition, each sent to
    the workers when the session commits.

    The matrix is expanded (and its size checked against `run_limit`) before anything is
    stored, so a refused submission leaves the database untouched."""
    try:
        points = expand_submission(submission, limit=run_limit)
    except SpecError as exc:
        raise _validation_failed(exc) from exc
    _check_hosts_registered(session, team, [point.spec for point in points])

    experiment = Experiment(
        team_id=team.id,
        name=submission.name,
        description=submission.description,
        kind=submission.kind,
        submission=submission.model_dump(mode="json"),
        axes=[axis.path for axis in getattr(submission, "axes", [])],
        status=ExperimentStatus.queued.value,
        run_count=len(points),
        tags=[ExperimentTag(tag=tag) for tag in sorted(set(submission.tags))],
    )
    session.add(experiment)
    session.flush()
    runs = [
        Run(
            experiment_id=experiment.id,
            order_index=order,
            point_index=point.index,
            repetition=point.repetition,
            axis_values=point.axis_values,
            spec=point.spec.model_dump(mode="json"),
            seed=point.spec.seed,
            status=RunStatus.queued.value,
        )
        for order, point in enumerate(points)
    ]
    session.add_all(runs)
    session.flush()
    settings = get_settings()
    for run in runs:
        jobs.enqueue_after_commit(session, run.id, jobs.spec_budget(run.spec, settings))
    return experiment, runs


def get_experiment(session: Session, team: Team, experiment_id: str) -> Experiment:
    experiment = repository.get_for_team(session, team.id, experiment_id)
    if experiment is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return experiment


def cancel_experiment(session: Session, team: Team, experiment_id: str) -> Experiment:
    """Queued runs are cancelled here; a worker stops an active run at its next check."""
    experiment = get_experiment(session, team, experiment_id)
    if ExperimentStatus(experiment.status) in {
        ExperimentStatus.done,
        ExperimentStatus.failed,
        ExperimentStatus.cancelled,
    }:
        raise Conflict(
            f"experiment {experiment_id} is already {experiment.status}: nothing to cancel"
        )
    if experiment.cancel_requested_at is None:
        experiment.cancel_requested_at = utcnow()
    cancel_queued(session, experiment.id)
    session.flush()
    refresh_experiment_status(session, experiment.id)
    return experiment
