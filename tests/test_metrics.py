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
