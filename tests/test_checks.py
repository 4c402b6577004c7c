"""The emulator's timing check explains itself: where its late releases lost their time."""

from __future__ import annotations

import pytest

from ccbench.analysis.checks import _emulator_timing, late_release_shares, spoiled_by_load
from ccbench.analysis.queue import EmulatorTiming
from schemas import Check

COUNTERS = {
    "scheduling": {"policy": "fifo", "priority": 10},
    "wakeups": {"late": {"us_p99": 1509.0}, "run_delay": {"us_p99": 40.0}},
    "late_causes": {"above_us": 100, "count": 72, "timer_us": 64870, "run_delay_us": 11501,
                    "busy_us": 3803},
}  # fmt: skip


def test_late_releases_are_split_into_shares_of_their_lost_time() -> None:
    shares = late_release_shares(COUNTERS)
    assert shares is not None
    assert shares["timer"] == pytest.approx(64870 / 80174)
    assert shares["run_delay"] == pytest.approx(11501 / 80174)
    assert shares["busy"] == pytest.approx(3803 / 80174)
    # None late, or an emulator too old to count: nothing to split.
    assert late_release_shares({"late_causes": {"count": 0, "timer_us": 0}}) is None
    assert late_release_shares({}) is None


def test_the_timing_check_names_where_late_releases_lost_their_time() -> None:
    timing = EmulatorTiming(release_late_us_mean=40.0, release_late_us_p50=1.0,
                            release_late_us_p99=1729.0, spacing_error_us_p99=1454.0)  # fmt: skip
    check = _emulator_timing(timing, COUNTERS)
    assert not check.ok
    assert check.detail.endswith(
        "its late releases (over 100 us) lost their time 81% asleep past it, 14% waiting for a "
        "CPU, 5% in its own loop"
    )
    # Logs written before the emulator reported its threshold read without it.
    older = {**COUNTERS, "late_causes": {k: v for k, v in COUNTERS["late_causes"].items()
                                         if k != "above_us"}}  # fmt: skip
    assert "its late releases lost their time 81% asleep" in _emulator_timing(timing, older).detail


def test_only_failed_load_sensitive_checks_are_spoiled_by_load() -> None:
    checks = [
        Check(name="emulator_timing", ok=False, detail=""),
        Check(name="host_cpu", ok=True, detail=""),
        Check(name="rate", ok=False, detail=""),
    ]
    assert [c.name for c in spoiled_by_load(checks)] == ["emulator_timing"]
