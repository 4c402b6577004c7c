"""Response shapes of the experiments endpoints (the report shapes live in schemas/)."""

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

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


class ExperimentSummary(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    description: str
    kind: str
    status: str
    run_count: int
    tags: list[str]
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


class ExperimentDetail(ExperimentSummary):
    axes: list[str]
    submission: dict[str, Any]
    status_counts: dict[str, int]
    runs: list[RunSummary]
