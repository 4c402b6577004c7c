"""Reproductions of the seed papers: what a seed's claims file says.

Each seed has a folder `schemas/examples/seeds/<seed>/` with its templates (matrices at the
paper's own parameters, one or more figures each) and one `claims.yaml`: the paper, its figures,
each template's quick variant, and the claims. A claim is one qualitative statement the paper
makes about a figure, encoded once as a comparison of two measured quantities (or of one with
a number): e.g. "TCP-BFA's mean queue is below half of Reno's" is

    measure: {metric: queue_mean_pkts, where: {flows[*].algorithm: bfa}}
    op: "<"
    factor: 0.5
    than: {metric: queue_mean_pkts, where: {flows[*].algorithm: reno}}

Both sides are the median over the repetitions of a matrix point (its runs that finished); the
claim holds when median(measure) op factor x median(than). `ccbench.reproduce` evaluates claims
against an experiment's report; `ccbench reproduce` submits the templates and prints them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from schemas.metrics import METRICS, ModelScope
from schemas.spec import StrictModel
from schemas.units import Period

SEEDS = ("000", "001", "002", "003", "004")
Comparison = Literal["<", "<=", ">", ">="]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
FigureId = Annotated[str, StringConstraints(min_length=1, max_length=20)]
AxisPath = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class FlowSelection(StrictModel):
    """Which flows of a run a flow metric is taken from, and how their values combine."""

    algorithm: str | None = Field(
        None, description="flows whose label is this (an algorithm id, or cbr-udp)"
    )
    index: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, min_length=1, description="flows by their place in the spec's flow list (0-based)"
    )
    direction: Literal["forward", "reverse"] = "forward"
    reduce: Literal["mean", "sum", "min", "max"] = Field(
        "mean", description="how the selected flows' values make the run's value"
    )


class Measure(StrictModel):
    """A quantity measured at one matrix point: an aggregate metric of the run, or a flow metric
    of some of its flows (`flows`); its value at the point is the median over the point's
    finished repetitions, with their SIQR."""

    metric: str = Field(description="a metric of the catalogue (schemas/metrics.py)")
    template: str | None = Field(
        None, description="the template it is measured in, when not the claim's own"
    )
    where: dict[AxisPath, Any] = Field(
        default_factory=dict,
        description="the matrix point: axis path -> value as the template writes it (a `flows` "
        "axis: the number of flows, or its mix as '5 aaimd + 20 reno')",
    )
    flows: FlowSelection | None = Field(None, description="a flow metric: of which flows")

    @model_validator(mode="after")
    def _known_metric(self) -> Measure:
        metric = METRICS.get(self.metric)
        if metric is None:
            raise ValueError(f"metric {self.metric!r} is not in the catalogue")
        scope: ModelScope = "flow" if self.flows is not None else "aggregate"
        if not metric.in_scope(scope):
            hint = "name the flows (flows: ...)" if scope == "aggregate" else "drop flows:"
            raise ValueError(f"{self.metric} is not an {scope} metric: {hint}")
        return self


class Claim(StrictModel):
    """One qualitative statement of the paper about one figure, and how it is measured."""

    id: Slug
    figure: FigureId = Field(description="the figure (or table) of the paper, e.g. '5', 'I'")
    template: str = Field(description="the template (file name in the seed's folder) it reads")
    source: str = Field(description="where the paper says it: section and figure")
    statement: str = Field(min_length=1, description="the claim, in words")
    paper: str = Field("", description="what the paper reports, where it gives numbers")
    measure: Measure
    op: Comparison
    factor: float = Field(1.0, gt=0, description="the claim compares measure with factor x than")
    than: Measure | float = Field(description="the other quantity, or a number (SI units)")
    each: dict[AxisPath, list[Any] | None] = Field(
        default_factory=dict,
        description="axes the claim holds at each value of (a row each; null: every value the "
        "report has): added to both sides' `where`; both sides read the claim's template",
    )

    @model_validator(mode="before")
    @classmethod
    def _each_list(cls, data: Any) -> Any:
        """`each: [path, ...]` is short for every value of each path."""
        if isinstance(data, dict) and isinstance(data.get("each"), list):
            return {**data, "each": dict.fromkeys(data["each"])}
        return data

    @model_validator(mode="after")
    def _each_not_pinned(self) -> Claim:
        sides = [self.measure] + ([self.than] if isinstance(self.than, Measure) else [])
        for path in self.each:
            if any(path in side.where for side in sides):
                raise ValueError(f"each: {path} is also pinned by a where")
        if self.each and any(side.template not in (None, self.template) for side in sides):
            raise ValueError("each: both sides must read the claim's template")
        return self

    def measures(self) -> list[Measure]:
        """Its sides that are measured (not a number)."""
        return [self.measure] + ([self.than] if isinstance(self.than, Measure) else [])

    def template_of(self, measure: Measure) -> str:
        return measure.template or self.template

    def templates(self) -> list[str]:
        """The templates it reads, its own first."""
        files = [self.template]
        for side in self.measures():
            if self.template_of(side) not in files:
                files.append(self.template_of(side))
        return files


class Figure(StrictModel):
    id: FigureId
    title: str = Field(min_length=1, description="what the paper's figure shows")
    notes: list[str] = Field(
        default_factory=list,
        description="what ccbench cannot express of it, or expresses differently, and why",
    )


class QuickOptions(StrictModel):
    """How `--quick` shortens a template (ccbench.reproduce.quick_submission): every time of the
    spec is scaled by duration / the template's duration (flows' starts and lengths, the
    measurement's skip), repetitions are capped, and each axis keeps only the values the chosen
    claims compare: those their `where` pins, and of an axis a claim holds at each value of,
    the claim's values within `axes[path]` (where given)."""

    duration: Period = Field(description="the quick run's length (at most the template's)")
    repetitions: int = Field(2, ge=1, le=100)
    axes: dict[AxisPath, list[Any]] = Field(
        default_factory=dict,
        description="values kept of the axes claims hold at each value of (the others keep "
        "what the claims pin)",
    )


class Template(StrictModel):
    file: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*\.yaml$")
    quick: QuickOptions


class SeedClaims(StrictModel):
    """A seed's claims file, `schemas/examples/seeds/<seed>/claims.yaml`."""

    seed: Literal["000", "001", "002", "003", "004"]
    paper: str = Field(description="the paper's file in the seeds folder")
    title: str
    figures: list[Figure] = Field(min_length=1)
    templates: list[Template] = Field(min_length=1)
    claims: list[Claim] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> SeedClaims:
        figures = [f.id for f in self.figures]
        files = [t.file for t in self.templates]
        ids = [c.id for c in self.claims]
        for name, values in (("figures", figures), ("templates", files), ("claims", ids)):
            if len(set(values)) != len(values):
                raise ValueError(f"{name}: an id appears twice")
        for claim in self.claims:
            if claim.figure not in figures:
                raise ValueError(f"claims.{claim.id}: figure {claim.figure!r} is not listed")
            for file in claim.templates():
                if file not in files:
                    raise ValueError(f"claims.{claim.id}: template {file!r} is not listed")
        unused = set(files) - {f for c in self.claims for f in c.templates()}
        if unused:
            raise ValueError(f"templates {sorted(unused)} have no claim")
        return self

    def template(self, file: str) -> Template:
        return next(t for t in self.templates if t.file == file)

    def figure(self, figure_id: str) -> Figure:
        return next(f for f in self.figures if f.id == figure_id)
