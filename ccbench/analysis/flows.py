"""Each flow's metrics over its window, and the aggregates over the forward flows (reverse-path
flows are the cross traffic of the forward bottleneck). Formulas: `metrics.py`."""

from __future__ import annotations

from dataclasses import dataclass

from ccbench.analysis import metrics as m
from ccbench.analysis.logs import FlowLogs
from ccbench.analysis.metrics import Window
from ccbench.analysis.queue import QueueMetrics
from schemas import AggregateMetrics, ExperimentSpec, FlowMetrics


@dataclass(frozen=True)
class FlowAnalysis:
    metrics: FlowMetrics
    srtts_s: list[float]  # the sender's smoothed RTT samples in the flow's window
    min_rtts_s: list[float]  # every minimum RTT the sender reported
    # A forward flow's sender address and port, which its packets carry at the bottleneck.
    sender: tuple[str, int] | None

    @property
    def forward(self) -> bool:
        return self.metrics.direction == "forward"


def flow_window(spec: ExperimentSpec, index: int, run_window: Window, t0: float) -> Window:
    """The run's window intersected with the flow's active period."""
    start = t0 + spec.flows[index].start
    return Window(
        max(run_window.start, start),
        min(run_window.end, start + spec.flow_duration(index)),
    )


def analyze_flow(spec: ExperimentSpec, index: int, logs: FlowLogs, window: Window) -> FlowAnalysis:
    flow = spec.flows[index]
    info = logs.info
    bytes_in_window = sum(r["bytes"] for r in logs.received if r["ts"] in window)
    sent = m.increase([(s["ts"], s["bytes_sent"]) for s in info], window)
    srtts = [s["srtt_s"] for s in info if s["ts"] in window and s.get("srtt_s")]
    min_rtts = [s["min_rtt_s"] for s in info if s.get("min_rtt_s")]
    if logs.summary:
        retransmits = logs.summary["retransmits"]
    else:
        retransmits = info[-1]["retransmits"] if info else None
    metrics = FlowMetrics(
        flow=index,
        algorithm=flow.label,
        goodput_bps=m.goodput_bps(bytes_in_window, window.seconds),
        throughput_bps=m.throughput_bps(sent, window.seconds),
        rtt_mean_s=m.mean(srtts),
        rtt_p95_s=m.percentile(srtts, 95),
        rtt_min_s=min(min_rtts) if min_rtts else None,
        retransmits=retransmits,
        bytes_received=sum(r["bytes"] for r in logs.received),
        direction=flow.direction,
    )
    sender = logs.sender_address if flow.direction == "forward" else None
    return FlowAnalysis(metrics, srtts, min_rtts, sender)


def with_queue(flows: list[FlowAnalysis], queue: QueueMetrics) -> None:
    """Give each forward flow whose sender is known its packets' loss rate and queueing delay
    at the bottleneck (the emulator's log only has them)."""
    if not queue.observed or queue.per_flow is None:
        return
    for flow, at_queue in zip(flows, queue.per_flow, strict=True):
        if flow.sender is not None:
            flow.metrics.queue_delay_mean_s = at_queue.queue_delay_mean_s
            flow.metrics.loss_rate = at_queue.loss_rate


@dataclass(frozen=True)
class Fairness:
    normalized_fairness: float | None
    friendliness_ratio: float | None
    equivalence_ratio: float | None
    fc_ratio: float | None


def fairness(spec: ExperimentSpec, flows: list[FlowMetrics]) -> Fairness:
    """Friendliness (candidate vs reference flows) and RTT-normalized fairness of the forward
    flows, over the measurement window."""
    forward = [(spec.flows[f.flow], f) for f in flows if f.direction == "forward"]
    goodput = {f.flow: f.goodput_bps or 0.0 for _, f in forward}
    candidates = [goodput[f.flow] for s, f in forward if s.role == "candidate"]
    references = [goodput[f.flow] for s, f in forward if s.role == "reference"]
    friendliness = m.friendliness_ratio(candidates, references)
    rtts = [f.rtt_mean_s for _, f in forward]
    normalized = None
    if forward and all(r is not None for r in rtts):
        normalized = m.normalized_fairness(
            [goodput[f.flow] for _, f in forward], [float(r or 0) for r in rtts]
        )
    return Fairness(
        normalized_fairness=normalized,
        friendliness_ratio=friendliness,
        equivalence_ratio=m.equivalence_ratio(friendliness),
        fc_ratio=m.fc_ratio(candidates),
    )


def aggregate(
    spec: ExperimentSpec,
    flows: list[FlowAnalysis],
    queue: QueueMetrics,
    convergence_time_s: float | None,
) -> AggregateMetrics:
    """The aggregate metrics of the forward flows and the forward bottleneck. Utilization is
    the link's own (`queue`) where the bottleneck is observed; on a real path it is the
    aggregate goodput over the path's nominal rate (`topology.rate`), if the spec gives one."""
    forward = [f for f in flows if f.forward]
    goodputs = [g for f in forward if (g := f.metrics.goodput_bps) is not None]
    goodput = m.total(goodputs)
    rtt_mean = m.mean([s for f in forward for s in f.srtts_s])
    if queue.observed:
        utilization = queue.utilization
    else:
        utilization = m.nominal_utilization(goodput, getattr(spec.topology, "rate", None))
    forward_flows = sum(1 for f in spec.flows if f.direction == "forward")
    fair = fairness(spec, [f.metrics for f in flows])
    return AggregateMetrics(
        goodput_bps=goodput,
        throughput_bps=m.total([f.metrics.throughput_bps for f in forward]),
        utilization=utilization,
        jain_index=m.jain_index(goodputs) if len(goodputs) == forward_flows else None,
        rtt_mean_s=rtt_mean,
        queue_mean_pkts=queue.queue_mean_pkts,
        queue_max_pkts=queue.queue_max_pkts,
        queue_delay_mean_s=queue.queue_delay_mean_s,
        drops=queue.drops,
        loss_rate=queue.loss_rate,
        power=m.power(goodput, rtt_mean),
        normalized_fairness=fair.normalized_fairness,
        friendliness_ratio=fair.friendliness_ratio,
        equivalence_ratio=fair.equivalence_ratio,
        fc_ratio=fair.fc_ratio,
        convergence_time_s=convergence_time_s,
    )
