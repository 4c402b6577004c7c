"""Response shapes of the runs endpoints."""

from typing import Any

from pydantic import BaseModel, ConfigDict

from api.experiments.schemas import RunSummary


class FlowOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    flow_index: int
    algorithm: str
    metrics: dict[str, Any]


class RunListed(RunSummary):
    experiment_id: str


class RunDetail(RunListed):
    seed: int
    spec: dict[str, Any]
    worker_id: str | None
    timings: dict[str, Any]
    provenance: dict[str, Any]
    aggregate: dict[str, Any]
    flows: list[FlowOut]
    # Down-sampled time series, columnar: {"flow.0": {"t": [...], "cwnd_pkts": [...]}, ...}
    series: dict[str, dict[str, Any]]


class RunFile(BaseModel):
    name: str
    bytes: int
