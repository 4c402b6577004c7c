"""Analysis of one run: read the agents' JSON-lines logs from the run directory (formats in
docs/contracts.md), compute per-flow and aggregate metrics over the measurement window, check
that the configured network was really applied, and down-sample time series for storage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccbench.analysis import metrics as m
from ccbench.analysis.packetlog import queue_metrics_from_file
from schemas import (
    AggregateMetrics,
    AppliedConditions,
    Check,
    ExperimentSpec,
    FlowMetrics,
    RunResult,
)

MAX_SERIES_POINTS = 2000
BUFFER_LEAF_KINDS = ("pfifo", "bfifo")
# One full-size packet with its Ethernet header, as the bottleneck qdisc counts it.
WIRE_PACKET_BYTES = 1514


class AnalysisError(Exception):
    """The run's logs are missing or unusable; the message names the file."""


@dataclass
class RunAnalysis:
    flows: list[FlowMetrics]
    summary: RunResult
    series: dict[str, dict[str, list[Any]]] = field(default_factory=dict)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        raise AnalysisError(f"{path.name} is missing from the run directory")
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise AnalysisError(f"{path.name} line {number} is not JSON: {exc}") from exc


def downsample(columns: dict[str, list[Any]], limit: int = MAX_SERIES_POINTS) -> dict[str, Any]:
    length = len(next(iter(columns.values()), []))
    step = max(1, -(-length // limit))
    return {name: values[::step] for name, values in columns.items()}


@dataclass
class Window:
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)

    def __contains__(self, ts: float) -> bool:
        return self.start < ts <= self.end


def _delta(samples: list[tuple[float, float]], window: Window) -> float:
    """Increase of a cumulative counter across the window, from its samples (ts, value)."""
    before = [v for ts, v in samples if ts <= window.start]
    inside = [v for ts, v in samples if ts in window]
    if not inside:
        return 0.0
    first = before[-1] if before else inside[0]
    return max(0.0, inside[-1] - first)


def analyze_run(run_dir: Path, spec: ExperimentSpec) -> RunAnalysis:
    sends = [list(read_jsonl(run_dir / f"flow-{i}.send.jsonl")) for i in range(len(spec.flows))]
    recvs = [list(read_jsonl(run_dir / f"flow-{i}.recv.jsonl")) for i in range(len(spec.flows))]
    provenance: dict[str, Any] = {}
    if (run_dir / "provenance.json").exists():
        provenance = json.loads((run_dir / "provenance.json").read_text())
    emulated = provenance.get("link_mechanism") == "emulator"
    real_path = not spec.links  # hosts testbed without a router: nothing emulated
    _to_sender_clock(recvs, provenance)

    t0 = _common_start(sends, spec)
    trace_path = run_dir / "bpf-trace.jsonl"
    trace = list(read_jsonl(trace_path)) if trace_path.exists() else []
    run_window = Window(t0 + spec.measurement.skip_start, t0 + spec.duration)
    series: dict[str, dict[str, list[Any]]] = {}
    flows: list[FlowMetrics] = []
    goodputs: list[float] = []
    rtts: list[float] = []
    min_rtts: list[float] = []
    senders: list[tuple[str, int] | None] = []
    for i, flow in enumerate(spec.flows):
        start = t0 + flow.start
        window = Window(
            max(run_window.start, start),
            min(run_window.end, start + spec.flow_duration(i)),
        )
        # Kernel flows sample tcp_info; userspace flows write the same keys ("transport").
        info = [s for s in sends[i] if s.get("type") in ("tcp_info", "transport")]
        summary = next((s for s in sends[i] if s.get("type") == "summary"), None)
        received = [r for r in recvs[i] if r.get("type") == "recv"]
        bytes_in_window = sum(r["bytes"] for r in received if r["ts"] in window)
        goodput = m.goodput_bps(bytes_in_window, window.seconds)
        sent = _delta([(s["ts"], s["bytes_sent"]) for s in info], window)
        srtts = [s["srtt_s"] for s in info if s["ts"] in window and s.get("srtt_s")]
        flow_min = [s["min_rtt_s"] for s in info if s.get("min_rtt_s")]
        retransmits = (
            summary["retransmits"] if summary else (info[-1]["retransmits"] if info else None)
        )
        flows.append(
            FlowMetrics(
                flow=i,
                algorithm=flow.label,
                goodput_bps=goodput,
                throughput_bps=m.throughput_bps(sent, window.seconds),
                rtt_mean_s=m.mean(srtts),
                rtt_p95_s=m.percentile(srtts, 95),
                rtt_min_s=min(flow_min) if flow_min else None,
                retransmits=retransmits,
                bytes_received=sum(r["bytes"] for r in received),
                direction=flow.direction,
            )
        )
        min_rtts.extend(flow_min)
        # Aggregates describe the forward bottleneck: reverse-path flows are the cross traffic.
        if flow.direction == "forward":
            if goodput is not None:
                goodputs.append(goodput)
            rtts.extend(srtts)
        series[f"flow-{i}.tcp_info"] = downsample(
            {
                "t_s": [round(s["ts"] - t0, 6) for s in info],
                "cwnd_pkts": [s.get("cwnd_pkts") for s in info],
                "ssthresh_pkts": [s.get("ssthresh_pkts") for s in info],
                "srtt_s": [s.get("srtt_s") for s in info],
                "delivery_rate_bps": [s.get("delivery_rate_bps") for s in info],
                "retransmits": [s.get("retransmits") for s in info],
            }
        )
        series[f"flow-{i}.goodput"] = downsample(_goodput_series(received, t0))
        senders.append(_sender(summary) if flow.direction == "forward" else None)
        state = {}
        if flow.agent == "userspace":
            state = _userspace_state_series(info, t0)
        elif summary and summary.get("local") and trace:
            state = _state_series(trace, str(summary["local"]), t0)
        if state:
            series[f"flow-{i}.cc_state"] = downsample(state)

    if real_path:
        queue = _no_queue(getattr(spec.topology, "rate", None), goodputs)
    elif emulated:
        log = run_dir / f"link-{spec.bottleneck_index}-data.bin"
        queue = _queue_metrics_from_log(log, run_window, spec.bottleneck.rate, t0, senders)
        for flow_metrics, at_queue in zip(flows, queue.pop("per_flow") or [], strict=True):
            if senders[flow_metrics.flow] is not None:
                flow_metrics.queue_delay_mean_s = at_queue["queue_delay_mean_s"]
                flow_metrics.loss_rate = at_queue["loss_rate"]
    else:
        qdisc = list(read_jsonl(run_dir / "qdisc.jsonl"))
        queue = _queue_metrics(qdisc, run_window, spec.bottleneck.rate, t0)
    queue_series = queue.pop("series")
    if queue_series:
        series["queue"] = downsample(queue_series)
    aggregate_goodput = sum(goodputs) if goodputs else None
    forward_flows = sum(1 for f in spec.flows if f.direction == "forward")
    rtt_mean = m.mean(rtts)
    aggregate = AggregateMetrics(
        goodput_bps=aggregate_goodput,
        throughput_bps=_sum_or_none([f.throughput_bps for f in flows if f.direction == "forward"]),
        utilization=queue["utilization"],
        jain_index=m.jain_index(goodputs) if len(goodputs) == forward_flows else None,
        rtt_mean_s=rtt_mean,
        queue_mean_pkts=queue["queue_mean_pkts"],
        queue_max_pkts=queue["queue_max_pkts"],
        queue_delay_mean_s=queue["queue_delay_mean_s"],
        drops=queue["drops"],
        loss_rate=queue["loss_rate"],
        power=m.power(aggregate_goodput, rtt_mean),
        **_fairness(spec, flows),
    )
    over_time = _fairness_over_time(spec, recvs, t0)
    series["fairness"] = over_time["series"]
    aggregate.convergence_time_s = over_time["convergence_time_s"]
    if real_path:
        applied, checks = _real_path_conditions(spec, provenance, min_rtts)
    else:
        applied, checks = _emulated_conditions(spec, provenance, queue, min_rtts, flows)
    return RunAnalysis(
        flows, RunResult(aggregate=aggregate, applied=applied, checks=checks), series
    )


def _emulated_conditions(
    spec: ExperimentSpec,
    provenance: dict[str, Any],
    queue: dict[str, Any],
    min_rtts: list[float],
    flows: list[FlowMetrics],
) -> tuple[AppliedConditions, list[Check]]:
    bottleneck = spec.bottleneck
    emulated = provenance.get("link_mechanism") == "emulator"
    buffer_pkts, buffer_bytes = bottleneck.buffer_limit()
    applied = AppliedConditions(
        rate_bps=bottleneck.rate,
        delay_s=bottleneck.delay,
        base_rtt_s=bottleneck.base_rtt_s,
        buffer_pkts=buffer_pkts,
        buffer_bytes=buffer_bytes,
        delay_mechanism=provenance.get("delay_mechanism"),
        measured_min_rtt_s=min(min_rtts) if min_rtts else None,
        measured_rate_bps=queue["busy_rate_bps"],
        ping_rtt_min_s=(provenance.get("ping_rtt_s") or {}).get("min"),
        link_mechanism=provenance.get("link_mechanism"),
        queue_source="emulator_log" if emulated else "qdisc_sampling",
    )
    shortest_base_rtt = min(spec.base_rtt_s(i) for i in range(len(spec.flows)))
    checks = _checks(applied, queue, shortest_base_rtt)
    if len({round(spec.base_rtt_s(i), 9) for i in range(len(spec.flows))}) > 1:
        checks.append(_per_flow_rtt(spec, flows))
    if emulated:
        checks.append(_emulator_timing(queue))
    if provenance.get("host_cpu_busy") is not None:
        checks.append(_host_cpu(float(provenance["host_cpu_busy"]), provenance))
    clock = _clock_check(spec, provenance)
    if clock is not None:
        checks.append(clock)
    return applied, checks


def _real_path_conditions(
    spec: ExperimentSpec, provenance: dict[str, Any], min_rtts: list[float]
) -> tuple[AppliedConditions, list[Check]]:
    """A real path: nothing was applied; what was measured before the flows is reported."""
    ping_min = (provenance.get("ping_rtt_s") or {}).get("min")
    applied = AppliedConditions(
        rate_bps=getattr(spec.topology, "rate", None),
        delay_s=None,
        base_rtt_s=ping_min,
        buffer_pkts=None,
        buffer_bytes=None,
        delay_mechanism=None,
        measured_min_rtt_s=min(min_rtts) if min_rtts else None,
        measured_rate_bps=None,
        ping_rtt_min_s=ping_min,
        link_mechanism="none",
        queue_source="none",
    )
    clock = _clock_check(spec, provenance)
    return applied, [clock] if clock is not None else []


# Receivers' timestamps are moved to the sender's clock by the measured offset; beyond this
# the offset's own error (half an ICMP round trip + 1 ms) could shift per-interval metrics.
CLOCK_OFFSET_LIMIT_S = 0.01


def _clock_check(spec: ExperimentSpec, provenance: dict[str, Any]) -> Check | None:
    """Hosts testbed: each receiver's clock offset to its sender was measured (ICMP
    timestamps) and is small enough to trust the common start and the time series."""
    if provenance.get("testbed") != "hosts":
        return None
    offsets = provenance.get("receiver_clock_offset_s") or {}
    parts, ok = [], True
    for i in range(len(spec.flows)):
        offset = offsets.get(str(i))
        if offset is None:
            ok = False
            parts.append(f"flow {i}: not measured")
        else:
            ok = ok and abs(offset) <= CLOCK_OFFSET_LIMIT_S
            parts.append(f"flow {i}: {offset * 1e3:+.1f} ms")
    return Check(
        name="clock",
        ok=ok,
        detail="receiver clock minus sender clock (corrected for): "
        + ", ".join(parts)
        + f"; limit {CLOCK_OFFSET_LIMIT_S * 1e3:g} ms",
    )


def _to_sender_clock(recvs: list[list[dict[str, Any]]], provenance: dict[str, Any]) -> None:
    """Hosts testbed: shift each receiver's timestamps onto its sender's clock."""
    offsets = provenance.get("receiver_clock_offset_s") or {}
    for i, lines in enumerate(recvs):
        offset = offsets.get(str(i))
        if not offset:
            continue
        for line in lines:
            for key in ("ts", "first_byte_ts", "last_byte_ts"):
                if isinstance(line.get(key), int | float):
                    line[key] -= offset


def _no_queue(nominal_rate_bps: float | None, goodputs: list[float]) -> dict[str, Any]:
    """A real path has no queue we can see: only utilization of a nominal capacity."""
    utilization = None
    if nominal_rate_bps and goodputs:
        utilization = min(1.0, sum(goodputs) / nominal_rate_bps)
    return {
        "utilization": utilization,
        "queue_mean_pkts": None,
        "queue_max_pkts": None,
        "queue_max_bytes": None,
        "queue_delay_mean_s": None,
        "drops": None,
        "full_drops": None,
        "loss_rate": None,
        "busy_rate_bps": None,
        "series": {},
    }


def _fairness(spec: ExperimentSpec, flows: list[FlowMetrics]) -> dict[str, float | None]:
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
    return {
        "normalized_fairness": normalized,
        "friendliness_ratio": friendliness,
        "equivalence_ratio": m.equivalence_ratio(friendliness),
        "fc_ratio": m.fc_ratio(candidates),
    }


def _fairness_over_time(
    spec: ExperimentSpec, recvs: list[list[dict[str, Any]]], t0: float
) -> dict[str, Any]:
    """Jain's index per interval over the forward flows active for the whole interval, and
    the convergence time: how long until every such flow stays within the band around an
    equal share of what the interval delivered."""
    interval = spec.measurement.interval
    bins = int(spec.duration // interval)
    forward = [i for i, f in enumerate(spec.flows) if f.direction == "forward"]
    per_flow = {i: [0.0] * bins for i in forward}
    for i in forward:
        for r in recvs[i]:
            if r.get("type") == "recv":
                k = int((r["ts"] - t0) // interval)
                if 0 <= k < bins:
                    per_flow[i][k] += 8 * r["bytes"] / interval
    times, jains, normalized_rates = [], [], []
    for k in range(bins):
        start, end = k * interval, (k + 1) * interval
        active = [
            i
            for i in forward
            if spec.flows[i].start <= start and end <= spec.flows[i].start + spec.flow_duration(i)
        ]
        rates = [per_flow[i][k] for i in active]
        if len(rates) < 1 or sum(rates) == 0:
            continue
        share = sum(rates) / len(rates)
        times.append(round(end, 6))
        jains.append(m.jain_index(rates))
        normalized_rates.append([r / share for r in rates])
    converged = None
    if len(forward) > 1 and times:
        converged = m.convergence_time(
            times, normalized_rates, 1.0, spec.measurement.convergence_band
        )
        if converged is not None:
            # From the run's start to the start of the first interval of the settled streak.
            converged += times[0] - interval
    return {"series": {"t_s": times, "jain_index": jains}, "convergence_time_s": converged}


def _sum_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _common_start(sends: list[list[dict[str, Any]]], spec: ExperimentSpec) -> float:
    starts: list[float] = []
    for i, lines in enumerate(sends):
        summary = next((s for s in lines if s.get("type") == "summary"), None)
        if summary is not None:
            starts.append(summary["start_ts"] - spec.flows[i].start)
        elif lines:
            starts.append(lines[0]["ts"] - spec.flows[i].start)
    if not starts:
        raise AnalysisError("no sender produced any output (flow-*.send.jsonl are empty)")
    return float(min(starts))


def _state_series(trace: list[dict[str, Any]], local: str, t0: float) -> dict[str, list[Any]]:
    """A flow's BPF controller state over time: its samples are those of its sender's address
    and port (`local` as the agent reports it, "10.0.0.1:43210")."""
    address, _, port = local.rpartition(":")
    samples = [s for s in trace if s["saddr"] == address and str(s["sport"]) == port]
    if not samples:
        return {}
    fields = sorted({name for s in samples for name in s["state"]})
    columns: dict[str, list[Any]] = {"t_s": [round(s["ts"] - t0, 6) for s in samples]}
    for name in fields:
        columns[name] = [s["state"].get(name) for s in samples]
    return columns


def _userspace_state_series(info: list[dict[str, Any]], t0: float) -> dict[str, list[Any]]:
    """A userspace controller's own state over time, from the transport's interval lines
    (the same variable names as the BPF controllers' traces where the meaning is the same)."""
    samples = [s for s in info if s.get("state")]
    if not samples:
        return {}
    fields = sorted({name for s in samples for name in s["state"]})
    columns: dict[str, list[Any]] = {"t_s": [round(s["ts"] - t0, 6) for s in samples]}
    for name in fields:
        columns[name] = [s["state"].get(name) for s in samples]
    return columns


def _goodput_series(received: list[dict[str, Any]], t0: float) -> dict[str, list[Any]]:
    times: list[float] = []
    rates: list[float | None] = []
    previous: float | None = None
    for r in received:
        if previous is not None and r["ts"] > previous:
            times.append(round(r["ts"] - t0, 6))
            rates.append(m.rate_bps(r["bytes"], r["ts"] - previous))
        previous = r["ts"]
    return {"t_s": times, "goodput_bps": rates}


def _sender(summary: dict[str, Any] | None) -> tuple[str, int] | None:
    """The sender's address and port as its agent reported them ("10.0.0.1:43210")."""
    if not summary or not summary.get("local"):
        return None
    address, _, port = str(summary["local"]).rpartition(":")
    return address, int(port)


def _queue_metrics_from_log(
    path: Path,
    window: Window,
    capacity_bps: float,
    t0: float,
    senders: list[tuple[str, int] | None] | None = None,
) -> dict[str, Any]:
    if not path.exists():
        raise AnalysisError(f"{path.name} (the emulator's packet log) is missing")
    metrics = queue_metrics_from_file(path, window.start, window.end, capacity_bps, senders)
    raw = metrics.pop("series")
    metrics["series"] = {
        "t_s": [round(ts - t0, 6) for ts in raw["ts"]],
        "qlen_pkts": raw["qlen_pkts"],
        "drops": raw["drops"],
    }
    return metrics


# Release lateness the emulator may show at p99 before its timing is suspect.
EMULATOR_LATE_P99_US = 1000


# Above this share of busy CPU the host itself may have shaped the results.
HOST_CPU_BUSY_LIMIT = 0.9


def _host_cpu(busy: float, provenance: dict[str, Any]) -> Check:
    """Fidelity: emulation on a saturated host is not the network that was asked for."""
    cpus = (provenance.get("capabilities") or {}).get("cpus")
    return Check(
        name="host_cpu",
        ok=busy < HOST_CPU_BUSY_LIMIT,
        detail=f"host CPUs {busy * 100:.0f}% busy while the flows ran"
        + (f" ({cpus} CPUs)" if cpus else "")
        + f"; limit {HOST_CPU_BUSY_LIMIT * 100:.0f}%",
    )


def _emulator_timing(queue: dict[str, Any]) -> Check:
    """Fidelity of the emulator (from its packet log): how late packets left against the
    model's schedule, and how far the spacing of back-to-back packets strayed from their
    transmission time."""
    p50, p99 = queue.get("release_late_us_p50"), queue.get("release_late_us_p99")
    spacing = queue.get("spacing_error_us_p99")
    if p99 is None:
        return Check(name="emulator_timing", ok=False, detail="no packet was released")
    return Check(
        name="emulator_timing",
        ok=p99 <= EMULATOR_LATE_P99_US,
        detail=f"packets left {p50:.0f} us late at the median, {p99:.0f} us at p99 "
        f"(limit {EMULATOR_LATE_P99_US} us); back-to-back spacing error p99 "
        + (f"{spacing:.0f} us" if spacing is not None else "-"),
    )


def _buffer_leaf(qdisc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    leaves = [q for q in qdisc if q.get("type") == "qdisc" and q["kind"] in BUFFER_LEAF_KINDS]
    if not leaves:
        raise AnalysisError("qdisc.jsonl has no pfifo/bfifo buffer samples")
    return leaves


def _queue_metrics(
    qdisc: list[dict[str, Any]], window: Window, capacity_bps: float, t0: float
) -> dict[str, Any]:
    leaf = _buffer_leaf(qdisc)
    inside = [q for q in leaf if q["ts"] in window]
    qlens = [float(q["qlen_pkts"]) for q in inside]
    backlogs = [float(q["backlog_bytes"]) for q in inside]
    drops = int(_delta([(q["ts"], q["drops"]) for q in leaf], window))
    sent_pkts = _delta([(q["ts"], q["sent_pkts"]) for q in leaf], window)
    sent_bytes = _delta([(q["ts"], q["sent_bytes"]) for q in leaf], window)
    busy_bytes = 0.0
    busy_seconds = 0.0
    for a, b in zip(inside, inside[1:], strict=False):
        # Both samples backlogged: the link was busy for the whole interval.
        if a["qlen_pkts"] > 1 and b["qlen_pkts"] > 1:
            busy_bytes += b["sent_bytes"] - a["sent_bytes"]
            busy_seconds += b["ts"] - a["ts"]
    return {
        "utilization": m.utilization(sent_bytes, window.seconds, capacity_bps),
        "queue_mean_pkts": m.mean(qlens),
        "queue_max_pkts": max(qlens) if qlens else None,
        "queue_max_bytes": max(backlogs) if backlogs else None,
        "queue_delay_mean_s": (
            m.queue_delay_s(m.mean(backlogs) or 0.0, capacity_bps) if backlogs else None
        ),
        "drops": drops,
        "full_drops": drops,  # a pfifo/bfifo drops only when full
        "loss_rate": m.loss_rate(drops, int(sent_pkts) + drops),
        "busy_rate_bps": m.rate_bps(busy_bytes, busy_seconds) if busy_seconds >= 1.0 else None,
        "series": {
            "t_s": [round(q["ts"] - t0, 6) for q in leaf],
            "qlen_pkts": [q["qlen_pkts"] for q in leaf],
            "backlog_bytes": [q["backlog_bytes"] for q in leaf],
            "drops": [q["drops"] for q in leaf],
        },
    }


def _per_flow_rtt(spec: ExperimentSpec, flows: list[FlowMetrics]) -> Check:
    """With access delays or different paths every flow has its own base RTT; each must show
    it (5%)."""
    parts, ok = [], True
    for i, flow in enumerate(flows):
        base = spec.base_rtt_s(i)
        if flow.rtt_min_s is None:
            ok = False
            parts.append(f"flow {i}: no RTT sample")
            continue
        slack = 8 * WIRE_PACKET_BYTES / spec.bottleneck.rate * len(spec.links)
        ok = ok and 0.99 * base <= flow.rtt_min_s <= 1.05 * base + slack
        parts.append(f"flow {i}: {flow.rtt_min_s * 1e3:.2f} of {base * 1e3:.2f} ms")
    return Check(name="flow_rtts", ok=ok, detail="minimum RTT per flow: " + ", ".join(parts))


def _checks(
    applied: AppliedConditions, queue: dict[str, Any], shortest_base_rtt_s: float
) -> list[Check]:
    """Evidence that the testbed applied what the spec asked for (5% tolerance). The delay
    check compares the smallest RTT measured with the smallest configured (flows can add
    access delays)."""
    checks: list[Check] = []
    base = shortest_base_rtt_s
    min_rtt = applied.measured_min_rtt_s
    configured_rate = applied.rate_bps
    assert configured_rate is not None, "an emulated link always has a rate"
    # A packet and its ACK also take their transmission time at the bottleneck.
    slack = 8 * WIRE_PACKET_BYTES / configured_rate
    if min_rtt is None:
        checks.append(Check(name="delay", ok=False, detail="no RTT sample was measured"))
    else:
        ok = 0.99 * base <= min_rtt <= 1.05 * base + slack
        if base > 0:
            detail = (
                f"minimum RTT {min_rtt * 1e3:.2f} ms for a configured base RTT of "
                f"{base * 1e3:.2f} ms ({(min_rtt / base - 1) * 100:+.1f}%)"
            )
        else:
            detail = f"minimum RTT {min_rtt * 1e3:.2f} ms, no delay configured"
        if applied.ping_rtt_min_s is not None:
            detail += f"; ping {applied.ping_rtt_min_s * 1e3:.2f} ms"
        checks.append(Check(name="delay", ok=ok, detail=detail))
    rate = applied.measured_rate_bps
    if rate is None:
        checks.append(
            Check(
                name="rate",
                ok=False,
                detail="the queue was never backlogged for 1 s: rate not measurable",
            )
        )
    else:
        ratio = rate / configured_rate
        checks.append(
            Check(
                name="rate",
                ok=abs(ratio - 1) <= 0.05,
                detail=f"bottleneck sent {rate / 1e6:.3f} Mbit/s while backlogged, configured "
                f"{configured_rate / 1e6:.3f} Mbit/s ({(ratio - 1) * 100:+.1f}%)",
            )
        )
    drops, full_drops = queue["drops"] or 0, queue["full_drops"] or 0
    if applied.buffer_pkts is not None:
        limit, peak, unit = float(applied.buffer_pkts), queue["queue_max_pkts"], "pkts"
    else:
        limit, peak, unit = float(applied.buffer_bytes or 0), queue["queue_max_bytes"], "bytes"
    if peak is None:
        checks.append(Check(name="buffer", ok=False, detail="no queue sample in the window"))
    else:
        within = peak <= limit
        # Buffer-full drops only happen at a full queue: the peak must come close to the limit
        # (sampled queues can miss the exact peak).
        consistent = full_drops == 0 or peak >= 0.8 * limit - (2 if unit == "pkts" else 3000)
        checks.append(
            Check(
                name="buffer",
                ok=within and consistent,
                detail=f"queue peak {peak:g} of {limit:g} {unit}, {drops} drops"
                + (f" ({full_drops} at a full buffer)" if full_drops != drops else ""),
            )
        )
    return checks
