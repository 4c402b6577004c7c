"""ccbench's userspace transport inside Mininet runs (`agent: userspace`): its flows run beside
kernel flows through the emulated bottleneck, deliver every byte exactly once, and report the
same columns as kernel flows plus their controller's state; traffic models reach both agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ccbench.analysis.run import RunAnalysis, analyze_run
from ccbench.settings import get_settings
from schemas import ExperimentSpec
from schemas.algorithms import BPF_ALGORITHMS, USERSPACE_ALGORITHMS, Algorithm
from tests.hoststate import HostState
from workers import bpf
from workers.planning import plan_for_spec
from workers.testbeds.mininet.runner import MininetTestbed


def spec(flows: list[dict[str, Any]], rate: str, buffer: str, duration: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "userspace-test",
        "seed": 11,
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {"rate": rate, "delay": "20ms", "buffer": buffer},
        },
        "flows": flows,
        "duration": duration,
        "measurement": {"skip_start": "2s"},
    }


def run(raw: dict[str, Any], run_dir: Path, run_id: str) -> tuple[ExperimentSpec, RunAnalysis]:
    experiment = ExperimentSpec.model_validate(raw)
    plan = plan_for_spec(experiment, run_id=run_id, out_dir=run_dir, settings=get_settings())
    result = MininetTestbed().run(
        plan, lambda e: None, lambda: False, deadline_s=experiment.duration + 60
    )
    assert result.status == "done", result.describe()
    return experiment, analyze_run(run_dir, experiment)


def lines(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == kind]


@pytest.mark.root
def test_userspace_reno_beside_kernel_reno_delivers_every_byte(tmp_path: Path) -> None:
    before = HostState.capture()
    flows = [{"algorithm": "reno", "agent": "userspace"}, {"algorithm": "reno"}]
    experiment, analysis = run(spec(flows, "10Mbit", "1bdp", "12s"), tmp_path, "us-reno")
    user, kernel = analysis.flows
    assert user.goodput_bps is not None and kernel.goodput_bps is not None
    total = user.goodput_bps + kernel.goodput_bps
    print(f"goodput: userspace reno {user.goodput_bps / 1e6:.2f}, kernel reno "
          f"{kernel.goodput_bps / 1e6:.2f} Mbit/s, utilization "
          f"{analysis.summary.aggregate.utilization:.3f}")  # fmt: skip
    assert total > 0.9 * 10e6 * 1448 / 1500
    # Two Renos share the link: neither starves the other.
    assert 0.5 < user.goodput_bps / kernel.goodput_bps < 2.0
    [close] = lines(tmp_path / "flow-0.recv.jsonl", "close")
    assert close["integrity"] == "ok" and close["duplicates"] >= 0
    [summary] = lines(tmp_path / "flow-0.send.jsonl", "summary")
    assert summary["runtime"] == "userspace" and summary["cc"] == "reno"
    assert close["total_bytes"] == summary["bytes_acked"]
    # The transport's interval lines fill the same series as tcp_info.
    series = analysis.series["flow-0.tcp_info"]
    assert len(series["t_s"]) > 100 and max(v for v in series["cwnd_pkts"] if v) > 10
    assert user.rtt_mean_s is not None and 0.04 <= user.rtt_mean_s < 0.2
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_tfrc_against_tcp_with_its_state_and_friendliness(tmp_path: Path) -> None:
    """Seed 004's set-up in small: one TFRC flow (candidate, rounds of 1 s) and one NewReno
    flow (reference) through 1.5 Mbit/s; the run reports F and E, and TFRC's own state."""
    before = HostState.capture()
    flows = [
        {"algorithm": "tfrc", "agent": "userspace", "role": "candidate", "params": {"m": 1}},
        {"algorithm": "newreno", "agent": "userspace", "role": "reference"},
    ]
    _, analysis = run(spec(flows, "1.5Mbit", "20pkt", "15s"), tmp_path, "us-tfrc")
    aggregate = analysis.summary.aggregate
    print(f"tfrc vs newreno: F {aggregate.friendliness_ratio}, E {aggregate.equivalence_ratio}, "
          f"utilization {aggregate.utilization}")  # fmt: skip
    # Not seed 004's F ~ 1 (Fig. 2(a): 10-50 flows for 1000 s): one paced TFRC flow beside one
    # ACK-clocked TCP at a 20-packet drop-tail buffer loses packets at the time fraction the
    # buffer is full (~10%), while TCP loses ~0.5% of its packets, so the formula (Appendix)
    # gives TFRC a small share. Measured in 5 runs of this set-up: F 0.05-0.19 (earlier
    # 0.04-0.28); below 0.02 TFRC starves, above 1 it would take more than TCP.
    assert aggregate.friendliness_ratio is not None
    assert 0.02 < aggregate.friendliness_ratio < 1.0
    assert aggregate.equivalence_ratio == pytest.approx(
        max(aggregate.friendliness_ratio, 1 / aggregate.friendliness_ratio)
    )
    state = analysis.series["flow-0.cc_state"]
    assert {"rate_bps", "loss_p"} <= set(state)
    rates = [r for r in state["rate_bps"] if r]
    assert len(set(rates)) > 3  # the rate was recomputed round after round
    [close] = lines(tmp_path / "flow-0.recv.jsonl", "close")
    # TFRC does not retransmit: integrity means no byte arrived twice or corrupted.
    assert close["integrity"] == "ok"
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_traffic_models_reach_both_agents(tmp_path: Path) -> None:
    """An unresponsive 2 Mbit/s UDP CBR flow, a kernel on/off flow and a fixed-size kernel
    transfer share a 10 Mbit/s link: CBR delivers its rate, the fixed transfer its size."""
    before = HostState.capture()
    flows = [
        {"algorithm": "reno", "agent": "userspace", "traffic": {"model": "cbr", "rate": "2Mbit"}},
        {"algorithm": "cubic", "traffic": {"model": "on_off", "shape": 2.5, "on_mean": "200ms",
                                           "off_mean": "200ms", "rate": "3Mbit"}},
        {"algorithm": "reno", "traffic": {"model": "fixed", "size": "500KB"}},
    ]  # fmt: skip
    _, analysis = run(spec(flows, "10Mbit", "1bdp", "10s"), tmp_path, "us-traffic")
    cbr, on_off, fixed = analysis.flows
    assert cbr.algorithm == "cbr-udp"  # unresponsive: no controller, whatever the spec named
    assert cbr.goodput_bps == pytest.approx(2e6, rel=0.05)
    [offered] = lines(tmp_path / "flow-1.send.jsonl", "summary")
    assert offered["traffic"] == "onoff" and offered["bytes_offered"] > 0
    assert on_off.bytes_received == pytest.approx(offered["bytes_offered"], abs=200_000)
    assert fixed.bytes_received == 500_000
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
@pytest.mark.parametrize("algorithm", sorted(a.value for a in USERSPACE_ALGORITHMS))
def test_every_userspace_algorithm_through_the_emulated_bottleneck(
    algorithm: str, tmp_path: Path
) -> None:
    """Each controller drives a real flow through the emulator: every byte arrives exactly
    once, the link carries data, and the controller's state is reported under the same names
    as its BPF version's trace (fixed-point `_x256` suffixes aside)."""
    before = HostState.capture()
    flow: dict[str, Any] = {"algorithm": algorithm, "agent": "userspace"}
    if algorithm == "tfrc":
        flow["params"] = {"m": 0.5, "r0": 200}  # short rounds: the run lasts seconds
    raw = spec([flow], "10Mbit", "1bdp", "5s")
    raw["measurement"] = {"skip_start": "1s"}
    _, analysis = run(raw, tmp_path, f"us-{algorithm}")
    [result] = analysis.flows
    [close] = lines(tmp_path / "flow-0.recv.jsonl", "close")
    [summary] = lines(tmp_path / "flow-0.send.jsonl", "summary")
    print(f"{algorithm}: goodput {(result.goodput_bps or 0) / 1e6:.2f} Mbit/s, "
          f"retransmits {summary['retransmits']}")  # fmt: skip
    assert close["integrity"] == "ok", close
    # Paced Westwood may starve itself on its own first estimate (seed 003 §III-C.1).
    floor = 0.1e6 if algorithm == "paced_westwood" else 0.5e6
    assert result.goodput_bps is not None and result.goodput_bps > floor
    if algorithm in ("reno", "newreno", "tahoe", "dual", "aaimd"):
        assert result.goodput_bps > 0.6 * 10e6 * 1448 / 1500
    state = analysis.series.get("flow-0.cc_state", {})
    if Algorithm(algorithm) in BPF_ALGORITHMS:
        bpf_names = {f.removesuffix("_x256") for f in bpf.state_fields(bpf.object_path(algorithm))}
        assert bpf_names <= set(state), (bpf_names, sorted(state))
    elif algorithm in ("arb", "tfrc"):
        assert len(state) > 1, sorted(state)  # t_s and the controller's own variables
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_every_byte_arrives_exactly_once_under_random_loss(tmp_path: Path) -> None:
    """5% random loss on the bottleneck (both directions, so ACKs are lost too): Tahoe, Reno
    and NewReno recovery all deliver every byte exactly once."""
    before = HostState.capture()
    flows = [{"algorithm": a, "agent": "userspace"} for a in ("tahoe", "reno", "newreno")]
    raw = spec(flows, "10Mbit", "1bdp", "6s")
    raw["topology"]["bottleneck"]["loss"] = 0.05
    _, analysis = run(raw, tmp_path, "us-loss")
    for i, result in enumerate(analysis.flows):
        [close] = lines(tmp_path / f"flow-{i}.recv.jsonl", "close")
        [summary] = lines(tmp_path / f"flow-{i}.send.jsonl", "summary")
        print(f"{result.algorithm}: {close['total_bytes']} bytes, retransmits "
              f"{summary['retransmits']}, duplicates {close['duplicates']}")  # fmt: skip
        assert close["integrity"] == "ok", close
        assert summary["retransmits"] > 0  # losses happened and were repaired
        assert close["total_bytes"] == summary["bytes_acked"] > 0
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_the_receive_window_caps_a_flow_below_the_path(tmp_path: Path) -> None:
    """`transport.receive_window` (seed 003's window cap of 100 packets, ns-2's `window_`): a
    Reno flow with room for 33 packets in the pipe and 33 in the queue keeps at most 10 out,
    so it sends 10 packets per round trip and never queues; its controller's window stops
    there too (a loss would halve what was in flight, as ns-2 halves min(cwnd_, window_))."""
    before = HostState.capture()
    flows = [{"algorithm": "reno", "agent": "userspace", "transport": {"receive_window": 10}}]
    _, analysis = run(spec(flows, "10Mbit", "1bdp", "8s"), tmp_path, "us-rwnd")
    [flow] = analysis.flows
    transport = lines(tmp_path / "flow-0.send.jsonl", "transport")
    most_out = max(r["in_flight_pkts"] for r in transport)
    assert flow.goodput_bps is not None and flow.rtt_min_s is not None
    window_rate = 10 * 1448 * 8 / flow.rtt_min_s
    print(f"in flight at most {most_out} pkt; goodput {flow.goodput_bps / 1e6:.3f} Mbit/s, "
          f"10 packets per minimum RTT {window_rate / 1e6:.3f} Mbit/s; mean queue "
          f"{analysis.summary.aggregate.queue_mean_pkts} pkt")  # fmt: skip
    assert most_out <= 10
    assert max(r["cwnd_pkts"] for r in transport) == 10
    # Unlimited, Reno fills the 10 Mbit/s link (9.65 of payload); here it gets 10 packets a
    # round trip (2.9 Mbit/s at 40 ms).
    assert 0.85 * window_rate < flow.goodput_bps < 1.05 * window_rate
    assert analysis.summary.aggregate.queue_mean_pkts is not None
    assert analysis.summary.aggregate.queue_mean_pkts < 1.0
    assert HostState.capture().leftovers_since(before) == []
