"""Every metric's formula, once: the other analysis modules (and the API's reports over
repetitions) call these functions. The metrics' names, units and descriptions are the catalogue
in `schemas/metrics.py`; each docstring here names the metrics its formula defines. Values are
in SI units unless a name says otherwise (`_us`: the emulator's packet log counts µs).

Windows: a metric over a run uses the measurement window [t0 + skip_start, t0 + duration],
where t0 is the run's common start time; a flow's own metrics use that window intersected with
the flow's active period (its configured start and duration). Sampled logs count a sample at ts
in a window when start < ts <= end; the emulator's packet log counts a packet that arrived at a
in it when start <= a < end.

Flows active at different times (staggered starts, flows that stop early):
- aggregate rates (goodput_bps, throughput_bps, and power from goodput_bps) are the bytes of
  every forward flow over the run's window, divided by its length, so they never exceed what
  the link carried; a sum of per-flow rates, each over its own shorter window, would;
- shares (Jain's index, normalized fairness, friendliness F and E, FC) compare the flows'
  goodputs over the window in which all the flows compared are active together
  (`common_window`), as the seeds do: seed 000 §4.3 (Figs 11-12, six sources started at
  different times) and seed 003 §V-C compare the bandwidth each source gets while competing,
  and seed 004 §III-A staggers its connections' starts only to avoid synchronisation. Flows
  that never run together have no shares (None)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy.typing as npt

# A float, or a numpy array of them (formulas applied to a chunk of the packet log at once).
Values = TypeVar("Values", float, "npt.NDArray[Any]")


@dataclass
class Window:
    """A measurement window in Unix seconds; a sample at ts is inside when start < ts <= end."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)

    def __contains__(self, ts: float) -> bool:
        return self.start < ts <= self.end


def common_window(windows: Sequence[Window]) -> Window | None:
    """The time in which every window is open (their intersection); None when they never are
    all open together, or for no window. The shares of flows active at different times are
    their rates over the common window of their active periods."""
    if not windows:
        return None
    common = Window(max(w.start for w in windows), min(w.end for w in windows))
    return common if common.seconds > 0 else None


def increase(
    samples: Sequence[tuple[float, float]], window: Window, origin: float | None = None
) -> float:
    """Increase of a cumulative counter across the window, from its samples (ts, value): the
    last value inside minus the last value at or before the start; without a sample at or
    before the start, `origin` (the counter's value when it began, 0 for a flow's byte
    counters, when the flow began inside the window), else the first value inside. 0 without a
    sample inside, never negative."""
    before = [v for ts, v in samples if ts <= window.start]
    inside = [v for ts, v in samples if ts in window]
    if not inside:
        return 0.0
    start = origin if origin is not None else inside[0]
    first = before[-1] if before else start
    return max(0.0, inside[-1] - first)


def bytes_in(counts: Sequence[tuple[float, float]], window: Window) -> float:
    """Bytes of per-interval counts (ts, bytes since the previous sample) whose sample falls
    in the window: what a receiver got in it."""
    return sum(b for ts, b in counts if ts in window)


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for no values. rtt_mean_s is the mean of smoothed RTT samples."""
    return sum(values) / len(values) if values else None


def mean_of(total: float, count: float) -> float | None:
    """The arithmetic mean from a running total and count (data streamed in chunks); None for
    no values."""
    return total / count if count else None


def time_mean(integral: float, span: float) -> float | None:
    """Time average of a quantity over a span: its integral over the span / the span's length
    (in the same time unit); None for an empty span. queue_mean_pkts from the emulator's log is
    the time average of the queue length."""
    return integral / span if span > 0 else None


def percentile_ranks(count: int, p: float) -> tuple[int, int, float]:
    """Where the p-th percentile (0-100) of `count` ordered values lies: ranks (lo, hi) and the
    fraction f between them, h = (count-1) * p / 100, lo = floor(h), hi = min(lo+1, count-1),
    f = h - lo; the percentile is v[lo] + f * (v[hi] - v[lo]) (linear interpolation between
    closest ranks). Every percentile of a report uses it, also over histograms."""
    h = (count - 1) * p / 100
    lo = math.floor(h)
    return lo, min(lo + 1, count - 1), h - lo


def percentile(values: Sequence[float], p: float) -> float | None:
    """p-th percentile (0-100) with linear interpolation between closest ranks
    (`percentile_ranks`). rtt_p95_s is the 95th percentile of smoothed RTT samples."""
    if not values:
        return None
    ordered = sorted(values)
    lo, hi, f = percentile_ranks(len(ordered), p)
    return ordered[lo] + f * (ordered[hi] - ordered[lo])


def median(values: Sequence[float]) -> float | None:
    """50th percentile."""
    return percentile(values, 50)


def siqr(values: Sequence[float]) -> float | None:
    """Semi-interquartile range SIQR = (Q3 - Q1) / 2, the spread reported beside the median over
    repetitions (seed 004, after Jain's book). 0 for a single value."""
    q1, q3 = percentile(values, 25), percentile(values, 75)
    if q1 is None or q3 is None:
        return None
    return (q3 - q1) / 2


def rate_bps(byte_count: float, seconds: float) -> float | None:
    """Rate in bit/s = 8 * bytes / seconds; None for an empty window."""
    return 8 * byte_count / seconds if seconds > 0 else None


def rate_bps_us(byte_count: float, microseconds: float) -> float | None:
    """rate_bps over a time in µs (the emulator's log): 8e6 * bytes / µs; None for no time."""
    return 8e6 * byte_count / microseconds if microseconds > 0 else None


def transmission_time_s(byte_count: float, rate: float) -> float:
    """Time to send bytes at a rate in bit/s: 8 * bytes / rate."""
    return 8 * byte_count / rate


def goodput_bps(bytes_received: float, window_s: float) -> float | None:
    """goodput_bps = 8 * (application bytes delivered to the receiver in the window) / window.
    A flow's: its bytes over its window; the aggregate: every forward flow's bytes over the
    run's window (not the sum of the flows' rates, each over its own window). Delivered means
    read by the receiving application, in order: bytes that crossed the bottleneck before the
    window but waited behind a loss for its retransmission count when they are read, so over
    a window of a few RTTs goodput can exceed the bottleneck's rate."""
    return rate_bps(bytes_received, window_s)


def throughput_bps(bytes_sent: float, window_s: float) -> float | None:
    """throughput_bps = 8 * (bytes the sender transmitted in the window, retransmissions
    included) / window; the aggregate over the run's window, as goodput_bps."""
    return rate_bps(bytes_sent, window_s)


def binned_rates_bps(
    times_s: Sequence[float],
    counter_bytes: Sequence[float],
    edges_s: Sequence[float],
    spread_s: float,
) -> list[float | None]:
    """goodput_bps and throughput_bps over time: the rate in each bin [e_k, e_k+1] of a byte
    counter C sampled at times_s (the bytes received or sent since the flow's start),
    8 * (C(e_k+1) - C(e_k)) / (e_k+1 - e_k), whatever the samples' interval, so a bin of one
    RTT or of seconds (seed 004 Fig. 8's timescales) shows the same bytes as the metrics.

    A sample's increase arrived during the `spread_s` before it (the samples' interval), or
    since the previous sample when that is nearer: C rises linearly over that span and stays
    flat between, so a stall without samples shows as a stall. C is 0 before the first
    sample's span. A bin that ends before the first sample's span or starts after the last
    sample is None (the flow was not sending)."""
    if len(times_s) != len(counter_bytes):
        raise ValueError("binned_rates_bps: times and counter values differ in length")
    if not times_s:
        return [None] * max(0, len(edges_s) - 1)
    knots_t: list[float] = []
    knots_c: list[float] = []
    previous_t, previous_c = times_s[0] - spread_s, 0.0
    for t, c in zip(times_s, counter_bytes, strict=True):
        rise_from = max(previous_t, t - spread_s)
        knots_t += [rise_from, t]
        knots_c += [previous_c, c]
        previous_t, previous_c = t, c
    first, last = knots_t[0], knots_t[-1]

    def at(t: float) -> float:
        if t <= first:
            return knots_c[0]
        if t >= last:
            return knots_c[-1]
        k = bisect.bisect_right(knots_t, t)
        t0, t1, c0, c1 = knots_t[k - 1], knots_t[k], knots_c[k - 1], knots_c[k]
        return c1 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)

    rates: list[float | None] = []
    for start, end in zip(edges_s, edges_s[1:], strict=False):
        if end <= first or start >= last:
            rates.append(None)
        else:
            rates.append(rate_bps(at(end) - at(start), end - start))
    return rates


def utilization(link_bytes_sent: float, window_s: float, capacity_bps: float) -> float | None:
    """utilization of an observed bottleneck = 8 * (bytes it sent in the window) /
    (capacity_bps * window), in [0, 1] up to measurement noise. The bytes are what the link
    counts for its rate: a qdisc counts Ethernet frames (link-layer headers included), the
    emulator (ccbench-link) IP packets."""
    if window_s <= 0 or capacity_bps <= 0:
        return None
    return 8 * link_bytes_sent / (capacity_bps * window_s)


def nominal_utilization(goodput: float | None, nominal_rate_bps: float | None) -> float | None:
    """utilization of a real path, whose bottleneck is not observable: min(1, aggregate
    goodput_bps / the path's nominal rate) (delivered application bytes, no headers); None
    without a nominal rate or a goodput."""
    if not nominal_rate_bps or goodput is None:
        return None
    return min(1.0, goodput / nominal_rate_bps)


def jain_index(shares: Sequence[float]) -> float | None:
    """Jain's fairness index J = (sum x_i)^2 / (n * sum x_i^2): 1 for equal shares, 1/n when
    one flow takes everything (seed 000). None without flows or when all shares are 0.
    jain_index is J of the forward flows' goodputs over the window in which they are all
    active (`common_window`; seed 000's sources "starting at different times", Fig 12, are
    compared while they compete), and per interval, over time, J of the flows active for the
    whole interval."""
    if not shares:
        return None
    square_sum = sum(x * x for x in shares)
    if square_sum == 0:
        return None
    return sum(shares) ** 2 / (len(shares) * square_sum)


def power(goodput: float | None, delay_s: float | None) -> float | None:
    """Network power P = throughput / delay (seed 000), here the aggregate goodput_bps (bytes
    over the run's window) divided by the aggregate rtt_mean_s: bit/s per s. Higher is
    better."""
    if goodput is None or delay_s is None or delay_s <= 0:
        return None
    return goodput / delay_s


def queue_delay_s(backlog_bytes: float, capacity_bps: float) -> float:
    """Queueing delay a packet arriving at the bottleneck would see: 8 * backlog / capacity
    (the backlog's transmission time). queue_delay_mean_s from sampled qdisc counters is this
    delay of the mean sampled backlog."""
    return transmission_time_s(backlog_bytes, capacity_bps)


def queueing_delay_us(sojourn_us: Values, length_bytes: Values, capacity_bps: float) -> Values:
    """A packet's queueing delay at the bottleneck, in µs: the time it spent there (departure -
    arrival) minus its own transmission time, sojourn - 8e6 * length / capacity.
    queue_delay_mean_s from the emulator's log is its mean over the packets sent on that
    arrived in the window (per flow: over the flow's packets)."""
    return sojourn_us - length_bytes * 8e6 / capacity_bps


def loss_rate(drops: float, packets_offered: float) -> float | None:
    """loss_rate = packets dropped at the bottleneck / packets offered to it: the packets that
    arrived (the emulator's log, also per flow) or, from qdisc counters, sent + dropped."""
    return drops / packets_offered if packets_offered > 0 else None


def friendliness_ratio(candidate: Sequence[float], reference: Sequence[float]) -> float | None:
    """friendliness_ratio F = T_C / T_T, the mean throughput of the candidate flows over the
    mean throughput of the reference (TCP) flows (seed 004, section III-B), here their goodputs
    over the window in which every candidate and reference flow is active. 1 is perfectly
    TCP-friendly."""
    t_c, t_t = mean(candidate), mean(reference)
    if t_c is None or t_t is None or t_t == 0:
        return None
    return t_c / t_t


def equivalence_ratio(friendliness: float | None) -> float | None:
    """equivalence_ratio E = max(T_T / T_C, T_C / T_T) = max(F, 1/F) >= 1 (seed 004)."""
    if friendliness is None or friendliness <= 0:
        return None
    return max(friendliness, 1 / friendliness)


def fc_ratio(candidate: Sequence[float]) -> float | None:
    """fc_ratio FC = max_i T_i^c / min_i T_i^c over the candidate flows' goodputs (the window
    of friendliness_ratio): fairness among them (seed 004). None with fewer than two
    candidates or a starved one."""
    if len(candidate) < 2 or min(candidate) <= 0:
        return None
    return max(candidate) / min(candidate)


def normalized_fairness(throughputs: Sequence[float], rtts_s: Sequence[float]) -> float | None:
    """normalized_fairness: Jain's index of RTT-normalized throughputs, J(x_i = T_i * RTT_i),
    here goodput x mean smoothed RTT, both over the window of jain_index: the fairness seed
    003 uses for flows with different RTTs
    (after its reference [2]). TCP's fair share is taken as proportional to 1/RTT, so flows
    that each get that share score 1."""
    if len(throughputs) != len(rtts_s) or any(r <= 0 for r in rtts_s):
        return None
    return jain_index([t * r for t, r in zip(throughputs, rtts_s, strict=True)])


def convergence_time(
    times_s: Sequence[float],
    rates: Sequence[Sequence[float]],
    fair_share: float,
    band: float = 0.2,
) -> float | None:
    """Time from the first sample until every flow's rate stays within fair_share x (1 ± band)
    for the rest of the samples: rates[k][i] is flow i's rate in the interval ending at
    times_s[k]. None when the flows never settle in the band."""
    if not times_s or fair_share <= 0:
        return None
    low, high = fair_share * (1 - band), fair_share * (1 + band)
    settled_from: int | None = None
    for k in range(len(times_s) - 1, -1, -1):
        if all(low <= r <= high for r in rates[k]):
            settled_from = k
        else:
            break
    if settled_from is None:
        return None
    return times_s[settled_from] - times_s[0]


def share_convergence_time(
    ends_s: Sequence[float],
    rates: Sequence[Sequence[float]],
    interval_s: float,
    band: float,
    changes_s: Sequence[float] = (),
) -> float | None:
    """convergence_time_s: rates[k] are the rates of the flows active for the whole k-th
    interval, which ends at ends_s[k] (from the run's start). Each rate is taken relative to
    the interval's equal share (the mean of its rates); the flows have settled from the start
    of the first interval from which on every relative rate stays within 1 ± band
    (convergence_time). The result runs to that moment from the last change of the competing
    flows before it (`changes_s`: when a flow started or stopped, from the run's start), or from
    the run's start: flows that start together are timed from the start, a flow that joins
    later from its start. None when they never settle."""
    normalized = []
    for interval in rates:
        share = mean(interval)
        if not share:
            raise ValueError("every interval needs a positive equal share")
        normalized.append([x / share for x in interval])
    converged = convergence_time(ends_s, normalized, 1.0, band)
    if converged is None:
        return None
    settled = converged + (ends_s[0] - interval_s)
    since = max((t for t in changes_s if t <= settled), default=0.0)
    return settled - max(0.0, since)
