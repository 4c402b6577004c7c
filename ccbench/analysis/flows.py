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
class FlowSamples:
    """What a flow's agents logged over time, for metrics over any window."""

    active: Window  # the flow's configured active period (Unix s), not cut to the run's window
    delivered: list[tuple[float, float]]  # the receiver's (ts, bytes in the interval to ts)
    sent: list[tuple[float, float]]  # the sender's (ts, bytes sent so far)
    srtts: list[tuple[float, float]]  # the sender's (ts, smoothed RTT)

    def window(self, run_window: Window) -> Window:
        """The flow's own window: the run's, intersected with its active period."""
        return Window(
            max(run_window.start, self.active.start), min(run_window.end, self.active.end)
        )

    def bytes_received(self, window: Window) -> float:
        return m.bytes_in(self.delivered, window)

    def bytes_sent(self, window: Window) -> float:
        """Bytes sent in the window. The counter starts at 0 with the flow, so a flow that
        starts inside the window loses nothing before its first sample."""
        origin = 0.0 if self.active.start >= window.start else None
        return m.increase(self.sent, window, origin)

    def srtts_s(self, window: Window) -> list[float]:
        return [v for ts, v in self.srtts if ts in window]


@dataclass(frozen=True)
class FlowAnalysis:
    metrics: FlowMetrics
    samples: FlowSamples
    min_rtts_s: list[float]  # every minimum RTT the sender reported
    # A forward flow's sender address and port, which its packets carry at the bottleneck.
    sender: tuple[str, int] | None

    @property
    def forward(self) -> bool:
        return self.metrics.direction == "forward"


def analyze_flow(
    spec: ExperimentSpec, index: int, logs: FlowLogs, run_window: Window, t0: float
) -> FlowAnalysis:
    """Flow `index`'s own metrics over its window; `t0` is the run's common start."""
    flow = spec.flows[index]
    info = logs.info
    start = t0 + flow.start
    samples = FlowSamples(
        active=Window(start, start + spec.flow_duration(index)),
        delivered=[(float(r["ts"]), float(r["bytes"])) for r in logs.received],
        sent=[(float(s["ts"]), float(s["bytes_sent"])) for s in info],
        srtts=[(float(s["ts"]), float(s["srtt_s"])) for s in info if s.get("srtt_s")],
    )
    window = samples.window(run_window)
    srtts = samples.srtts_s(window)
    min_rtts = [s["min_rtt_s"] for s in info if s.get("min_rtt_s")]
    if logs.summary:
        retransmits = logs.summary["retransmits"]
    else:
        retransmits = info[-1]["retransmits"] if info else None
    metrics = FlowMetrics(
        flow=index,
        algorithm=flow.label,
        goodput_bps=m.goodput_bps(samples.bytes_received(window), window.seconds),
        throughput_bps=m.throughput_bps(samples.bytes_sent(window), window.seconds),
        rtt_mean_s=m.mean(srtts),
        rtt_p95_s=m.percentile(srtts, 95),
        rtt_min_s=min(min_rtts) if min_rtts else None,
        retransmits=retransmits,
        bytes_received=sum(r["bytes"] for r in logs.received),
        direction=flow.direction,
    )
    sender = logs.sender_address if flow.direction == "forward" else None
    return FlowAnalysis(metrics, samples, min_rtts, sender)


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
    jain_index: float | None
    normalized_fairness: float | None
    friendliness_ratio: float | None
    equivalence_ratio: float | None
    fc_ratio: float | None


def shares(flows: list[FlowAnalysis], run_window: Window) -> tuple[list[float], list[float]] | None:
    """The flows' goodputs and mean smoothed RTTs over the window in which they are all
    active (metrics.common_window); None when they never run together in the run's window.
    A flow without an RTT sample there has RTT 0."""
    if not flows:
        return None
    common = m.common_window([run_window, *(f.samples.active for f in flows)])
    if common is None:
        return None
    goodputs = [m.goodput_bps(f.samples.bytes_received(common), common.seconds) or 0.0
                for f in flows]  # fmt: skip
    rtts = [m.mean(f.samples.srtts_s(common)) or 0.0 for f in flows]
    return goodputs, rtts


def fairness(spec: ExperimentSpec, flows: list[FlowAnalysis], run_window: Window) -> Fairness:
    """Jain's index and RTT-normalized fairness of the forward flows, friendliness among the
    candidate and reference flows: each compares goodputs while the flows compared are all
    active (`shares`)."""
    forward = [f for f in flows if f.forward]
    both = shares(forward, run_window)
    jain = normalized = None
    if both is not None:
        goodputs, rtts = both
        jain = m.jain_index(goodputs)
        normalized = m.normalized_fairness(goodputs, rtts)
    with_role = [(f, role) for f in forward if (role := spec.flows[f.metrics.flow].role)]
    friendliness = fc = None
    competing = shares([f for f, _ in with_role], run_window)
    if competing is not None:
        goodputs, _ = competing
        roles = [role for _, role in with_role]
        candidates = [g for g, r in zip(goodputs, roles, strict=True) if r == "candidate"]
        references = [g for g, r in zip(goodputs, roles, strict=True) if r == "reference"]
        friendliness = m.friendliness_ratio(candidates, references)
        fc = m.fc_ratio(candidates)
    return Fairness(
        jain_index=jain,
        normalized_fairness=normalized,
        friendliness_ratio=friendliness,
        equivalence_ratio=m.equivalence_ratio(friendliness),
        fc_ratio=fc,
    )


def aggregate(
    spec: ExperimentSpec,
    flows: list[FlowAnalysis],
    queue: QueueMetrics,
    run_window: Window,
    convergence_time_s: float | None,
) -> AggregateMetrics:
    """The aggregate metrics of the forward flows and the forward bottleneck: rates are every
    forward flow's bytes over the run's window. Utilization is the link's own (`queue`) where
    the bottleneck is observed; on a real path it is the aggregate goodput over the path's
    nominal rate (`topology.rate`), if the spec gives one."""
    forward = [f for f in flows if f.forward]
    seconds = run_window.seconds
    delivered = sum(f.samples.bytes_received(run_window) for f in forward)
    sent = sum(f.samples.bytes_sent(run_window) for f in forward)
    goodput = m.goodput_bps(delivered, seconds)
    throughput = m.throughput_bps(sent, seconds)
    rtt_mean = m.mean([r for f in forward for r in f.samples.srtts_s(f.samples.window(run_window))])
    if queue.observed:
        utilization = queue.utilization
    else:
        utilization = m.nominal_utilization(goodput, getattr(spec.topology, "rate", None))
    fair = fairness(spec, flows, run_window)
    return AggregateMetrics(
        goodput_bps=goodput,
        throughput_bps=throughput,
        utilization=utilization,
        jain_index=fair.jain_index,
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
