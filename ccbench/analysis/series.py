"""A run's time series as stored (down-sampled, times in seconds from the run's start): each
flow's sender samples, goodput and controller state, and fairness over time with the
convergence time it gives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ccbench.analysis import metrics as m
from ccbench.analysis.logs import FlowLogs, Line
from schemas import ExperimentSpec

MAX_SERIES_POINTS = 2000
# A time series as stored: one list per column, "t_s" (seconds from the run's start) first.
Columns = dict[str, list[Any]]


def downsample(columns: Columns, limit: int = MAX_SERIES_POINTS) -> Columns:
    length = len(next(iter(columns.values()), []))
    step = max(1, -(-length // limit))
    return {name: values[::step] for name, values in columns.items()}


def flow_series(
    index: int, agent: str, logs: FlowLogs, trace: Sequence[Line], t0: float
) -> dict[str, Columns]:
    """Flow `index`'s series by name: its sender's samples (`flow-<i>.tcp_info`, with the bytes
    it sent so far), goodput per receiver interval with the bytes received so far (`.goodput`)
    and, where recorded, its controller's state (`.cc_state`):
    a userspace controller's from the transport's lines, a BPF controller's from `trace`, the
    flow's own samples of the state trace (`logs.trace_by_flow`)."""
    info = logs.info
    series = {
        f"flow-{index}.tcp_info": downsample(
            {
                "t_s": [round(s["ts"] - t0, 6) for s in info],
                "cwnd_pkts": [s.get("cwnd_pkts") for s in info],
                "ssthresh_pkts": [s.get("ssthresh_pkts") for s in info],
                "srtt_s": [s.get("srtt_s") for s in info],
                "delivery_rate_bps": [s.get("delivery_rate_bps") for s in info],
                "retransmits": [s.get("retransmits") for s in info],
                "bytes_sent": [s.get("bytes_sent") for s in info],
            }
        ),
        f"flow-{index}.goodput": downsample(_goodput_series(logs.received, t0)),
    }
    state: Columns = {}
    if agent == "userspace":
        state = _state_columns([s for s in info if s.get("state")], t0)
    elif trace:
        state = _state_columns(trace, t0)
    if state:
        series[f"flow-{index}.cc_state"] = downsample(state)
    return series


def _state_columns(samples: Sequence[Line], t0: float) -> Columns:
    """A controller's state variables over time, one column per variable (the userspace
    controllers use the BPF controllers' variable names where the meaning is the same)."""
    if not samples:
        return {}
    fields = sorted({name for s in samples for name in s["state"]})
    columns: Columns = {"t_s": [round(s["ts"] - t0, 6) for s in samples]}
    for name in fields:
        columns[name] = [s["state"].get(name) for s in samples]
    return columns


def _goodput_series(received: Sequence[Line], t0: float) -> Columns:
    """Per receiver line: the goodput over the interval since the previous line (none for
    the first) and the bytes received since the flow's start, from which figures bin goodput
    over any interval (`metrics.binned_rates_bps`)."""
    times: list[float] = []
    rates: list[float | None] = []
    received_bytes: list[int] = []
    previous: float | None = None
    total = 0
    for r in received:
        total += r["bytes"]
        if previous is not None and r["ts"] <= previous:
            received_bytes[-1] = total  # the same instant: one sample
            continue
        times.append(round(r["ts"] - t0, 6))
        rates.append(m.rate_bps(r["bytes"], r["ts"] - previous) if previous is not None else None)
        received_bytes.append(total)
        previous = r["ts"]
    return {"t_s": times, "goodput_bps": rates, "bytes_received": received_bytes}


@dataclass(frozen=True)
class FairnessOverTime:
    series: Columns  # {"t_s": interval ends, "jain_index": [...]}
    convergence_time_s: float | None


def fairness_over_time(
    spec: ExperimentSpec, received: Sequence[Sequence[Line]], t0: float
) -> FairnessOverTime:
    """Jain's index per interval over the forward flows active for the whole interval, and
    the convergence time: how long after the competing flows last changed (a forward flow
    started or stopped; else the run's start) until every such flow stays within the band
    around an equal share of what the interval delivered. `received`: each flow's receiver
    lines."""
    interval = spec.measurement.interval
    bins = int(spec.duration // interval)
    forward = [i for i, f in enumerate(spec.flows) if f.direction == "forward"]
    per_flow = {i: [0.0] * bins for i in forward}
    for i in forward:
        for r in received[i]:
            k = int((r["ts"] - t0) // interval)
            if 0 <= k < bins:
                per_flow[i][k] += _interval_rate(r["bytes"], interval)
    times, jains, active_rates = [], [], []
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
        times.append(round(end, 6))
        jains.append(m.jain_index(rates))
        active_rates.append(rates)
    converged = None
    if len(forward) > 1 and times:
        # The competing flows change when a forward flow starts or stops.
        changes = [t for i in forward
                   for t in (spec.flows[i].start, spec.flows[i].start + spec.flow_duration(i))
                   if 0 < t < spec.duration]  # fmt: skip
        converged = m.share_convergence_time(
            times, active_rates, interval, spec.measurement.convergence_band, changes
        )
    return FairnessOverTime({"t_s": times, "jain_index": jains}, converged)


def _interval_rate(byte_count: float, interval_s: float) -> float:
    rate = m.rate_bps(byte_count, interval_s)
    if rate is None:
        raise ValueError(f"measurement interval {interval_s} s is not positive")
    return rate
