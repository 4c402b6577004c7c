"""Experiment use cases of the API (team-scoped reads and cancellation; submission is the
domain's, ccbench.experiments). Services never commit: the endpoint does."""

from sqlalchemy.orm import Session

from api.experiments import repository
from ccbench.db.models import Experiment, Team, utcnow
from ccbench.db.runs import cancel_queued, refresh_experiment_status
from ccbench.errors import Conflict, NotFound
from ccbench.runstate import ExperimentStatus


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
