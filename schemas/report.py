"""The report's JSON shape. Every metric field's name, unit (SI, the stored value's) and
description come from the metric catalogue, `schemas/metrics.py`; the formulas are in
`ccbench.analysis.metrics`. tests/test_schemas.py fails when the models and the catalogue
disagree."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined

from schemas.metrics import BIT_PER_S, BYTE, PACKET, SECOND, metric_field

# What identifies a flow in FlowMetrics, beside its metrics.
FLOW_KEYS = ("flow", "algorithm", "direction")


class FlowMetrics(BaseModel):
    flow: int
    algorithm: str
    goodput_bps: float | None = metric_field("goodput_bps", "flow")
    throughput_bps: float | None = metric_field("throughput_bps", "flow")
    rtt_mean_s: float | None = metric_field("rtt_mean_s", "flow")
    rtt_p95_s: float | None = metric_field("rtt_p95_s", "flow")
    rtt_min_s: float | None = metric_field("rtt_min_s", "flow")
    retransmits: int | None = metric_field("retransmits", "flow")
    bytes_received: int = metric_field("bytes_received", "flow")
    direction: str = Field("forward", description="reverse: reverse-path traffic")
    queue_delay_mean_s: float | None = metric_field("queue_delay_mean_s", "flow", None)
    loss_rate: float | None = metric_field("loss_rate", "flow", None)


class AggregateMetrics(BaseModel):
    """The forward bottleneck: reverse-path flows are left out of the aggregates."""

    goodput_bps: float | None = metric_field("goodput_bps", "aggregate")
    throughput_bps: float | None = metric_field("throughput_bps", "aggregate")
    utilization: float | None = metric_field("utilization", "aggregate")
    jain_index: float | None = metric_field("jain_index", "aggregate")
    rtt_mean_s: float | None = metric_field("rtt_mean_s", "aggregate")
    queue_mean_pkts: float | None = metric_field("queue_mean_pkts", "aggregate")
    queue_max_pkts: float | None = metric_field("queue_max_pkts", "aggregate")
    queue_delay_mean_s: float | None = metric_field("queue_delay_mean_s", "aggregate")
    drops: int | None = metric_field("drops", "aggregate")
    loss_rate: float | None = metric_field("loss_rate", "aggregate")
    power: float | None = metric_field("power", "aggregate")
    normalized_fairness: float | None = metric_field("normalized_fairness", "aggregate", None)
    friendliness_ratio: float | None = metric_field("friendliness_ratio", "aggregate", None)
    equivalence_ratio: float | None = metric_field("equivalence_ratio", "aggregate", None)
    fc_ratio: float | None = metric_field("fc_ratio", "aggregate", None)
    convergence_time_s: float | None = metric_field("convergence_time_s", "aggregate", None)


def _condition(label: str, unit: str, description: str, default: Any = PydanticUndefined) -> Any:
    """A field of AppliedConditions: its label (the JSON Schema's title) and unit, which the
    result pages show it with."""
    return Field(
        default, title=label, description=f"{description} [{unit}]",
        json_schema_extra={"x-unit": unit},
    )  # fmt: skip


class AppliedConditions(BaseModel):
    """What the testbed configured and what was measured against it."""

    rate_bps: float | None = _condition(
        "rate", BIT_PER_S, "configured rate; on a real path its nominal one"
    )
    delay_s: float | None = _condition(
        "one-way delay", SECOND, "configured one-way delay; none on a real path"
    )
    base_rtt_s: float | None = _condition(
        "base RTT", SECOND, "configured; on a real path the ping before"
    )
    buffer_pkts: int | None = _condition("buffer", PACKET, "configured buffer in packets")
    buffer_bytes: int | None = _condition("buffer", BYTE, "configured buffer in bytes")
    delay_mechanism: str | None = Field(
        title="delay mechanism", description="how the delay was emulated"
    )
    measured_min_rtt_s: float | None = _condition(
        "measured minimum RTT", SECOND, "smallest minimum RTT the senders reported"
    )
    ping_rtt_min_s: float | None = _condition(
        "ping RTT", SECOND,
        "minimum ping RTT through the empty bottleneck before the flows", None,
    )  # fmt: skip
    measured_rate_bps: float | None = _condition(
        "measured rate", BIT_PER_S, "bottleneck departure rate while its queue was non-empty"
    )
    link_mechanism: str | None = Field(
        None,
        title="link mechanism",
        description="emulator | tc | none (a real path between hosts)",
    )
    emulator_mode: Literal["packet", "aggregate"] | None = Field(
        None,
        title="emulator mode",
        description="link_mechanism emulator: one verdict per packet, or per GSO/GRO aggregate "
        "(accounted as the packets it stands for)",
    )
    queue_source: Literal["qdisc_sampling", "emulator_log", "none"] = Field(
        "qdisc_sampling",
        title="queue source",
        description="emulator_log: exact, from every packet; qdisc_sampling: sampled counters; "
        "none: a real path, whose queues are not observable",
    )


class Check(BaseModel):
    name: str
    ok: bool
    detail: str


class RunResult(BaseModel):
    """What analysis stores for one run besides its per-flow metrics and series."""

    aggregate: AggregateMetrics
    applied: AppliedConditions
    checks: list[Check]


class RunReport(BaseModel):
    run_id: str
    status: str
    point_index: int
    repetition: int
    axis_values: dict[str, Any]
    seed: int | None
    error: str | None
    flows: list[FlowMetrics]
    aggregate: AggregateMetrics | None
    applied: AppliedConditions | None
    checks: list[Check]


class GroupReport(BaseModel):
    """Runs of one matrix point: `<metric>_median` and `<metric>_siqr` over repetitions."""

    point_index: int
    axis_values: dict[str, Any]
    n: int = Field(description="repetitions that finished (done)")
    runs: int = Field(description="repetitions in the matrix")
    metrics: dict[str, float | None]


class ExperimentReport(BaseModel):
    experiment_id: str
    name: str
    status: str
    axes: list[str]
    runs: list[RunReport]
    groups: list[GroupReport]
