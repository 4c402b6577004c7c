"""The report's JSON shape. Metric names and meanings are defined once, in
`ccbench.analysis.metrics`; every value is in SI base units."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class FlowMetrics(BaseModel):
    flow: int
    algorithm: str
    goodput_bps: float | None = Field(description="application bytes received per second x 8")
    throughput_bps: float | None = Field(description="bytes sent (incl. retransmissions) x 8 / s")
    rtt_mean_s: float | None
    rtt_p95_s: float | None
    rtt_min_s: float | None
    retransmits: int | None
    bytes_received: int
    direction: str = Field("forward", description="reverse: reverse-path traffic")
    queue_delay_mean_s: float | None = Field(
        None, description="mean wait of the flow's packets in the bottleneck queue (emulator log)"
    )
    loss_rate: float | None = Field(
        None, description="the flow's packets dropped at the bottleneck / arrived (emulator log)"
    )


class AggregateMetrics(BaseModel):
    """The forward bottleneck: reverse-path flows are left out of the aggregates."""

    goodput_bps: float | None = Field(description="sum of the flows' goodput")
    throughput_bps: float | None
    utilization: float | None = Field(description="0-1: goodput over the bottleneck rate")
    jain_index: float | None
    rtt_mean_s: float | None
    queue_mean_pkts: float | None
    queue_max_pkts: float | None
    queue_delay_mean_s: float | None
    drops: int | None
    loss_rate: float | None
    power: float | None = Field(description="goodput_bps / rtt_mean_s (bit/s per s, seed 000)")
    normalized_fairness: float | None = Field(
        None, description="Jain's index of goodput x mean RTT (flows with different RTTs)"
    )
    friendliness_ratio: float | None = Field(None, description="F: candidates vs references")
    equivalence_ratio: float | None = Field(None, description="E = max(F, 1/F)")
    fc_ratio: float | None = Field(None, description="max/min goodput among candidates")
    convergence_time_s: float | None = Field(
        None, description="until every flow stays within the band around an equal share"
    )


class AppliedConditions(BaseModel):
    """What the testbed configured and what was measured against it."""

    rate_bps: float | None = Field(description="configured rate; on a real path its nominal one")
    delay_s: float | None = Field(description="configured one-way delay; none on a real path")
    base_rtt_s: float | None = Field(description="configured; on a real path the ping before")
    buffer_pkts: int | None
    buffer_bytes: int | None
    delay_mechanism: str | None
    measured_min_rtt_s: float | None
    ping_rtt_min_s: float | None = Field(
        None, description="minimum ping RTT through the empty bottleneck before the flows"
    )
    measured_rate_bps: float | None = Field(
        description="bottleneck departure rate while its queue was non-empty"
    )
    link_mechanism: str | None = Field(
        None, description="emulator | tc | none (a real path between hosts)"
    )
    queue_source: Literal["qdisc_sampling", "emulator_log", "none"] = Field(
        "qdisc_sampling",
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
