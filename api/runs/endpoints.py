"""REST endpoints of runs: one run with its flows, time series and provenance."""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from api.auth import CurrentTeam
from api.deps import DbSession
from api.errors import NotFound
from api.experiments.schemas import RunSummary
from api.runs import repository
from api.runs.schemas import FlowOut, RunDetail

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.get("/{run_id}", response_model=RunDetail)
def get_run(run_id: str, session: DbSession, team: CurrentTeam, series: bool = True) -> RunDetail:
    run = repository.get_for_team(session, team.id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
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


# The run's own log: the hosts testbed's Ansible task results, or the sandbox's log.
RUN_LOGS = ("run.log", "sandbox.log")


@router.get("/{run_id}/log", response_class=PlainTextResponse)
def get_run_log(run_id: str, session: DbSession, team: CurrentTeam) -> PlainTextResponse:
    run = repository.get_for_team(session, team.id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    for name in RUN_LOGS:
        path = Path(run.artifacts_dir or "") / name
        if run.artifacts_dir and path.is_file():
            return PlainTextResponse(path.read_text(errors="replace"))
    raise NotFound(f"run {run_id} has no log (yet)")
