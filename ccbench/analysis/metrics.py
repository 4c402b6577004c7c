"""Every metric's definition, once. Names match the report schema; values are SI.

Windows: a metric over a run uses the measurement window [t0 + skip_start, t0 + duration],
intersected with each flow's own active period, where t0 is the run's common start time."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for no values."""
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], p: float) -> float | None:
    """p-th percentile (0-100) with linear interpolation between closest ranks:
    x = v[floor(h)] + (h - floor(h)) * (v[floor(h)+1] - v[floor(h)]), h = (n-1) * p / 100."""
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


def goodput_bps(bytes_received: float, window_s: float) -> float | None:
    """goodput_bps = 8 * (application bytes delivered to the receiver in the window) / window."""
    return rate_bps(bytes_received, window_s)


def throughput_bps(bytes_sent: float, window_s: float) -> float | None:
    """throughput_bps = 8 * (bytes the sender transmitted in the window, retransmissions
    included) / window."""
    return rate_bps(bytes_sent, window_s)


def utilization(link_bytes_sent: float, window_s: float, capacity_bps: float) -> float | None:
    """utilization = 8 * (bytes the bottleneck sent in the window, link-layer headers included,
    as its qdisc counts them) / (capacity_bps * window), in [0, 1] up to measurement noise."""
    if window_s <= 0 or capacity_bps <= 0:
        return None
    return 8 * link_bytes_sent / (capacity_bps * window_s)


def jain_index(shares: Sequence[float]) -> float | None:
    """Jain's fairness index J = (sum x_i)^2 / (n * sum x_i^2): 1 for equal shares, 1/n when
    one flow takes everything (seed 000). None without flows or when all shares are 0."""
    if not shares:
        return None
    square_sum = sum(x * x for x in shares)
    if square_sum == 0:
        return None
    return sum(shares) ** 2 / (len(shares) * square_sum)


def power(goodput: float | None, delay_s: float | None) -> float | None:
    """Network power P = throughput / delay (seed 000), here aggregate goodput_bps divided by the
    mean RTT in seconds: bit/s per s. Higher is better."""
    if goodput is None or delay_s is None or delay_s <= 0:
        return None
    return goodput / delay_s


def queue_delay_s(backlog_bytes: float, capacity_bps: float) -> float:
    """Queueing delay a packet arriving at the bottleneck would see: 8 * backlog / capacity."""
    return 8 * backlog_bytes / capacity_bps


def loss_rate(drops: int, packets_offered: int) -> float | None:
    """loss_rate = packets dropped at the bottleneck / packets offered to it (sent + dropped)."""
    return drops / packets_offered if packets_offered > 0 else None


def friendliness_ratio(candidate: Sequence[float], reference: Sequence[float]) -> float | None:
    """F = T_C / T_T, the mean throughput of the candidate flows over the mean throughput of
    the reference (TCP) flows (seed 004, section III-C). 1 is perfectly TCP-friendly."""
    t_c, t_t = mean(candidate), mean(reference)
    if t_c is None or t_t is None or t_t == 0:
        return None
    return t_c / t_t


def equivalence_ratio(friendliness: float | None) -> float | None:
    """E = max(T_T / T_C, T_C / T_T) = max(F, 1/F) >= 1 (seed 004)."""
    if friendliness is None or friendliness <= 0:
        return None
    return max(friendliness, 1 / friendliness)


def fc_ratio(candidate: Sequence[float]) -> float | None:
    """FC = max_i T_i^c / min_i T_i^c over the candidate flows: fairness among them (seed 004).
    None with fewer than two candidates or a starved one."""
    if len(candidate) < 2 or min(candidate) <= 0:
        return None
    return max(candidate) / min(candidate)


def normalized_fairness(throughputs: Sequence[float], rtts_s: Sequence[float]) -> float | None:
    """Jain's index of RTT-normalized throughputs, J(x_i = T_i * RTT_i): the fairness seed 003
    uses for flows with different RTTs (after its reference [2]). TCP's fair share is taken as
    proportional to 1/RTT, so flows that each get that share score 1."""
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
