"""Browsing experiments across teams: the listing's filters, sort orders and columns.

What a listing shows and filters on is derived once and kept with the experiment, so a page
of the listing reads only the experiments table (and its facets) whatever the number of runs:
- at submission: the algorithm ids and testbed kinds of its runs, and its facets — every
  (field path, value) of its runs' specs, paths written as matrix axes are
  (`topology.bottleneck.buffer`, `flows[*].algorithm` for any flow, `flows[1].start` for one),
  values as canonical text;
- at every refresh of its status (ccbench.db.runs): its run counts by status and the median
  of each aggregate metric over its done runs (`summary`).

A parameter filter `path=value` matches an experiment with some run whose spec has that value
at that path; the value may be written with any unit (`20ms` matches a stored 0.02 s)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select
from sqlalchemy.orm import Session

from ccbench.access import Access
from ccbench.analysis.metrics import median
from ccbench.db.models import (
    Campaign,
    Experiment,
    ExperimentFacet,
    ExperimentPin,
    ExperimentTag,
    Run,
    Team,
)
from ccbench.errors import NotFound, ValidationFailed
from ccbench.runstate import ACTIVE, RunStatus
from ccbench.sharing import ResourceKind, accesses, only, readable
from schemas.limits import AXIS_PATH_MAX, FACET_VALUE_MAX
from schemas.metrics import metrics_of
from schemas.units import Buffer, parse_buffer, parse_duration, parse_rate, parse_size

# Spec fields that describe the experiment rather than its conditions: not facets.
_NOT_FACETS = {"schema_version", "kind", "name", "description", "tags", "seed"}
# Lists of plain values longer than this (a rate trace) are not facets.
_LIST_FACETS_MAX = 16
# The characters shown of an id, and the fewest a prefix must have.
SHORT_ID = 8
PREFIX_MIN = 4
_HEX = set("0123456789abcdef")

AGGREGATE_METRICS = tuple(m.name for m in metrics_of("aggregate"))


def short_id(experiment_id: str) -> str:
    return experiment_id[:SHORT_ID]


# --- facets ----------------------------------------------------------------------------------


def canonical(value: Any) -> str | None:
    """A spec value as the text facets store: numbers in SI units with 12 significant digits,
    booleans as true/false, strings as they are; None and containers have none."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format(float(value), ".12g")
    if isinstance(value, str) and len(value) <= FACET_VALUE_MAX:
        return value
    return None


def _leaves(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if not path and key in _NOT_FACETS:
                continue
            yield from _leaves(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        if len(node) > _LIST_FACETS_MAX and not all(isinstance(v, dict) for v in node):
            return
        for i, item in enumerate(node):
            yield from _leaves(item, f"{path}[*]")
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, node


def facets_of(spec: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (path, canonical value) of a stored (SI) spec."""
    out = set()
    for path, value in _leaves(spec, ""):
        text = canonical(value)
        if text is not None and len(path) <= AXIS_PATH_MAX:
            out.add((path, text))
    return out


def candidates(text: str) -> set[str]:
    """The canonical texts a filter value may stand for: itself, and the value it has in each
    unit it parses as (`20ms` -> 0.02, `64KB` -> 64000 bytes or a 64000B buffer)."""
    text = text.strip()
    out = {text}
    readings: list[Callable[[str], Any]] = [
        parse_rate, parse_duration, parse_size, parse_buffer, json.loads
    ]  # fmt: skip
    for read in readings:
        try:
            value = read(text)
        except (ValueError, TypeError):
            continue
        found = str(value) if isinstance(value, Buffer) else canonical(value)
        if found is not None:
            out.add(found)
    return out


@dataclass(frozen=True)
class Derived:
    """What a listing shows of an experiment's runs, known at submission."""

    algorithms: str
    testbed: str
    facets: set[tuple[str, str]] = field(default_factory=set)


def derive(specs: Iterable[dict[str, Any]]) -> Derived:
    """Algorithms, testbeds and facets of an experiment's runs (one spec per matrix point is
    enough: repetitions differ only in their seed)."""
    facets: set[tuple[str, str]] = set()
    for spec in specs:
        facets |= facets_of(spec)
    algorithms = sorted(v for k, v in facets if k == "flows[*].algorithm")
    testbeds = sorted(v for k, v in facets if k == "testbed.kind")
    return Derived(" ".join(algorithms), " ".join(testbeds), facets)


# --- what a refresh keeps up to date -----------------------------------------------------------


def listed_counts(counts: dict[RunStatus, int]) -> dict[str, int]:
    """Run counts as the listing shows them: every active state counts as running."""
    out: dict[str, int] = {}
    for status, n in counts.items():
        key = "running" if status in ACTIVE else status.value
        out[key] = out.get(key, 0) + n
    return {k: v for k, v in out.items() if v}


def metric_medians(session: Session, experiment_id: str) -> dict[str, float | None]:
    """The median of each aggregate metric over the experiment's done runs, read from the
    runs' stored aggregates (only those numbers leave the database)."""
    columns = [Run.aggregate["aggregate"][name].as_float() for name in AGGREGATE_METRICS]
    rows = session.execute(
        select(*columns).where(
            Run.experiment_id == experiment_id, Run.status == RunStatus.done.value
        )
    ).all()
    return {
        name: median([float(row[i]) for row in rows if row[i] is not None])
        for i, name in enumerate(AGGREGATE_METRICS)
    }


# --- the listing -----------------------------------------------------------------------------


class SortKey(StrEnum):
    id = "id"
    name = "name"
    team = "team"
    created = "created"
    status = "status"
    runs = "runs"
    algorithms = "algorithms"
    testbed = "testbed"
    tags = "tags"
    pinned = "pinned"


SORT_KEYS = [k.value for k in SortKey] + list(AGGREGATE_METRICS)


@dataclass(frozen=True)
class ParamFilter:
    path: str
    value: str

    @classmethod
    def parse(cls, text: str, field_name: str) -> ParamFilter:
        path, sep, value = text.partition("=")
        if not sep or not path.strip() or not value.strip():
            raise ValidationFailed.field(
                field_name, f"{text!r} is not PATH=VALUE, e.g. topology.bottleneck.buffer=1bdp"
            )
        return cls(path.strip(), value.strip())


@dataclass(frozen=True)
class Filters:
    text: str | None = None
    name: str | None = None  # in the name only
    id_prefix: str | None = None  # the id starts with this (any length: clients resolve ids)
    tags: Sequence[str] = ()
    algorithms: Sequence[str] = ()
    params: Sequence[ParamFilter] = ()
    statuses: Sequence[str] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None
    team: str | None = None
    access: Access | None = None
    pinned: bool | None = None
    testbed: str | None = None


@dataclass(frozen=True)
class Listed:
    experiment: Experiment
    team: str
    access: Access
    pinned: bool


def visible(team_id: str) -> ColumnElement[bool]:
    """The experiments a team may read: its own, those shared with it (or public), and those
    of campaigns shared with it (or public)."""
    return or_(
        readable(ResourceKind.experiment, team_id, Experiment.team_id, Experiment.id),
        Experiment.campaign_id.in_(
            select(Campaign.id).where(
                Campaign.team_id != team_id,
                readable(ResourceKind.campaign, team_id, Campaign.team_id, Campaign.id),
            )  # fmt: skip
        ),
    )


def _only(access: Access, team_id: str) -> ColumnElement[bool]:
    """The experiments the team reads with exactly this access (a campaign's experiments with
    their campaign's)."""
    direct = only(access, ResourceKind.experiment, team_id, Experiment.team_id, Experiment.id)
    if access == Access.own:
        return direct
    by_campaign = select(Campaign.id).where(
        only(access, ResourceKind.campaign, team_id, Campaign.team_id, Campaign.id)
    )
    return or_(direct, Experiment.campaign_id.in_(by_campaign))


def _pinned(team_id: str) -> ColumnElement[bool]:
    return Experiment.id.in_(
        select(ExperimentPin.experiment_id).where(ExperimentPin.team_id == team_id)
    )


def _where(team_id: str, filters: Filters) -> list[ColumnElement[bool]]:
    clauses = [visible(team_id)]
    if filters.access is not None:
        clauses.append(_only(filters.access, team_id))
    if filters.text:
        text = filters.text.strip()
        tagged = select(ExperimentTag.experiment_id).where(
            ExperimentTag.tag.icontains(text, autoescape=True)
        )
        matches = [
            Experiment.name.icontains(text, autoescape=True),
            Experiment.description.icontains(text, autoescape=True),
            Experiment.notes.icontains(text, autoescape=True),
            Experiment.id.in_(tagged),
        ]
        if is_prefix(text.lower()) or len(text) == 32:
            matches.append(id_matches(Experiment.id, text))
        clauses.append(or_(*matches))
    if filters.name:
        clauses.append(Experiment.name.contains(filters.name, autoescape=True))
    if filters.id_prefix:
        clauses.append(id_starts(Experiment.id, filters.id_prefix))
    for tag in filters.tags:
        clauses.append(
            Experiment.id.in_(select(ExperimentTag.experiment_id).where(ExperimentTag.tag == tag))
        )
    if filters.algorithms:
        clauses.append(_facet("flows[*].algorithm", set(filters.algorithms)))
    for param in filters.params:
        clauses.append(_facet(param.path, candidates(param.value)))
    if filters.statuses:
        clauses.append(Experiment.status.in_(list(filters.statuses)))
    if filters.created_after is not None:
        clauses.append(Experiment.created_at >= filters.created_after)
    if filters.created_before is not None:
        clauses.append(Experiment.created_at < filters.created_before)
    if filters.team:
        clauses.append(Experiment.team_id.in_(select(Team.id).where(Team.name == filters.team)))
    if filters.testbed:
        clauses.append(_facet("testbed.kind", {filters.testbed}))
    if filters.pinned is not None:
        pinned = _pinned(team_id)
        clauses.append(pinned if filters.pinned else ~pinned)
    return clauses


def _facet(key: str, values: set[str]) -> ColumnElement[bool]:
    return Experiment.id.in_(
        select(ExperimentFacet.experiment_id).where(
            ExperimentFacet.key == key, ExperimentFacet.value.in_(sorted(values))
        )
    )


def _id_prefix(column: Any, prefix: str) -> ColumnElement[bool]:
    """Ids starting with a hex prefix, as a range the primary key's index serves."""
    pad = 32 - len(prefix)
    return and_(column >= prefix + "0" * pad, column <= prefix + "f" * pad)


def id_starts(column: Any, prefix: str) -> ColumnElement[bool]:
    """Ids that start with `prefix`, however short (what clients resolve a short id with):
    a range on the primary key's index for hex, which every id is."""
    wanted = prefix.lower()
    if len(wanted) <= 32 and set(wanted) <= _HEX:
        return _id_prefix(column, wanted)
    started: ColumnElement[bool] = column.startswith(prefix, autoescape=True)
    return started


def is_prefix(text: str) -> bool:
    """A short id: 4 to 31 hex characters (ids are 32)."""
    return PREFIX_MIN <= len(text) < 32 and set(text) <= _HEX


def id_matches(column: Any, id_or_prefix: str) -> ColumnElement[bool]:
    """The id itself, or every id starting with a short id."""
    wanted = id_or_prefix.strip().lower()
    return _id_prefix(column, wanted) if is_prefix(wanted) else column == id_or_prefix


def ambiguous(what: str, id_or_prefix: str, ids: Sequence[str]) -> ValidationFailed:
    shown = ", ".join(short_id(i) + "…" for i in ids[:5])
    count = "more than 5" if len(ids) > 5 else str(len(ids))
    return ValidationFailed.field(
        f"{what}_id",
        f"prefix {id_or_prefix!r} matches {count} {what}s ({shown}): give more characters",
    )


def _order(team_id: str, sort: str, descending: bool) -> list[Any]:
    if sort in AGGREGATE_METRICS:
        key: Any = Experiment.summary[sort].as_float()
    elif sort == SortKey.tags:
        key = (
            select(func.min(ExperimentTag.tag))
            .where(ExperimentTag.experiment_id == Experiment.id)
            .scalar_subquery()
        )
    elif sort == SortKey.pinned:
        key = _pinned(team_id)
    else:
        key = {
            SortKey.id: Experiment.id,
            SortKey.name: Experiment.name,
            SortKey.team: Team.name,
            SortKey.created: Experiment.created_at,
            SortKey.status: Experiment.status,
            SortKey.runs: Experiment.run_count,
            SortKey.algorithms: Experiment.algorithms,
            SortKey.testbed: Experiment.testbed,
        }[SortKey(sort)]
    ordered = key.desc() if descending else key.asc()
    # Missing values (a metric no run has yet) last, either way.
    return [ordered.nulls_last(), Experiment.id.desc() if descending else Experiment.id]


def list_experiments(
    session: Session,
    team_id: str,
    filters: Filters,
    *,
    sort: str | None,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[Listed], int]:
    """A page of the experiments the team can read, filtered and sorted, and the total.
    Without a sort key: pinned first, then newest first."""
    if sort is not None and sort not in SORT_KEYS:
        raise ValidationFailed.field("sort", f"unknown column {sort!r}; one of: "
                                     + ", ".join(SORT_KEYS))  # fmt: skip
    clauses = _where(team_id, filters)
    query: Select[tuple[Experiment, str]] = (
        select(Experiment, Team.name).join(Team, Team.id == Experiment.team_id).where(*clauses)
    )
    order: list[Any]
    if sort is None:
        order = [_pinned(team_id).desc(), Experiment.created_at.desc(), Experiment.id.desc()]
    else:
        order = _order(team_id, sort, descending)
    total = session.scalar(select(func.count()).select_from(Experiment).where(*clauses)) or 0
    rows = session.execute(query.order_by(*order).offset(offset).limit(limit)).all()
    return _listed(session, team_id, [(e, name) for e, name in rows]), total


def _listed(session: Session, team_id: str, rows: list[tuple[Experiment, str]]) -> list[Listed]:
    ids = [e.id for e, _ in rows]
    how = accesses(session, ResourceKind.experiment, team_id, {e.id: e.team_id for e, _ in rows})
    # Experiments of a campaign shared with the team: as the campaign is.
    campaigns = {e.campaign_id: e.team_id for e, _ in rows if e.id not in how and e.campaign_id}
    by_campaign = accesses(session, ResourceKind.campaign, team_id, campaigns)
    for e, _ in rows:
        if e.id not in how and e.campaign_id in by_campaign:
            how[e.id] = by_campaign[e.campaign_id]
    pinned = set(
        session.scalars(
            select(ExperimentPin.experiment_id).where(
                ExperimentPin.team_id == team_id, ExperimentPin.experiment_id.in_(ids)
            )
        )
    )
    return [Listed(e, name, how[e.id], e.id in pinned) for e, name in rows]


# --- one experiment by id or prefix -----------------------------------------------------------


def resolve(session: Session, team_id: str, id_or_prefix: str) -> Listed:
    """The experiment the team can read with this id or unique id prefix (at least 4 hex
    characters): NotFound when none, ValidationFailed naming the candidates when several."""
    rows = session.execute(
        select(Experiment, Team.name)
        .join(Team, Team.id == Experiment.team_id)
        .where(id_matches(Experiment.id, id_or_prefix), visible(team_id))
        .order_by(Experiment.id)
        .limit(6)
    ).all()
    if not rows:
        raise NotFound(f"experiment {id_or_prefix} not found")
    if len(rows) > 1:
        raise ambiguous("experiment", id_or_prefix, [e.id for e, _ in rows])
    return _listed(session, team_id, [(rows[0][0], rows[0][1])])[0]
