"""Metric formulas against hand-computed cases."""

from __future__ import annotations

import pytest

from ccbench.analysis import metrics as m


def test_jain_index() -> None:
    assert m.jain_index([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert m.jain_index([9.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    # (1 + 3)^2 / (2 * (1 + 9)) = 16 / 20
    assert m.jain_index([1.0, 3.0]) == pytest.approx(0.8)
    assert m.jain_index([]) is None and m.jain_index([0.0, 0.0]) is None


def test_median_and_siqr() -> None:
    assert m.median([3.0, 1.0, 2.0]) == 2.0
    assert m.median([1.0, 2.0, 3.0, 4.0]) == pytest.approx(2.5)
    # Quartiles of 1..9 with linear interpolation: Q1 = 3, Q3 = 7 -> SIQR = 2.
    assert m.siqr([float(x) for x in range(1, 10)]) == pytest.approx(2.0)
    assert m.siqr([4.0]) == 0.0 and m.siqr([]) is None
    assert m.percentile([0.0, 10.0], 95) == pytest.approx(9.5)
    # The ranks every percentile uses: h = (n-1) p / 100 between floor(h) and the next rank.
    assert m.percentile_ranks(5, 50) == (2, 3, 0.0)
    assert m.percentile_ranks(101, 99) == (99, 100, pytest.approx(0.0))
    assert m.percentile_ranks(2, 95) == (0, 1, pytest.approx(0.95))
    assert m.percentile_ranks(1, 99) == (0, 0, 0.0)


def test_power_utilization_rates() -> None:
    assert m.power(10e6, 0.05) == pytest.approx(2e8)
    assert m.power(10e6, 0.0) is None and m.power(None, 0.1) is None
    # 1,250,000 bytes in 2 s on a 10 Mbit/s link: half used (e.g. idle half of the time).
    assert m.utilization(1_250_000, 2.0, 10e6) == pytest.approx(0.5)
    assert m.goodput_bps(1_250_000, 1.0) == pytest.approx(10e6)
    assert m.goodput_bps(100, 0.0) is None
    assert m.queue_delay_s(15_000, 10e6) == pytest.approx(0.012)
    assert m.loss_rate(5, 100) == pytest.approx(0.05) and m.loss_rate(0, 0) is None


def test_friendliness_equivalence_and_fc() -> None:
    # Candidates average 4, references 8: F = 0.5, E = 2.
    f = m.friendliness_ratio([3.0, 5.0], [8.0, 8.0])
    assert f == pytest.approx(0.5)
    assert m.equivalence_ratio(f) == pytest.approx(2.0)
    assert m.equivalence_ratio(2.0) == pytest.approx(2.0)  # E = max(F, 1/F) >= 1
    assert m.equivalence_ratio(1.0) == 1.0
    assert m.fc_ratio([3.0, 5.0]) == pytest.approx(5 / 3)
    assert m.fc_ratio([3.0]) is None and m.friendliness_ratio([], [1.0]) is None


def test_normalized_fairness_for_different_rtts() -> None:
    # Shares proportional to 1/RTT are fair after normalization; equal shares are not.
    assert m.normalized_fairness([6.0, 3.0], [0.05, 0.1]) == pytest.approx(1.0)
    assert m.normalized_fairness([4.5, 4.5], [0.05, 0.1]) == pytest.approx(0.9)


def test_convergence_time() -> None:
    times = [1.0, 2.0, 3.0, 4.0, 5.0]
    rates = [[9.0, 1.0], [7.0, 3.0], [5.5, 4.5], [5.0, 5.0], [4.8, 5.2]]
    # Within 20% of 5 from t=3 on: converged 2 s after the first sample.
    assert m.convergence_time(times, rates, 5.0) == pytest.approx(2.0)
    assert m.convergence_time(times, [[9.0, 1.0]] * 5, 5.0) is None


def test_utilization_of_a_real_path_is_nominal() -> None:
    # Goodput over the nominal rate, at most 1; unknown without a rate or a goodput.
    assert m.nominal_utilization(5e6, 10e6) == pytest.approx(0.5)
    assert m.nominal_utilization(12e6, 10e6) == 1.0
    assert m.nominal_utilization(5e6, None) is None and m.nominal_utilization(None, 10e6) is None


def test_windows_and_counters() -> None:
    window = m.Window(10.0, 12.0)
    assert window.seconds == 2.0 and 10.0 not in window and 12.0 in window
    # A counter sampled before and inside the window: last inside - last at or before start.
    samples = [(9.0, 100.0), (10.0, 150.0), (11.0, 400.0), (12.0, 650.0), (13.0, 900.0)]
    assert m.increase(samples, window) == 500.0
    assert m.increase([(11.0, 7.0)], window) == 0.0  # one sample inside, none before
    assert m.increase([(13.0, 7.0)], window) == 0.0
    # A counter that began inside the window at 0 (a flow's bytes): all of it counts, also
    # what came before its first sample.
    assert m.increase([(11.0, 300.0), (12.0, 650.0)], window, origin=0.0) == 650.0
    assert m.increase([(11.0, 300.0), (12.0, 650.0)], window) == 350.0
    # Per-interval counts: the samples inside the window.
    assert m.bytes_in([(10.0, 5.0), (11.0, 7.0), (12.0, 11.0), (12.5, 13.0)], window) == 18.0


def test_the_common_window_of_flows_active_at_different_times() -> None:
    assert m.common_window([m.Window(0, 60), m.Window(30, 60)]) == m.Window(30, 60)
    assert m.common_window([m.Window(10, 40), m.Window(0, 20), m.Window(0, 40)]) == m.Window(10, 20)
    # Never open together (touching is not overlapping), or nothing to intersect.
    assert m.common_window([m.Window(0, 10), m.Window(10, 20)]) is None
    assert m.common_window([]) is None


def test_streamed_means_and_the_emulators_units() -> None:
    assert m.mean_of(6.0, 4) == 1.5 and m.mean_of(0.0, 0) is None
    # Queue of 2 packets for 3 s, 0 for 1 s: time average 1.5 packets.
    assert m.time_mean(2 * 3.0, 4.0) == 1.5 and m.time_mean(1.0, 0.0) is None
    # 1500 bytes at 12 Mbit/s take 1000 µs: 3000 µs at the bottleneck is 2000 µs of waiting.
    assert m.queueing_delay_us(3000.0, 1500.0, 12e6) == pytest.approx(2000.0)
    assert m.rate_bps_us(1500, 1000) == pytest.approx(12e6) and m.rate_bps_us(1, 0) is None
    assert m.transmission_time_s(1500, 12e6) == pytest.approx(0.001)


def test_convergence_to_an_equal_share_of_each_interval() -> None:
    # Intervals of 1 s ending at 1..4 s; two flows settle within 20% of their equal share from
    # the third interval on, which starts 2 s after the run's start.
    rates = [[9.0, 1.0], [8.0, 2.0], [5.5, 4.5], [4.0, 4.4]]
    assert m.share_convergence_time([1.0, 2.0, 3.0, 4.0], rates, 1.0, 0.2) == pytest.approx(2.0)
    assert m.share_convergence_time([1.0, 2.0], [[9.0, 1.0]] * 2, 1.0, 0.2) is None


def test_binned_rates_from_a_byte_counter() -> None:
    # Samples every 10 ms of a flow receiving 12,500 bytes each (10 Mbit/s) from t = 0.01,
    # silent from 0.2 s to 0.3 s (no samples), then 25,000 bytes in the 10 ms before 0.31.
    times = [round(0.01 * k, 2) for k in range(1, 21)] + [0.31]
    counter = [12_500.0 * k for k in range(1, 21)] + [12_500.0 * 20 + 25_000]
    edges = [0.0, 0.1, 0.2, 0.25, 0.3, 0.31, 0.4]
    rates = m.binned_rates_bps(times, counter, edges, spread_s=0.01)
    assert rates[0] == pytest.approx(10e6) and rates[1] == pytest.approx(10e6)
    # The stall is a stall: no bytes are smeared over it.
    assert rates[2] == 0.0 and rates[3] == 0.0
    assert rates[4] == pytest.approx(8 * 25_000 / 0.01)  # the catch-up's own 10 ms
    assert rates[5] is None  # after the last sample: not sending
    # Bins of any width see the same bytes: 12,500 B per 10 ms over the first 0.2 s.
    coarse = m.binned_rates_bps(times, counter, [0.0, 0.2], spread_s=0.01)
    assert coarse == [pytest.approx(10e6)]
    # Before the first sample's interval: none; the flow starts at 1 s here.
    late = m.binned_rates_bps([1.01, 1.02], [100.0, 200.0], [0.0, 0.5, 1.0, 1.02], 0.01)
    assert late[:2] == [None, None] and late[2] == pytest.approx(8 * 200 / 0.02)
    assert m.binned_rates_bps([], [], [0.0, 1.0], 0.01) == [None]
    with pytest.raises(ValueError, match="differ in length"):
        m.binned_rates_bps([0.1], [], [0.0, 1.0], 0.01)


def test_convergence_is_timed_from_the_last_change_of_the_competing_flows() -> None:
    # A flow alone for 2 s (its share is always its own), a second one joins at 2 s and they
    # settle from 4 s: 2 s after it joined, not 4 s after the run's start.
    rates = [[10.0], [10.0], [9.0, 1.0], [7.0, 3.0], [5.2, 4.8], [5.0, 5.0]]
    ends = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert m.share_convergence_time(ends, rates, 1.0, 0.2, [2.0]) == pytest.approx(2.0)
    assert m.share_convergence_time(ends, rates, 1.0, 0.2) == pytest.approx(4.0)
    # A change after the flows settled (they stayed in the band through it) does not count.
    assert m.share_convergence_time(ends, rates, 1.0, 0.2, [2.0, 5.0]) == pytest.approx(2.0)
