"""A run's analysis over hand-written agent logs (the formats of docs/contracts.md): flows that
start and stop at different times. Each case is computed by hand from the bytes the logs hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ccbench import rundir
from ccbench.analysis.run import RunAnalysis, analyze_run
from schemas import ExperimentSpec

T0 = 1_800_000_000.0  # the run's common start (Unix s)
STEP = 0.1  # the agents' sampling interval in these logs
SRTT = 0.05


def _spec(flows: list[dict[str, Any]], duration: float, **measurement: Any) -> ExperimentSpec:
    """A real path between hosts (nothing emulated): the analysis reads only the agents'
    logs, so every number below comes from the bytes they report."""
    return ExperimentSpec.model_validate(
        {
            "name": "windows",
            "testbed": {"kind": "hosts"},
            "topology": {"kind": "path", "rate": "5Mbit"},
            "flows": [{"algorithm": "reno", "src": "a", "dst": "b", **f} for f in flows],
            "duration": f"{duration:g}s",
            "measurement": {"interval": "1s", **measurement},
            "seed": 1,
        }
    )


def _write_flow(run_dir: Path, index: int, rates: list[tuple[float, float, float]]) -> None:
    """Flow `index`'s sender and receiver logs: `rates` are (from, to, bit/s) in seconds after
    the run's start; the sender sends what the receiver gets (no loss)."""
    sent = received = 0.0
    send_lines: list[dict[str, Any]] = []
    recv_lines: list[dict[str, Any]] = []
    start, end = rates[0][0], rates[-1][1]
    steps = round((end - start) / STEP)
    for k in range(1, steps + 1):
        t = start + k * STEP
        rate = next(r for a, b, r in rates if a < t - STEP / 2 < b)
        chunk = rate * STEP / 8
        sent += chunk
        received += chunk
        send_lines.append(
            {"ts": T0 + t, "type": "tcp_info", "flow": index, "cwnd_pkts": 10, "srtt_s": SRTT,
             "min_rtt_s": 0.04, "retransmits": 0, "bytes_sent": sent, "bytes_acked": sent}
        )  # fmt: skip
        recv_lines.append(
            {"ts": T0 + t, "type": "recv", "conn": 0, "bytes": chunk, "total_bytes": received}
        )
    send_lines.append(
        {"ts": T0 + end, "type": "summary", "flow": index, "cc": "reno", "start_ts": T0 + start,
         "end_ts": T0 + end, "bytes_sent": sent, "bytes_acked": sent, "retransmits": 0}
    )  # fmt: skip
    for name, lines in ((rundir.sender_log(index), send_lines),
                        (rundir.receiver_log(index), recv_lines)):  # fmt: skip
        (run_dir / name).write_text("".join(json.dumps(line) + "\n" for line in lines))


def _analyze(
    run_dir: Path, spec: ExperimentSpec, rates: list[list[tuple[float, float, float]]]
) -> RunAnalysis:
    for i, flow_rates in enumerate(rates):
        _write_flow(run_dir, i, flow_rates)
    offsets = {str(i): 0.0 for i in range(len(rates))}
    (run_dir / rundir.PROVENANCE).write_text(
        json.dumps({"testbed": "hosts", "receiver_clock_offset_s": offsets})
    )
    return analyze_run(run_dir, spec)


def test_staggered_flows_share_the_link_over_the_run_window(tmp_path: Path) -> None:
    # A 5 Mbit/s path for 60 s: flow 0 alone for 30 s, then flow 1 joins; after 2 s of
    # 4 and 1 Mbit/s each gets half.
    spec = _spec([{}, {"start": "30s"}], 60)
    analysis = _analyze(
        tmp_path,
        spec,
        [[(0, 30, 5e6), (30, 32, 4e6), (32, 60, 2.5e6)], [(30, 32, 1e6), (32, 60, 2.5e6)]],
    )
    flow0, flow1 = analysis.flows
    # Each flow's own metrics are over its own window: 0-60 s and 30-60 s; flow 1's byte
    # counter starts at 0 with it, so its first 0.1 s counts too.
    assert flow0.goodput_bps == pytest.approx((150e6 + 8e6 + 70e6) / 60, rel=1e-6)
    assert flow1.goodput_bps == pytest.approx((2e6 + 70e6) / 30, rel=1e-6)
    assert flow1.throughput_bps == pytest.approx((2e6 + 70e6) / 30, rel=1e-6)
    aggregate = analysis.summary.aggregate
    # Bytes over the run's window: 150 Mbit + 75 Mbit + 75 Mbit in 60 s is the link's 5 Mbit/s
    # (the sum of the flows' rates, 6.25 Mbit/s, is more than the link can carry).
    assert aggregate.goodput_bps == pytest.approx(5e6, rel=1e-3)
    assert aggregate.throughput_bps == pytest.approx(5e6, rel=1e-3)
    assert aggregate.power == pytest.approx(5e6 / SRTT, rel=1e-3)
    assert aggregate.utilization == pytest.approx(1.0, rel=1e-3)
    # Jain's index of the shares while both flows are active (30-60 s): 78 and 72 Mbit.
    # Over each flow's own window it would be J(3.8, 2.4) = 0.95.
    assert aggregate.jain_index == pytest.approx(150**2 / (2 * (78**2 + 72**2)))
    # The flows settle 2 s after flow 1 joined (not 32 s after the run's start).
    assert aggregate.convergence_time_s == pytest.approx(2.0)


def test_skip_start_and_flows_that_stop_early(tmp_path: Path) -> None:
    # 40 s, the first 10 s skipped. Flow 0 sends 4 Mbit/s for 20 s and stops; flow 1 sends
    # 1 Mbit/s from 0 to 20 s, then 5 Mbit/s alone.
    spec = _spec([{"duration": "20s"}, {}], 40, skip_start="10s")
    analysis = _analyze(
        tmp_path,
        spec,
        [[(0, 20, 4e6)], [(0, 20, 1e6), (20, 40, 5e6)]],
    )
    aggregate = analysis.summary.aggregate
    # Window 10-40 s: 10 s x 5 Mbit/s + 20 s x 5 Mbit/s = 150 Mbit in 30 s.
    assert aggregate.goodput_bps == pytest.approx(5e6, rel=1e-3)
    # Both flows are active together from 10 to 20 s only: shares 4 and 1 Mbit/s.
    assert aggregate.jain_index == pytest.approx(25 / (2 * 17))


def test_flows_that_never_run_together_have_no_shares(tmp_path: Path) -> None:
    spec = _spec([{"duration": "10s"}, {"start": "10s"}], 20)
    analysis = _analyze(tmp_path, spec, [[(0, 10, 5e6)], [(10, 20, 5e6)]])
    aggregate = analysis.summary.aggregate
    assert aggregate.goodput_bps == pytest.approx(5e6, rel=1e-3)
    assert aggregate.jain_index is None


def test_friendliness_compares_flows_while_they_compete(tmp_path: Path) -> None:
    # A reference TCP flow alone at 5 Mbit/s for 10 s, then a candidate joins and takes
    # 1 of the 5 Mbit/s for the last 10 s: F = 1 / 4 while they compete.
    spec = _spec([{"role": "reference"}, {"role": "candidate", "start": "10s"}], 20)
    analysis = _analyze(tmp_path, spec, [[(0, 10, 5e6), (10, 20, 4e6)], [(10, 20, 1e6)]])
    aggregate = analysis.summary.aggregate
    assert aggregate.friendliness_ratio == pytest.approx(0.25, rel=1e-3)
    assert aggregate.equivalence_ratio == pytest.approx(4.0, rel=1e-3)


def test_fc_and_normalized_fairness_compare_the_same_window(tmp_path: Path) -> None:
    # Two candidates from 0 s (3 and 1 Mbit/s while alone), a reference joins at 10 s; then
    # 2, 1 and 2 Mbit/s. FC and F compare 10-20 s: FC = 2, F = 1.5 / 2.
    spec = _spec(
        [{"role": "candidate"}, {"role": "candidate"}, {"role": "reference", "start": "10s"}],
        20,
    )
    analysis = _analyze(
        tmp_path,
        spec,
        [[(0, 10, 3e6), (10, 20, 2e6)], [(0, 10, 1e6), (10, 20, 1e6)], [(10, 20, 2e6)]],
    )
    aggregate = analysis.summary.aggregate
    assert aggregate.fc_ratio == pytest.approx(2.0, rel=1e-3)
    assert aggregate.friendliness_ratio == pytest.approx(0.75, rel=1e-3)
    # Equal RTTs: normalized fairness is Jain's index of (2, 1, 2).
    assert aggregate.normalized_fairness == pytest.approx(25 / 27, rel=1e-3)
    assert aggregate.jain_index == pytest.approx(25 / 27, rel=1e-3)
