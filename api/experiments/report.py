"""The experiment report: every run's metrics, then one group per matrix point with the median
and SIQR of each aggregate metric over its repetitions."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.experiments import repository
from ccbench.analysis.metrics import median, siqr
from ccbench.db.models import Experiment, FlowResult, Run
from ccbench.runstate import RunStatus
from schemas import (
    ExperimentReport,
    FlowMetrics,
    GroupReport,
    RunReport,
    RunResult,
)
from schemas.metrics import metrics_of


def run_report(run: Run, flows: list[FlowResult]) -> RunReport:
    summary = RunResult.model_validate(run.aggregate) if run.aggregate else None
    return RunReport(
        run_id=run.id,
        status=run.status,
        point_index=run.point_index,
        repetition=run.repetition,
        axis_values=run.axis_values,
        seed=run.seed,
        error=run.error,
        flows=[
            FlowMetrics(flow=f.flow_index, algorithm=f.algorithm, **f.metrics)
            for f in sorted(flows, key=lambda f: f.flow_index)
        ],
        aggregate=summary.aggregate if summary else None,
        applied=summary.applied if summary else None,
        checks=summary.checks if summary else [],
    )


def group_reports(runs: list[RunReport]) -> list[GroupReport]:
    by_point: dict[int, list[RunReport]] = defaultdict(list)
    for run in runs:
        by_point[run.point_index].append(run)
    groups = []
    for point_index in sorted(by_point):
        members = by_point[point_index]
        done = [r for r in members if r.status == RunStatus.done.value and r.aggregate]
        metrics: dict[str, float | None] = {}
        for name in (m.name for m in metrics_of("aggregate")):
            values = [
                float(v)
                for r in done
                if r.aggregate is not None and (v := getattr(r.aggregate, name)) is not None
            ]
            metrics[f"{name}_median"] = median(values)
            metrics[f"{name}_siqr"] = siqr(values)
        groups.append(
            GroupReport(
                point_index=point_index,
                axis_values=members[0].axis_values,
                n=len(done),
                runs=len(members),
                metrics=metrics,
            )
        )
    return groups


def build_experiment_report(session: Session, experiment: Experiment) -> ExperimentReport:
    runs = list(repository.runs_of(session, experiment.id))
    flows_by_run: dict[str, list[FlowResult]] = defaultdict(list)
    if runs:
        for flow in session.scalars(
            select(FlowResult)
            .join(Run, Run.id == FlowResult.run_id)
            .where(Run.experiment_id == experiment.id)
        ):
            flows_by_run[flow.run_id].append(flow)
    reports = [run_report(run, flows_by_run[run.id]) for run in runs]
    return ExperimentReport(
        experiment_id=experiment.id,
        name=experiment.name,
        status=experiment.status,
        axes=list(experiment.axes),
        runs=reports,
        groups=group_reports(reports),
    )
