"""Every metric's formula, once: the other analysis modules (and the API's reports over
repetitions) call these functions. The metrics' names, units and descriptions are the catalogue
in `schemas/metrics.py`; each docstring here names the metrics its formula defines. Values are
in SI units unless a name says otherwise (`_us`: the emulator's packet log counts µs).

Windows: a metric over a run uses the measurement window [t0 + skip_start, t0 + duration],
intersected with each flow's own active period, where t0 is the run's common start time.
Sampled logs count a sample at ts in the window when start < ts <= end; the emulator's packet
log counts a packet that arrived at a in it when start <= a < end."""

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


def increase(samples: Sequence[tuple[float, float]], window: Window) -> float:
    """Increase of a cumulative counter across the window, from its samples (ts, value): the
    last value inside minus the last value at or before the start (else the first inside);
    0 without a sample inside, never negative."""
    before = [v for ts, v in samples if ts <= window.start]
    inside = [v for ts, v in samples if ts in window]
    if not inside:
        return 0.0
    first = before[-1] if before else inside[0]
    return max(0.0, inside[-1] - first)


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


def total(values: Sequence[float | None]) -> float | None:
    """Sum of the values present; None when none is. The aggregate goodput_bps and
    throughput_bps are the totals of the forward flows' values (each over its own window)."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def percentile(values: Sequence[float], p: float) -> float | None:
    """p-th percentile (0-100) with linear interpolation between closest ranks:
    x = v[floor(h)] + (h - floor(h)) * (v[floor(h)+1] - v[floor(h)]), h = (n-1) * p / 100.
    rtt_p95_s is the 95th percentile of smoothed RTT samples."""
    if not values:
        return None
    ordered = sorted(values)
    h = (len(ordered) - 1) * p / 100
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


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
    """goodput_bps = 8 * (application bytes delivered to the receiver in the window) / window."""
    return rate_bps(bytes_received, window_s)


def throughput_bps(bytes_sent: float, window_s: float) -> float | None:
    """throughput_bps = 8 * (bytes the sender transmitted in the window, retransmissions
    included) / window."""
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
    jain_index is J of the forward flows' goodput_bps (also per interval, over time)."""
    if not shares:
        return None
    square_sum = sum(x * x for x in shares)
    if square_sum == 0:
        return None
    return sum(shares) ** 2 / (len(shares) * square_sum)


def power(goodput: float | None, delay_s: float | None) -> float | None:
    """Network power P = throughput / delay (seed 000), here aggregate goodput_bps divided by the
    aggregate rtt_mean_s: bit/s per s. Higher is better."""
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
    mean throughput of the reference (TCP) flows (seed 004, section III-C), here their
    goodput_bps. 1 is perfectly TCP-friendly."""
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
    """fc_ratio FC = max_i T_i^c / min_i T_i^c over the candidate flows' goodput_bps: fairness
    among them (seed 004). None with fewer than two candidates or a starved one."""
    if len(candidate) < 2 or min(candidate) <= 0:
        return None
    return max(candidate) / min(candidate)


def normalized_fairness(throughputs: Sequence[float], rtts_s: Sequence[float]) -> float | None:
    """normalized_fairness: Jain's index of RTT-normalized throughputs, J(x_i = T_i * RTT_i),
    here goodput_bps x rtt_mean_s: the fairness seed 003 uses for flows with different RTTs
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
) -> float | None:
    """convergence_time_s: rates[k] are the rates of the flows active for the whole k-th
    interval, which ends at ends_s[k] (from the run's start). Each rate is taken relative to
    the interval's equal share (the mean of its rates); the result runs from the run's start to
    the start of the first interval from which on every relative rate stays within 1 ± band
    (convergence_time), None when they never settle."""
    normalized = []
    for interval in rates:
        share = mean(interval)
        if not share:
            raise ValueError("every interval needs a positive equal share")
        normalized.append([x / share for x in interval])
    converged = convergence_time(ends_s, normalized, 1.0, band)
    if converged is None:
        return None
    return converged + (ends_s[0] - interval_s)
