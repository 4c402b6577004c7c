"""A campaign's results over time: every occurrence's value of one aggregate metric on each
path (the median over that occurrence's finished runs), and per path the median and SIQR over
all occurrences and per time-of-day window — the statistics seed 004 reports for its Internet
runs (median and SIQR of E over runs at random times of day and night). The export has one row
per run with the occurrence's time as a column."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.experiments.export import AGGREGATE_COLUMNS
from ccbench.analysis.metrics import median, siqr
from ccbench.campaigns.schedule import in_window, report_windows
from ccbench.db.models import Campaign, CampaignOccurrence, Experiment, Run
from ccbench.errors import ValidationFailed
from ccbench.runstate import RunStatus
from schemas.campaign import (
    CampaignReport,
    OccurrenceState,
    OccurrenceValue,
    SeriesSummary,
    WindowSummary,
    stored_campaign,
)
from schemas.metrics import METRICS, metrics_of

AGGREGATE_METRICS = [m.name for m in metrics_of("aggregate")]


@dataclass(frozen=True)
class _RunRow:
    run_id: str
    experiment_id: str
    status: str
    point_index: int
    repetition: int
    axis_values: dict[str, Any]
    aggregate: dict[str, Any]

    def value(self, metric: str) -> float | None:
        value = (self.aggregate.get("aggregate") or {}).get(metric)
        return None if value is None else float(value)


def _axes(experiments: list[Experiment]) -> list[str]:
    axes: list[str] = []
    for experiment in experiments:
        axes += [a for a in experiment.axes if a not in axes]
    return axes


def _load(
    session: Session, campaign: Campaign
) -> tuple[list[CampaignOccurrence], dict[str, list[Experiment]], dict[str, list[_RunRow]]]:
    occurrences = list(session.scalars(
        select(CampaignOccurrence).where(CampaignOccurrence.campaign_id == campaign.id)
        .order_by(CampaignOccurrence.due_at)
    ))  # fmt: skip
    experiments: dict[str, list[Experiment]] = defaultdict(list)
    for e in session.scalars(
        select(Experiment).where(Experiment.campaign_id == campaign.id).order_by(Experiment.path)
    ):
        if e.occurrence_id is not None:
            experiments[e.occurrence_id].append(e)
    runs: dict[str, list[_RunRow]] = defaultdict(list)
    rows = session.execute(
        select(Run.id, Run.experiment_id, Run.status, Run.point_index, Run.repetition,
               Run.axis_values, Run.aggregate)
        .join(Experiment, Experiment.id == Run.experiment_id)
        .where(Experiment.campaign_id == campaign.id)
        .order_by(Run.order_index)
    ).all()  # fmt: skip
    for row in rows:
        runs[row[1]].append(_RunRow(*row))
    return occurrences, experiments, runs


def _group_of(run: _RunRow, by: str | None) -> str | None:
    if by is None:
        return None
    value = run.axis_values.get(by)
    return None if value is None else str(value)


def build_campaign_report(
    session: Session, campaign: Campaign, metric: str, by: str | None
) -> CampaignReport:
    known = METRICS.get(metric)
    if known is None or not known.in_scope("aggregate"):
        raise ValidationFailed.field(
            "metric",
            f"{metric!r} is not an aggregate metric: one of {', '.join(AGGREGATE_METRICS)}",
        )
    occurrences, experiments, runs = _load(session, campaign)
    axes = _axes([e for es in experiments.values() for e in es])
    if by is not None and by not in axes:
        available = ", ".join(axes) if axes else "none: the experiment is not a matrix"
        raise ValidationFailed.field(
            "by", f"{by!r} is not an axis of the campaign (axes: {available})"
        )
    points: list[OccurrenceValue] = []
    for occurrence in occurrences:
        state = OccurrenceState(occurrence.state)
        if state != OccurrenceState.fired:
            points.append(OccurrenceValue(due_at=occurrence.due_at, state=state, path=None,
                                          experiment_id=None, status=None, runs_done=0,
                                          value=None, error=occurrence.error))  # fmt: skip
            continue
        for experiment in experiments[occurrence.id]:
            groups: dict[str | None, list[_RunRow]] = defaultdict(list)
            for run in runs[experiment.id]:
                groups[_group_of(run, by)].append(run)
            for group, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
                done = [r for r in members if r.status == RunStatus.done.value]
                values = [v for r in done if (v := r.value(metric)) is not None]
                points.append(OccurrenceValue(
                    due_at=occurrence.due_at, state=state, path=experiment.path, group=group,
                    experiment_id=experiment.id, status=experiment.status,
                    runs_done=len(done), value=median(values),
                ))  # fmt: skip
    spec = stored_campaign(campaign.spec)
    zone, windows = report_windows(spec.schedule)
    series = []
    keys = sorted({(p.path, p.group) for p in points if p.path is not None}, key=str)
    for path, group in keys:
        mine = [p for p in points if (p.path, p.group) == (path, group) and p.value is not None]
        assert path is not None
        series.append(SeriesSummary(
            path=path, group=group, **_summary([p.value for p in mine if p.value is not None]),
            windows=[WindowSummary(window=f"{w.start}-{w.end}", **_summary(
                [p.value for p in mine if p.value is not None and in_window(p.due_at, w, zone)]
            )) for w in windows],
        ))  # fmt: skip
    return CampaignReport(campaign_id=campaign.id, name=campaign.name, metric=metric,
                          unit=known.unit, label=known.label, by=by, timezone=zone,
                          occurrences=points, series=series)  # fmt: skip


def _summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "median": median(values), "siqr": siqr(values)}


def export_rows(session: Session, campaign: Campaign) -> tuple[list[str], list[list[Any]]]:
    """One row per run (and one per occurrence that fired nothing), the occurrence's time and
    state first, then the run's matrix axes and every aggregate metric."""
    occurrences, experiments, runs = _load(session, campaign)
    axes = _axes([e for es in experiments.values() for e in es])
    columns = ["occurrence_due_at", "occurrence_state", "path", "experiment_id", "run_id",
               "status", "point_index", "repetition", *axes, *AGGREGATE_COLUMNS]  # fmt: skip
    rows: list[list[Any]] = []
    for occurrence in occurrences:
        head: list[Any] = [occurrence.due_at, occurrence.state]
        fired = experiments[occurrence.id]
        if not fired:
            rows.append(head + [None] * (len(columns) - len(head)))
            continue
        for experiment in fired:
            for run in runs[experiment.id]:
                metrics = run.aggregate.get("aggregate") or {}
                rows.append([*head, experiment.path, experiment.id, run.run_id, run.status,
                             run.point_index, run.repetition,
                             *(_text(run.axis_values.get(a)) for a in axes),
                             *(metrics.get(c) for c in AGGREGATE_COLUMNS)])  # fmt: skip
    return columns, rows


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, datetime) else value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def export_csv(session: Session, campaign: Campaign) -> str:
    columns, rows = export_rows(session, campaign)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return out.getvalue()


def export_parquet(session: Session, campaign: Campaign) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, rows = export_rows(session, campaign)
    table = pa.table({name: [row[i] for row in rows] for i, name in enumerate(columns)})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()
