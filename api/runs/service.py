"""Run use cases: one run of the team's with its flows, series and provenance; its log."""

from pathlib import Path

from sqlalchemy.orm import Session

from api.experiments.schemas import RunSummary
from api.runs import repository
from api.runs.schemas import FlowOut, RunDetail, RunFile
from ccbench import artifacts, rundir
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
    """The run's own log (its latest attempt's): the hosts testbed's Ansible task results, or
    the sandbox's log — from this machine's worker, or uploaded by another's."""
    run = get_run(session, team, run_id)
    for name in rundir.LOGS:
        path = artifacts.attempt_dir(run.id, max(1, run.attempt)) / name
        if path.is_file():
            return path.read_text(errors="replace")
    raise NotFound(f"run {run_id} has no log (yet)")


def run_files(session: Session, team: Team, run_id: str) -> list[RunFile]:
    """The raw files of the run's latest attempt (logs, packet logs, agents' outputs,
    provenance), wherever its worker ran."""
    run = get_run(session, team, run_id)
    directory = artifacts.attempt_dir(run.id, max(1, run.attempt))
    if not directory.is_dir():
        return []
    files = [p for p in sorted(directory.iterdir()) if p.is_file() and not p.name.startswith(".")]
    return [RunFile(name=p.name, bytes=p.stat().st_size) for p in files]


def run_file(session: Session, team: Team, run_id: str, name: str) -> Path:
    run = get_run(session, team, run_id)
    return artifacts.path_of(run.id, max(1, run.attempt), name)
