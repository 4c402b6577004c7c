"""Run use cases: one run of the team's with its flows, series and provenance; its log."""

from pathlib import Path

from sqlalchemy.orm import Session

from api.experiments.schemas import RunSummary
from api.runs import repository
from api.runs.schemas import FlowOut, RunDetail
from ccbench import rundir
from ccbench.db.models import Run, Team
from ccbench.errors import NotFound


def get_run(session: Session, team: Team, run_id: str) -> Run:
    run = repository.get_for_team(session, team.id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


def run_detail(session: Session, team: Team, run_id: str, *, series: bool = True) -> RunDetail:
    run = get_run(session, team, run_id)
    summary = RunSummary.model_validate(run, from_attributes=True)
    return RunDetail(
        **summary.model_dump(),
        experiment_id=run.experiment_id,
        seed=run.seed,
        spec=run.spec,
        worker_id=run.worker_id,
        timings=run.timings,
        provenance=run.provenance,
        aggregate=run.aggregate,
        flows=[FlowOut.model_validate(f, from_attributes=True) for f in run.flows],
        series={s.name: s.data for s in repository.series_of(session, run.id)} if series else {},
    )


def run_log(session: Session, team: Team, run_id: str) -> str:
    """The run's own log: the hosts testbed's Ansible task results, or the sandbox's log."""
    run = get_run(session, team, run_id)
    for name in rundir.LOGS:
        path = Path(run.artifacts_dir or "") / name
        if run.artifacts_dir and path.is_file():
            return path.read_text(errors="replace")
    raise NotFound(f"run {run_id} has no log (yet)")
