"""The emulator's timing check explains itself: where its late releases lost their time. A
sender whose ssthresh left the range controllers return fails the controller check."""

from __future__ import annotations

import pytest

from ccbench.analysis.checks import (
    _emulator_timing,
    controller_state_check,
    late_release_shares,
    spoiled_by_load,
)
from ccbench.analysis.logs import FlowLogs, trace_by_flow
from ccbench.analysis.queue import EmulatorTiming
from schemas import Check, ExperimentSpec

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


def _dumbbell(*flows: dict[str, str]) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "name": "controller-state",
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbit", "delay": "20ms"}},
        "flows": list(flows),
        "duration": "10s",
    })  # fmt: skip


def _info(ts: float, ssthresh: int | None, invalid: bool = False) -> dict[str, object]:
    sample: dict[str, object] = {"ts": ts, "type": "tcp_info", "cwnd_pkts": 10,
                                 "ssthresh_pkts": ssthresh}  # fmt: skip
    if invalid:
        sample["ssthresh_invalid"] = True
    return sample


NO_TRACE: list[list[dict[str, object]]] = [[], []]


def test_an_impossible_ssthresh_fails_the_controller_check_and_names_the_flow() -> None:
    spec = _dumbbell({"algorithm": "reno"}, {"algorithm": "aaimd", "runtime": "bpf"})
    clean = [[_info(100.0, None), _info(101.0, 12)], [_info(100.0, 8)]]
    check = controller_state_check(spec, clean, NO_TRACE, t0=100.0)
    assert check is not None and check.ok, check
    # Flow 1's sender later held the stale word measured on this kernel (0x81104110).
    runaway = [clean[0], [_info(100.0, 8), _info(103.25, None, invalid=True),
                          _info(103.5, None, invalid=True)]]  # fmt: skip
    check = controller_state_check(spec, runaway, NO_TRACE, t0=100.0)
    assert check is not None and not check.ok
    assert check.detail.endswith(": flow 1 from 3.2 s")
    # The flow's BPF state trace alone is enough, from its earliest flagged sample.
    sample = {"ts": 104.0, "saddr": "10.1.2.1", "sport": 40001, "event": "round",
              "ssthresh_pkts": None, "ssthresh_invalid": True}  # fmt: skip
    check = controller_state_check(spec, clean, [[], [sample]], t0=100.0)
    assert check is not None and not check.ok
    assert check.detail.endswith(": flow 1 from 4.0 s")
    check = controller_state_check(spec, runaway, [[], [sample]], t0=100.0)
    assert check is not None and check.detail.endswith(": flow 1 from 3.2 s")


def test_the_state_trace_is_split_by_each_flows_sender_address() -> None:
    senders = [FlowLogs.of([{"type": "summary", "local": "10.1.1.1:40000"}], []),
               FlowLogs.of([], []),  # a sender that reported no address
               FlowLogs.of([{"type": "summary", "local": "10.1.3.1:40002"}], [])]  # fmt: skip
    trace = [{"saddr": "10.1.3.1", "sport": 40002, "seq": 0},
             {"saddr": "10.1.1.1", "sport": 40000, "seq": 1},
             {"saddr": "10.1.1.1", "sport": 40009, "seq": 2},  # another socket
             {"saddr": "10.1.3.1", "sport": 40002, "seq": 3}]  # fmt: skip
    per_flow = trace_by_flow(senders, trace)
    assert [[s["seq"] for s in samples] for samples in per_flow] == [[1], [], [0, 3]]


def test_userspace_flows_have_no_controller_check() -> None:
    spec = _dumbbell({"algorithm": "reno", "agent": "userspace"})
    assert controller_state_check(spec, [[_info(0.0, None, invalid=True)]], [[]], 0.0) is None
