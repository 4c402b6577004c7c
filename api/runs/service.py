"""Run use cases: one run the team may read (by id or unique prefix) with its flows, series
and provenance; its log, files and bundle."""

from pathlib import Path

from sqlalchemy.orm import Session

from api.experiments.schemas import RunSummary
from api.runs import repository
from api.runs.bundle import Member, json_member
from api.runs.schemas import FlowOut, RunDetail, RunFile
from ccbench import artifacts, browse, rundir
from ccbench.db.models import Experiment, Run, Team
from ccbench.errors import NotFound
from ccbench.experiments import stored_submission


def get_run(session: Session, team: Team, run_id: str) -> Run:
    runs = repository.find_for_team(session, team.id, run_id)
    if not runs:
        raise NotFound(f"run {run_id} not found")
    if len(runs) > 1:
        raise browse.ambiguous("run", run_id, [r.id for r in runs])
    return runs[0]


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


def bundle(session: Session, team: Team, run_id: str) -> tuple[str, list[Member]]:
    """The bundle's top directory and its members (api/runs/bundle.py says what each is)."""
    run = get_run(session, team, run_id)
    experiment = session.get(Experiment, run.experiment_id)
    assert experiment is not None
    detail = run_detail(session, team, run.id, series=False).model_dump(mode="json")
    detail["experiment"] = {"id": experiment.id, "name": experiment.name, "kind": experiment.kind,
                            "axes": experiment.axes}  # fmt: skip
    members = [
        json_member("run.json", {k: v for k, v in detail.items() if k != "series"}),
        json_member("spec.json", run.spec),
        json_member("submission.json", stored_submission(experiment, [run])),
        json_member("provenance.json", run.provenance),
    ]
    members += [json_member(f"series/{s.name}.json", s.data)
                for s in repository.series_of(session, run.id)]  # fmt: skip
    directory = artifacts.attempt_dir(run.id, max(1, run.attempt))
    if directory.is_dir():
        members += [Member(f"files/{p.name}", path=p) for p in sorted(directory.iterdir())
                    if p.is_file() and not p.name.startswith(".")]  # fmt: skip
    return f"ccbench-run-{run.id}", members
