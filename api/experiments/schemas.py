"""Request and response shapes of the experiments endpoints (the report shapes live in
schemas/)."""

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ccbench.access import Access
from schemas.limits import DESCRIPTION_MAX, NAME_MAX, TAGS_MAX
from schemas.spec import TagText

T = TypeVar("T")

# Pages of a listing: bounded so an offset always fits the database's integers.
PAGE_MAX = 1_000_000
PAGE_SIZE_MAX = 200
ID_PREFIX_HELP = (
    "only those whose id starts with this (clients resolve a short id: one match is the one "
    "meant, several are ambiguous)"
)


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    page: int
    page_size: int


class ExperimentCreated(BaseModel):
    id: str
    name: str
    kind: str
    status: str
    run_count: int
    source_experiment_id: str | None = Field(None, description="the experiment it runs again")


class ExperimentSummary(BaseModel):
    """An experiment as the listing shows it."""

    id: str
    short_id: str = Field(description="the id's first characters, as pages and the CLI show it")
    name: str
    description: str
    notes: str
    kind: str
    status: str
    status_counts: dict[str, int] = Field(
        description="runs by status (queued, running: any active state, done, failed, cancelled)"
    )
    run_count: int
    tags: list[str]
    team: str = Field(description="the team that owns it")
    access: Access = Field(
        description="own: the caller's team's; shared: shared with it by name; public"
    )
    pinned: bool = Field(description="pinned by the caller's team")
    algorithms: list[str] = Field(description="algorithm ids of its flows, over all its runs")
    testbeds: list[str]
    metrics: dict[str, float | None] = Field(
        description="median of each aggregate metric over its done runs (schemas/metrics.py: "
        "names and SI units)"
    )
    source_experiment_id: str | None = Field(description="the experiment it runs again")
    created_at: datetime
    updated_at: datetime


class RunSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    order_index: int
    point_index: int
    repetition: int
    axis_values: dict[str, Any]
    status: str
    attempt: int
    progress: dict[str, Any]
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None
    runs_beside: int | None = Field(
        description="other runs that ran on the same host at some moment of its latest "
        "attempt (packing); null until an attempt has finished"
    )
    load_reruns: int = Field(
        description="times it was run again, alone, because checks that load spoils failed"
    )


class Failure(BaseModel):
    """Runs that failed with the same error."""

    error: str
    runs: int
    run_ids: list[str] = Field(description="the first few of them")


class ExperimentDetail(ExperimentSummary):
    axes: list[str]
    submission: dict[str, Any]
    status_counts_exact: dict[str, int] = Field(description="runs by their exact status")
    failures: list[Failure] = Field(description="why runs failed, most frequent first")
    reruns: list[str] = Field(description="ids of the experiments that run this one again")
    runs: list[RunSummary]


class ExperimentPatch(BaseModel):
    """What may change after submission; fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=NAME_MAX)
    description: str | None = Field(None, max_length=DESCRIPTION_MAX)
    notes: str | None = Field(None, max_length=DESCRIPTION_MAX)
    tags: list[TagText] | None = Field(None, max_length=TAGS_MAX, description="replaces every tag")


class Rerun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    edits: dict[str, Any] | None = Field(
        None,
        description="a JSON Merge Patch (RFC 7386) on the stored submission, in its own terms "
        'and units, e.g. {"repetitions": 5} or {"base": {"duration": "30s"}}; {"seed": null} '
        "draws new seeds (without it every run gets the seed it had)",
    )


class SharesBody(BaseModel):
    """Who besides the owner may read an experiment (read-only)."""

    model_config = ConfigDict(extra="forbid")

    public: bool = Field(False, description="every team may read it")
    teams: list[str] = Field(
        default_factory=list, max_length=1000, description="names of teams that may read it"
    )
