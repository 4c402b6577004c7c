"""Shapes of a comparison across experiments."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from ccbench.access import Access

Scope = Literal["aggregate", "flow"]


class ComparedExperiment(BaseModel):
    id: str
    short_id: str
    name: str
    team: str
    access: Access
    axes: list[str]
    runs: int = Field(description="its runs in the comparison (done or not)")


class CrossPoint(BaseModel):
    x: Any = Field(description="the value on the x axis (SI units for quantities)")
    label: str = Field(description="the value as shown, with its unit")
    median: float | None
    siqr: float | None
    n: int = Field(description="values behind the median: done runs (x flows, per flow)")
    runs: list[str] = Field(description="ids of the done runs behind it")


class CrossSeries(BaseModel):
    by: Any
    label: str
    points: list[CrossPoint]


class CrossComparison(BaseModel):
    metric: str
    label: str = Field(description="the metric's label")
    unit: str = Field(description="the metric's SI unit (1: dimensionless)")
    scope: Scope
    x: str
    x_unit: str | None = Field(
        description="the unit of the x values when they are quantities, as the metric "
        "catalogue names it (bit/s, s, B)"
    )
    by: str | None
    experiments: list[ComparedExperiment]
    series: list[CrossSeries]
    permalink: str = Field(description="the comparison's page (/ui/compare?...)")
