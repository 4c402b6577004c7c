"""The figures of one run, from its detail (GET /v1/runs/{id}: spec, applied conditions, flows
and stored series):

- goodput and throughput binned per RTT or a chosen interval, per flow, with the forward
  flows' aggregate and the link rate (seed 004 Fig. 8 compares timescales);
- cwnd with ssthresh; cwnd above the bottleneck queue (seed 001 Fig. 5, seed 000 Fig. 4);
  smoothed RTT with the base RTT; RTT against cwnd (seed 000 Figs. 14-22); the queue with its
  drops and the buffer; Jain's index per interval (seed 000);
- CDFs over the measurement window: smoothed RTT per flow, the bottleneck's queueing delay,
  per-flow binned goodput;
- the controller's own state where recorded, one figure per variable.

Figures without data (a series the run does not have) are left out."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ccbench.analysis.metrics import binned_rates_bps
from ccbench.errors import ValidationFailed
from ccbench.plots.conditions import conditions, stored_spec
from ccbench.plots.model import (
    CDF,
    Axis,
    FigureData,
    Panel,
    Style,
    Trace,
    cdf,
    scaled,
    times,
)
from schemas import ExperimentSpec
from schemas.metrics import (
    METRICS,
    PACKET,
    QUANTITIES,
    SECOND,
    Quantity,
    column_quantity,
    format_quantity,
)
from schemas.units import parse_duration

# The bin of goodput and throughput over time: one base RTT, or an interval in seconds.
Bin = float | Literal["rtt"]
BIN_CHOICES = ("rtt", "100ms", "1s")  # offered by the run page; any duration works
TIME = Axis(scaled(QUANTITIES["t_s"], [])[0])  # "time (s)"
_STATE_EXCLUDED = {"t_s"}  # the time column of a controller-state series


def parse_bin(text: str | None) -> Bin:
    """A bin as a page or the CLI gives it: "rtt" or a duration with its unit ("500ms")."""
    if text is None or text.strip().lower() in ("", "rtt"):
        return "rtt"
    try:
        return parse_duration(text.strip())
    except ValueError as exc:
        raise ValidationFailed.field("bin", f"{exc}; or rtt") from exc


@dataclass(frozen=True)
class _Flow:
    index: int
    label: str  # "flow 0 reno"
    forward: bool


class _Run:
    """A run's detail as the figures read it."""

    def __init__(self, run: Mapping[str, Any]) -> None:
        self.series: dict[str, dict[str, list[Any]]] = dict(run.get("series") or {})
        summary = run.get("aggregate") or {}
        self.applied: dict[str, Any] = dict(summary.get("applied") or {})
        self.spec: ExperimentSpec | None = stored_spec(run.get("spec") or {})
        flows = []
        for f in run.get("flows") or []:
            index = int(f["flow_index"] if "flow_index" in f else f["flow"])
            direction = (f.get("metrics") or {}).get("direction") or f.get("direction")
            reverse = direction == "reverse"
            label = f"flow {index} {f['algorithm']}" + (" (reverse)" if reverse else "")
            flows.append(_Flow(index, label, not reverse))
        self.flows = sorted(flows, key=lambda f: f.index)
        self.subtitle = conditions(self.spec, self.applied)
        if self.spec is not None:
            self.window = (self.spec.measurement.skip_start, self.spec.duration)
        else:
            self.window = (0.0, math.inf)

    def flow_series(self, flow: _Flow, source: str) -> dict[str, list[Any]]:
        return self.series.get(f"flow-{flow.index}.{source}") or {}

    def in_window(self, t: float) -> bool:
        """A sample at t counts when start < t <= end (as the metrics count samples)."""
        return self.window[0] < t <= self.window[1]

    def bin_inside(self, start: float, end: float) -> bool:
        return start >= self.window[0] - 1e-9 and end <= self.window[1] + 1e-9

    @property
    def base_rtt_s(self) -> float | None:
        rtt = self.applied.get("base_rtt_s") or self.applied.get("measured_min_rtt_s")
        if rtt:
            return float(rtt)
        if self.spec is not None and self.spec.links:
            return self.spec.bottleneck.base_rtt_s
        return None


def _spacing(t: Sequence[float]) -> float | None:
    """The median interval between stored samples."""
    gaps = [b - a for a, b in zip(t, t[1:], strict=False) if b > a]
    return statistics.median(gaps) if gaps else None


def _points(
    xs: Sequence[Any], ys: Sequence[Any], factor: float = 1.0
) -> tuple[list[Any], list[float | None]]:
    pairs = [
        (x, y * factor) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None
    ]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@dataclass(frozen=True)
class _Binned:
    width: float
    centres: list[float]
    per_flow: list[tuple[_Flow, list[float | None]]]


def _binned(run: _Run, source: str, counter: str, rate: str | None, bin_s: float) -> _Binned | None:
    """Each flow's rate in bins of `bin_s` from 0 to the last stored sample or the run's end,
    whichever comes first (bytes read after the senders stopped are the teardown, outside every
    metric), from its byte counter (`metrics.binned_rates_bps`); series stored before the
    counter existed fall back to the mean of their per-interval rates in each bin."""
    data = [(f, run.flow_series(f, source)) for f in run.flows]
    data = [(f, d) for f, d in data if d.get("t_s")]
    if not data:
        return None
    end = min(max(max(d["t_s"]) for _, d in data), run.window[1])
    n = int(end / bin_s + 1e-9)
    if n < 1:
        return None
    edges = [k * bin_s for k in range(n + 1)]
    per_flow: list[tuple[_Flow, list[float | None]]] = []
    for flow, d in data:
        t = d["t_s"]
        if counter in d:
            pairs = [(ti, c) for ti, c in zip(t, d[counter], strict=False) if c is not None]
            spread = _spacing([p[0] for p in pairs]) or bin_s
            rates = binned_rates_bps([p[0] for p in pairs], [p[1] for p in pairs], edges, spread)
        elif rate is not None and rate in d:
            rates = _mean_per_bin(t, d[rate], edges)
        else:
            continue
        per_flow.append((flow, rates))
    if not per_flow:
        return None
    centres = [round((a + b) / 2, 9) for a, b in zip(edges, edges[1:], strict=False)]
    return _Binned(bin_s, centres, per_flow)


def _mean_per_bin(
    t: Sequence[float], values: Sequence[Any], edges: Sequence[float]
) -> list[float | None]:
    sums = [0.0] * (len(edges) - 1)
    counts = [0] * (len(edges) - 1)
    width = edges[1] - edges[0]
    for ti, v in zip(t, values, strict=False):
        k = math.ceil(ti / width) - 1  # a sample at ti covers the interval before it
        if v is not None and 0 <= k < len(sums):
            sums[k] += v
            counts[k] += 1
    return [s / c if c else None for s, c in zip(sums, counts, strict=True)]


def _resolve_bin(run: _Run, requested: Bin, source: str) -> tuple[float, str] | None:
    """(bin in s, how the title names it). A bin finer than the stored samples is refused:
    it would only show their spacing."""
    spacings = [
        s for f in run.flows if (s := _spacing(run.flow_series(f, source).get("t_s") or []))
    ]
    if not spacings:
        return None
    resolution = max(spacings)
    if requested == "rtt":
        rtt = run.base_rtt_s
        if rtt is None:
            return resolution, f"sample ({format_quantity(resolution, SECOND)})"
        if rtt < resolution:
            return resolution, f"{format_quantity(resolution, SECOND)} (the samples' interval)"
        return rtt, f"RTT ({format_quantity(rtt, SECOND)})"
    if requested < resolution * (1 - 1e-6):
        raise ValidationFailed.field(
            "bin",
            f"{format_quantity(requested, SECOND)} is finer than the stored samples "
            f"({format_quantity(resolution, SECOND)} apart)",
        )
    return requested, format_quantity(requested, SECOND)


def _rate_figure(
    run: _Run, name: str, metric: str, source: str, counter: str, rate: str | None, bin_: Bin
) -> FigureData | None:
    resolved = _resolve_bin(run, bin_, source)
    if resolved is None:
        return None
    width, bin_name = resolved
    binned = _binned(run, source, counter, rate, width)
    if binned is None:
        return None
    quantity = METRICS[metric]
    aggregate: list[float | None] = []
    for k in range(len(binned.centres)):
        values = [value for f, r in binned.per_flow if f.forward and (value := r[k]) is not None]
        aggregate.append(sum(values) if values else None)
    link_rate = run.applied.get("rate_bps")
    everything = [v for _, r in binned.per_flow for v in r] + aggregate + [link_rate]
    label, factor = scaled(quantity, everything)
    traces = [
        Trace(flow.label, binned.centres, times(rates, factor), colour=flow.index)
        for flow, rates in binned.per_flow
    ]
    if len(binned.per_flow) > 1:
        reverse = any(not f.forward for f, _ in binned.per_flow)
        traces.append(
            Trace(
                "aggregate (forward)" if reverse else "aggregate",
                binned.centres,
                times(aggregate, factor),
                style="aggregate",
            )
        )
    if link_rate:
        span = [binned.centres[0] - width / 2, binned.centres[-1] + width / 2]
        traces.append(
            Trace(
                f"link rate {format_quantity(link_rate, 'bit/s')}",
                span,
                [link_rate * factor] * 2,
                style="reference",
            )
        )
    return FigureData(
        name,
        f"{quantity.label} per {bin_name}",
        run.subtitle,
        TIME,
        [Panel(Axis(label, from_zero=True), traces)],
    )


@dataclass(frozen=True)
class _Column:
    """A column of each flow's series: its quantity, its axis label and the factor the axis
    shows values with, and per flow (flow, t, values in SI units)."""

    quantity: Quantity
    label: str
    factor: float
    flows: list[tuple[_Flow, list[Any], list[float | None]]]

    def traces(self, style: Style = "line", suffix: str = "") -> list[Trace]:
        return [
            Trace(f.label + suffix, t, times(v, self.factor), style=style, colour=f.index)
            for f, t, v in self.flows
        ]


def _column(run: _Run, source: str, column: str) -> _Column:
    quantity, to_si = column_quantity(column)
    found = []
    for flow in run.flows:
        d = run.flow_series(flow, source)
        t, v = _points(d.get("t_s") or [], d.get(column) or [], to_si)
        if t:
            found.append((flow, t, v))
    label, factor = scaled(quantity, [x for _, _, v in found for x in v])
    return _Column(quantity, label, factor, found)


def _cwnd_traces(run: _Run, ssthresh: bool) -> tuple[Axis, list[Trace]]:
    cwnd = _column(run, "tcp_info", "cwnd_pkts")
    traces = cwnd.traces()
    if ssthresh:
        traces += _column(run, "tcp_info", "ssthresh_pkts").traces("dashed", " ssthresh")
    return Axis(cwnd.label, from_zero=True), traces


def _queue_traces(run: _Run) -> tuple[Axis, list[Trace]]:
    queue = run.series.get("queue") or {}
    t, q = _points(queue.get("t_s") or [], queue.get("qlen_pkts") or [])
    if not t:
        return Axis(""), []
    label, _ = scaled(QUANTITIES["qlen_pkts"], [])
    traces = [Trace("queue", t, q, style="step")]
    drops = queue.get("drops") or []
    marks = [
        queue["t_s"][k]
        for k in range(1, len(drops))
        if drops[k] is not None and drops[k - 1] is not None and drops[k] > drops[k - 1]
    ]
    buffer = run.applied.get("buffer_pkts")
    top = max([v for v in q if v is not None] + ([buffer] if buffer else []))
    if marks:
        traces.append(Trace("drops", marks, [top * 1.05] * len(marks), style="events"))
    if buffer:
        traces.append(
            Trace(
                f"buffer {format_quantity(int(buffer), PACKET)}",
                [t[0], t[-1]],
                [buffer] * 2,
                style="reference",
            )
        )
    return Axis(label, from_zero=True), traces


def _cdf_trace(
    name: str, values: Sequence[float | None], factor: float, colour: int | None
) -> Trace:
    x, y = cdf([None if v is None else v * factor for v in values])
    return Trace(name, x, list(y), style="step", colour=colour)


def run_figure_data(run: Mapping[str, Any], bin: Bin = "rtt") -> list[FigureData]:  # noqa: A002
    """Figures of one run (the JSON of GET /v1/runs/{id}), goodput and throughput binned per
    `bin` ("rtt": the base RTT); figures without data are left out."""
    r = _Run(run)
    figures: list[FigureData | None] = []
    figures.append(
        _rate_figure(r, "goodput", "goodput_bps", "goodput", "bytes_received", "goodput_bps", bin)
    )
    figures.append(
        _rate_figure(r, "throughput", "throughput_bps", "tcp_info", "bytes_sent", None, bin)
    )

    cwnd_axis, cwnd = _cwnd_traces(r, ssthresh=True)
    figures.append(
        FigureData("cwnd", "cwnd and ssthresh", r.subtitle, TIME, [Panel(cwnd_axis, cwnd)])
    )
    queue_axis, queue = _queue_traces(r)
    if queue:
        top_axis, top = _cwnd_traces(r, ssthresh=False)
        figures.append(
            FigureData(
                "cwnd_queue",
                "cwnd and bottleneck queue",
                r.subtitle,
                TIME,
                [Panel(top_axis, top), Panel(queue_axis, queue)],
            )
        )

    rtt = _column(r, "tcp_info", "srtt_s")
    rtt_traces = rtt.traces()
    base = r.base_rtt_s
    if rtt_traces and base:
        first = min(t[0] for _, t, _ in rtt.flows)
        last = max(t[-1] for _, t, _ in rtt.flows)
        rtt_traces.append(
            Trace(
                f"base RTT {format_quantity(base, SECOND)}",
                [first, last],
                [base * rtt.factor] * 2,
                style="reference",
            )
        )
    figures.append(
        FigureData(
            "rtt", rtt.quantity.label, r.subtitle, TIME, [Panel(Axis(rtt.label), rtt_traces)]
        )
    )

    scatter = []
    for flow in r.flows:
        d = r.flow_series(flow, "tcp_info")
        pairs = [
            (c, s * rtt.factor)
            for c, s in zip(d.get("cwnd_pkts") or [], d.get("srtt_s") or [], strict=False)
            if c is not None and s is not None
        ]
        if pairs:
            scatter.append(
                Trace(
                    flow.label,
                    [p[0] for p in pairs],
                    [p[1] for p in pairs],
                    style="markers",
                    colour=flow.index,
                )
            )
    figures.append(
        FigureData(
            "rtt_vs_cwnd",
            f"{rtt.quantity.label} against cwnd",
            r.subtitle,
            Axis(scaled(QUANTITIES["cwnd_pkts"], [])[0]),
            [Panel(Axis(rtt.label), scatter)],
        )
    )

    if queue:
        figures.append(
            FigureData("queue", "bottleneck queue", r.subtitle, TIME, [Panel(queue_axis, queue)])
        )

    fairness = r.series.get("fairness") or {}
    jain = METRICS["jain_index"]
    t, j = _points(fairness.get("t_s") or [], fairness.get(jain.name) or [])
    interval = r.spec.measurement.interval if r.spec else None
    per = f" per {format_quantity(interval, SECOND)}" if interval else " per interval"
    figures.append(
        FigureData(
            "fairness",
            f"{jain.label}{per}",
            r.subtitle,
            TIME,
            [Panel(Axis(jain.label, range=(0.0, 1.05)), [Trace(jain.label, t, j)] if t else [])],
            legend=False,
        )
    )

    figures += _cdfs(r, bin)
    figures += _state_figures(r)
    return [f for f in figures if f is not None and f.has_data()]


def _cdfs(r: _Run, bin_: Bin) -> list[FigureData | None]:
    """CDFs over the measurement window: smoothed RTT per flow, the queueing delay of the
    bottleneck's sampled packets, per-flow goodput in the figures' bins."""
    window = f"after {format_quantity(r.window[0], SECOND)}" if r.window[0] else "whole run"
    out: list[FigureData | None] = []

    rtt = _column(r, "tcp_info", "srtt_s")
    inside = [
        (f, [x for ti, x in zip(t, v, strict=True) if r.in_window(ti)]) for f, t, v in rtt.flows
    ]
    label, factor = scaled(rtt.quantity, [x for _, v in inside for x in v])
    traces = [_cdf_trace(f.label, v, factor, f.index) for f, v in inside if v]
    out.append(
        FigureData(
            "rtt_cdf",
            f"{rtt.quantity.label}: CDF ({window})",
            r.subtitle,
            Axis(label),
            [Panel(CDF, traces)],
        )
    )

    queue = r.series.get("queue") or {}
    delay_q = QUANTITIES["queue_delay_s"]
    delays = [
        d
        for ti, d in zip(queue.get("t_s") or [], queue.get(delay_q.name) or [], strict=False)
        if d is not None and r.in_window(ti)
    ]
    label, factor = scaled(delay_q, delays)
    out.append(
        FigureData(
            "queue_delay_cdf",
            f"bottleneck {delay_q.label}: CDF ({window})",
            r.subtitle,
            Axis(label),
            [Panel(CDF, [_cdf_trace("bottleneck", delays, factor, None)] if delays else [])],
            legend=False,
        )
    )

    resolved = _resolve_bin(r, bin_, "goodput")
    binned = (
        _binned(r, "goodput", "bytes_received", "goodput_bps", resolved[0]) if resolved else None
    )
    if binned is not None and resolved is not None:
        goodput = METRICS["goodput_bps"]
        half = binned.width / 2
        kept = [
            (
                f,
                [
                    v
                    for c, v in zip(binned.centres, rates, strict=True)
                    if v is not None and r.bin_inside(c - half, c + half)
                ],
            )
            for f, rates in binned.per_flow
        ]
        label, factor = scaled(goodput, [v for _, vs in kept for v in vs])
        traces = [_cdf_trace(f.label, vs, factor, f.index) for f, vs in kept if vs]
        out.append(
            FigureData(
                "goodput_cdf",
                f"{goodput.label} per {resolved[1]}: CDF ({window})",
                r.subtitle,
                Axis(label),
                [Panel(CDF, traces)],
            )
        )
    return out


def _state_figures(r: _Run) -> list[FigureData | None]:
    """Controller state: BPF controllers and userspace agents write `flow-{i}.cc_state`, one
    column per variable of the algorithm; built-in kernel controllers expose only tcp_info.
    One figure per variable, a trace per flow that has it (scales differ between variables)."""
    columns = sorted({c for f in r.flows for c in r.flow_series(f, "cc_state")} - _STATE_EXCLUDED)
    out: list[FigureData | None] = []
    for column in columns:
        state = _column(r, "cc_state", column)
        out.append(
            FigureData(
                f"state_{column}",
                f"controller state: {state.quantity.label}",
                r.subtitle,
                TIME,
                [Panel(Axis(state.label), state.traces("step"))],
            )
        )
    return out
