"""A metric against any field of the specs (or a matrix axis), a series per value of another,
over runs, matrix points and whole experiments of any teams that shared them — median and
SIQR where several runs (repetitions) or flows fall on one point.

x and by are spec field paths written as matrix axes are (`topology.bottleneck.buffer`,
`flows[*].algorithm`), read from each run's own spec, so a matrix over buffers and a single
experiment at one buffer land on the same axis; or `experiment` (one value per experiment),
and for per-flow metrics `flow` (the flow's index) and `algorithm` (the flow's algorithm).
With per-flow metrics, `flows[*].<field>` is the flow's own field."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.orm import Session

from api.compare import repository
from api.compare.repository import Value
from api.compare.schemas import (
    ComparedExperiment,
    CrossComparison,
    CrossPoint,
    CrossSeries,
    Scope,
)
from api.runs import service as runs
from ccbench import browse
from ccbench.analysis.metrics import median, siqr
from ccbench.browse import Listed
from ccbench.db.models import Team
from ccbench.errors import ValidationFailed
from ccbench.plots.axes import value_text
from ccbench.runstate import RunStatus
from schemas.matrix import get_path, unit_of_path
from schemas.metrics import (
    BIT_PER_S,
    BYTE,
    DIMENSIONLESS,
    METRICS,
    SECOND,
    format_quantity,
    metrics_of,
)
from schemas.units import Buffer, parse_buffer

SPECIAL = ("experiment", "flow", "algorithm")
FLOW_ONLY = ("flow", "algorithm")
MAX_EXPERIMENTS = 50
MAX_PICKS = 1000  # runs or points chosen one by one
# The unit a spec quantity is stored in (its JSON Schema's x-unit) as the metric catalogue
# names it: rates are written `10Mbit` in specs, and are bit/s.
_SPEC_UNITS = {"bit": BIT_PER_S, "s": SECOND, "B": BYTE}


@dataclass(frozen=True)
class Selection:
    experiments: list[str]
    runs: list[str]
    points: list[str]  # EXPERIMENT:POINT_INDEX


def _check(selection: Selection, metric: str, scope: Scope, x: str, by: str | None) -> None:
    errors = []
    names = [m.name for m in metrics_of(scope)]
    if metric not in names:
        errors.append({"field": "metric", "reason": f"unknown {scope} metric {metric!r}; one "
                       "of: " + ", ".join(names)})  # fmt: skip
    for field, key in (("x", x), ("by", by)):
        if key in FLOW_ONLY and scope != "flow":
            errors.append({"field": field, "reason": f"{key!r} needs scope=flow"})
        elif key is not None and key not in SPECIAL and "=" in key:
            errors.append({"field": field, "reason": "a spec field path or one of "
                           + ", ".join(SPECIAL)})  # fmt: skip
    if not (selection.experiments or selection.runs or selection.points):
        errors.append({"field": "experiment", "reason": "choose experiments, points or runs"})
    if len(selection.experiments) > MAX_EXPERIMENTS:
        errors.append({"field": "experiment", "reason": f"at most {MAX_EXPERIMENTS}"})
    if len(selection.runs) + len(selection.points) > MAX_PICKS:
        errors.append({"field": "run", "reason": f"at most {MAX_PICKS} runs and points"})
    if errors:
        raise ValidationFailed.of(errors, "invalid comparison")


def _point(text: str, i: int) -> tuple[str, int]:
    experiment, sep, index = text.rpartition(":")
    if not sep or not experiment or not index.isdigit():
        raise ValidationFailed.field(f"point.{i}", f"{text!r} is not EXPERIMENT:POINT_INDEX")
    return experiment, int(index)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class _Reader:
    """The x or by value of each run (or flow)."""

    def __init__(self, key: str, scope: Scope, listed: dict[str, Listed],
                 specs: dict[tuple[str, int], dict[str, Any]]) -> None:  # fmt: skip
        self.key, self.scope, self.listed, self.specs = key, scope, listed, specs
        spec_unit = None if key in SPECIAL else unit_of_path(key)
        self.unit = _SPEC_UNITS.get(spec_unit) if spec_unit else None

    def value(self, row: Value) -> Any:
        if self.key == "experiment":
            return row.experiment_id
        if self.key == "flow":
            return row.flow
        if self.key == "algorithm":
            return row.algorithm
        path = self.key
        if self.scope == "flow" and path.startswith("flows[*]"):
            path = f"flows[{row.flow}]" + path.removeprefix("flows[*]")
        found = get_path(self.specs.get((row.experiment_id, row.point_index), {}), path)
        distinct = list({_key(v): v for v in found}.values())
        if not distinct:
            return None
        return distinct[0] if len(distinct) == 1 else distinct

    def label(self, value: Any) -> str:
        if self.key == "experiment":
            e = self.listed[value]
            return f"{e.experiment.name} ({browse.short_id(e.experiment.id)})"
        if value is None:
            return "(none)"
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return value_text(value)  # a `flows` axis: "2 × reno"
        if isinstance(value, list):
            return " / ".join(self.label(v) for v in value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        return format_quantity(value, self.unit or DIMENSIONLESS)


def _ordered(keys: dict[str, Any]) -> list[str]:
    """Numbers in numeric order; buffers of one unit by their size; anything else in order of
    appearance (`keys` is filled in the order that matters)."""
    values = list(keys.values())
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return sorted(keys, key=lambda k: float(keys[k]))
    buffers = [_buffer(v) for v in values]
    if values and all(b is not None for b in buffers) and len({b.unit for b in buffers if b}) == 1:
        size = {k: b.value for k, b in zip(keys, buffers, strict=True) if b is not None}
        return sorted(keys, key=lambda k: size[k])
    return list(keys)


def _buffer(value: Any) -> Buffer | None:
    try:
        return parse_buffer(value) if isinstance(value, str) else None
    except ValueError:
        return None


def compare(
    session: Session,
    team: Team,
    selection: Selection,
    *,
    metric: str,
    x: str,
    by: str | None,
    scope: Scope,
) -> CrossComparison:
    _check(selection, metric, scope, x, by)
    listed: dict[str, Listed] = {}
    for ref in selection.experiments:
        found = browse.resolve(session, team.id, ref)
        listed[found.experiment.id] = found
    whole = list(listed)
    points: dict[str, set[int]] = defaultdict(set)
    for i, text in enumerate(selection.points):
        ref, index = _point(text, i)
        found = browse.resolve(session, team.id, ref)
        listed.setdefault(found.experiment.id, found)
        points[found.experiment.id].add(index)
    run_ids = []
    for ref in selection.runs:
        run = runs.get_run(session, team, ref)
        run_ids.append(run.id)
        if run.experiment_id not in listed:
            listed[run.experiment_id] = browse.resolve(session, team.id, run.experiment_id)
    if by is None and len(listed) > 1:
        by = "experiment"
    by = by or None  # "": one series of every run
    where = repository.selected(whole, points, run_ids)
    read = repository.aggregate_values if scope == "aggregate" else repository.flow_values
    order = {e: i for i, e in enumerate(listed)}
    rows = sorted(read(session, where, metric),
                  key=lambda r: (order[r.experiment_id], r.point_index, r.flow or 0))  # fmt: skip
    needed: dict[str, set[int]] = defaultdict(set)
    if any(k not in SPECIAL for k in (x, by) if k is not None):
        for row in rows:
            needed[row.experiment_id].add(row.point_index)
    specs = repository.point_specs(session, needed)
    x_reader = _Reader(x, scope, listed, specs)
    by_reader = _Reader(by, scope, listed, specs) if by else None

    cells: dict[str, dict[str, list[Value]]] = defaultdict(lambda: defaultdict(list))
    x_of: dict[str, list[Any]] = defaultdict(list)  # each experiment's x values in its order
    by_values: dict[str, Any] = {}
    for row in rows:
        xv = x_reader.value(row)
        bv = by_reader.value(row) if by_reader else None
        if xv not in x_of[row.experiment_id]:
            x_of[row.experiment_id].append(xv)
        by_values.setdefault(_key(bv), bv)
        cells[_key(bv)][_key(xv)].append(row)
    # x values in the order of the experiment that has the most of them (its matrix's order),
    # then the others' new ones.
    x_values: dict[str, Any] = {}
    for sequence in sorted(x_of.values(), key=len, reverse=True):
        for xv in sequence:
            x_values.setdefault(_key(xv), xv)
    series = []
    for by_key in _ordered(by_values):
        points_out = []
        for x_key in _ordered(x_values):
            members = cells[by_key].get(x_key)
            if not members:
                continue
            done = [r for r in members if r.status == RunStatus.done.value and r.value is not None]
            values = [float(r.value) for r in done if r.value is not None]
            points_out.append(CrossPoint(
                x=x_values[x_key], label=x_reader.label(x_values[x_key]), median=median(values),
                siqr=siqr(values), n=len(values), runs=sorted({r.run_id for r in done}),
            ))  # fmt: skip
        label = by_reader.label(by_values[by_key]) if by_reader else "all runs"
        series.append(CrossSeries(by=by_values[by_key], label=label, points=points_out))
    counts = Counter(e for _, e in {(r.run_id, r.experiment_id) for r in rows})
    definition = METRICS[metric]
    params: list[tuple[str, str]] = [("experiment", e) for e in whole]
    params += [("point", f"{e}:{p}") for e, indexes in points.items() for p in sorted(indexes)]
    params += [("run", r) for r in run_ids]
    params += [("metric", metric), ("scope", scope), ("x", x)]
    if by:
        params.append(("by", by))
    return CrossComparison(
        metric=metric,
        label=definition.label,
        unit=definition.unit,
        scope=scope,
        x=x,
        x_unit=x_reader.unit,
        by=by,
        experiments=[
            ComparedExperiment(
                id=e.experiment.id,
                short_id=browse.short_id(e.experiment.id),
                name=e.experiment.name,
                team=e.team,
                access=e.access,
                axes=list(e.experiment.axes),
                runs=counts.get(i, 0),
            )
            for i, e in listed.items()
        ],  # fmt: skip
        series=series,
        permalink="/ui/compare?" + urlencode(params),
    )
