"""A measurement campaign: an experiment repeated on a schedule over real paths, the way the
seeds measured their protocols on the Internet (seed 004 ran TFRC against TCP between sites at
random times of day and night for days; seed 000 measured BFA against Reno across one path at
three congestion levels, i.e. times of day). Its recurring shape follows RIPE Atlas's
measurements: an interval or a cron expression or random instants, start and stop or a count,
and which probes (here: hosts and the paths between them)."""

from __future__ import annotations

import re
from datetime import datetime, time
from enum import StrEnum
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from schemas.limits import TAGS_MAX
from schemas.spec import HOST_NAME_PATTERN, Description, Name, StrictModel, TagText
from schemas.units import SI_NUMBERS, CampaignInterval

HostName = Annotated[str, Field(pattern=HOST_NAME_PATTERN)]
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def _zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"{name!r} is not a time zone (an IANA name, e.g. Europe/Paris)") from exc
    return name


TimeZone = Annotated[str, AfterValidator(_zone), Field(max_length=64, examples=["Europe/Paris"])]


class Window(StrictModel):
    """A time-of-day window in the schedule's time zone, `HH:MM`; an end before the start
    crosses midnight (22:00-06:00)."""

    start: str = Field(pattern=_CLOCK.pattern, examples=["08:00"])
    end: str = Field(pattern=_CLOCK.pattern, examples=["12:00"])

    @model_validator(mode="after")
    def _not_empty(self) -> Window:
        if self.start == self.end:
            raise ValueError(f"window {self.start}-{self.end} has zero length")
        return self

    def bounds(self) -> tuple[time, time]:
        return time.fromisoformat(self.start), time.fromisoformat(self.end)


class IntervalSchedule(StrictModel):
    """Every `every`, from the campaign's start."""

    kind: Literal["interval"]
    every: CampaignInterval = Field(description="time between occurrences, e.g. 6h")


class CronSchedule(StrictModel):
    """At the instants of a cron expression (minute hour day-of-month month day-of-week) in
    `timezone`; daylight-saving changes follow the zone."""

    kind: Literal["cron"]
    expression: str = Field(examples=["0 */6 * * *"], max_length=200)
    timezone: TimeZone = "UTC"

    @field_validator("expression")
    @classmethod
    def _cron(cls, value: str) -> str:
        if not croniter.is_valid(value):
            raise ValueError(f"{value!r} is not a cron expression (minute hour day month weekday)")
        return value


class RandomSchedule(StrictModel):
    """Occurrences at uniformly random instants inside time-of-day windows (local time in
    `timezone`), drawn from the campaign's seed: reproducible, and never the same times of
    day twice (seed 004's "random times of day and night"). `per_day` instants a day over all
    the windows together, or `per_window` instants in each window every day (seed 000's
    comparison of congestion levels: each window gets its share)."""

    kind: Literal["random"]
    per_day: int | None = Field(None, ge=1, le=1440)
    per_window: int | None = Field(None, ge=1, le=1440)
    windows: list[Window] = Field(
        default_factory=lambda: [Window(start="00:00", end="23:59")], min_length=1, max_length=24
    )
    timezone: TimeZone = "UTC"

    @model_validator(mode="after")
    def _one_count(self) -> RandomSchedule:
        if (self.per_day is None) == (self.per_window is None):
            raise ValueError("give exactly one of per_day or per_window")
        return self


Schedule = Annotated[IntervalSchedule | CronSchedule | RandomSchedule, Field(discriminator="kind")]


class HostSelection(StrictModel):
    """The paths an occurrence measures, each a (sender, receiver) pair of the team's hosts:
    `pairs` names them; `group` or `labels` select hosts and `mesh: true` takes every ordered
    pair of them (resolved at each occurrence, so hosts added to the group join)."""

    pairs: list[tuple[HostName, HostName]] | None = Field(None, min_length=1, max_length=1000)
    group: str | None = Field(None, pattern=HOST_NAME_PATTERN)
    labels: dict[str, str] | None = None
    mesh: bool = False

    @model_validator(mode="after")
    def _one_way(self) -> HostSelection:
        given = [k for k in ("pairs", "group", "labels") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of pairs, group or labels")
        if self.pairs is not None:
            if self.mesh:
                raise ValueError("mesh: applies to a group or labels")
            for src, dst in self.pairs:
                if src == dst:
                    raise ValueError(f"pairs: {src} -> {dst} is not a path")
        elif not self.mesh:
            raise ValueError("a group or labels select hosts: set mesh: true for every pair")
        return self


class CampaignSpec(StrictModel):
    schema_version: Literal[1] = 1
    kind: Literal["campaign"] = "campaign"
    name: Name
    description: Description = ""
    tags: list[TagText] = Field(default_factory=list, max_length=TAGS_MAX)
    experiment: dict[str, Any] = Field(
        description="an experiment spec or a matrix on the hosts testbed whose flows leave out "
        "src and dst: each path fills them (a flow that names its hosts keeps them)"
    )
    hosts: HostSelection
    schedule: Schedule
    start: AwareDatetime | None = Field(None, description="first instant; default: now")
    stop: AwareDatetime | None = Field(None, description="no occurrence after it")
    count: int | None = Field(None, ge=1, le=1_000_000, description="at most this many")
    repetitions: int = Field(1, ge=1, le=100, description="runs of the experiment per occurrence")
    catch_up: Literal["skip", "run_once"] = Field(
        "skip",
        description="occurrences missed while no scheduler ran: skip records them as missed; "
        "run_once runs one of them now (never a burst)",
    )
    seed: int | None = Field(None, ge=0, lt=2**31, description="draws random instants")

    @field_validator("stop")
    @classmethod
    def _after_start(cls, stop: datetime | None, info: ValidationInfo) -> datetime | None:
        start = info.data.get("start")
        if stop is not None and start is not None and stop <= start:
            raise ValueError("must come after start")
        return stop


def stored_campaign(document: dict[str, Any]) -> CampaignSpec:
    """A campaign as the database keeps it (quantities as SI numbers, its start filled in)."""
    return CampaignSpec.model_validate(document, context=SI_NUMBERS)


class CampaignState(StrEnum):
    active = "active"  # occurrences fire as scheduled
    paused = "paused"  # none fire; resuming skips what passed meanwhile
    finished = "finished"  # its count or stop time reached
    stopped = "stopped"  # stopped by its team


class OccurrenceState(StrEnum):
    fired = "fired"  # its experiments were created (one per path)
    missed = "missed"  # no scheduler ran at its time (catch_up: skip)
    failed = "failed"  # refused at its time, e.g. a host it names is gone


class OccurrenceValue(BaseModel):
    """One occurrence's value of the metric on one path (and value of the `by` axis): the
    median over that experiment's finished runs of the group (its repetitions)."""

    due_at: datetime
    state: OccurrenceState
    path: str | None = Field(description="sender->receiver; none for an occurrence that failed")
    group: str | None = Field(None, description="the `by` axis value")
    experiment_id: str | None
    status: str | None = Field(description="the experiment's status")
    runs_done: int
    value: float | None
    error: str | None = None


class Summary(BaseModel):
    n: int = Field(description="occurrences with a value")
    median: float | None
    siqr: float | None = Field(description="semi-interquartile range, (Q3 - Q1) / 2")


class WindowSummary(Summary):
    window: str = Field(description="time of day, HH:MM-HH:MM in the schedule's time zone")


class SeriesSummary(Summary):
    """One path's (and `by` value's) occurrences: over all of them and per time-of-day window
    (seed 004 reports the median and SIQR of E over its runs; seed 000 compares times of day)."""

    path: str
    group: str | None = None
    windows: list[WindowSummary]


class CampaignReport(BaseModel):
    campaign_id: str
    name: str
    metric: str
    unit: str
    label: str
    by: str | None = Field(description="the matrix axis splitting each path's series, if any")
    timezone: str = Field(description="the zone of the time-of-day windows")
    occurrences: list[OccurrenceValue]
    series: list[SeriesSummary]


class CampaignChanges(StrictModel):
    """An edit of a running campaign: the fields given replace the stored ones (a `stop` or
    `count` of null removes it); the campaign is validated as a whole, from now on."""

    schedule: Schedule | None = None
    stop: AwareDatetime | None = None
    count: int | None = Field(None, ge=1, le=1_000_000)
    catch_up: Literal["skip", "run_once"] | None = None
    description: Description | None = None
