"""The Mininet sandbox on its own (no database): byte buffers, capability errors, cleanup."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from ccbench.analysis.packetlog import read_packet_log, sender_key
from ccbench.analysis.run import RunAnalysis, analyze_run
from ccbench.settings import REPO_ROOT, get_settings
from schemas import ExperimentSpec
from tests.fidelity import assert_checks_hold
from tests.hoststate import HostState
from workers.planning import plan_for_spec
from workers.testbeds.base import TestbedResult
from workers.testbeds.mininet.probe import probe_host
from workers.testbeds.mininet.runner import MininetTestbed

pytestmark = pytest.mark.root

EXAMPLE = yaml.safe_load((REPO_ROOT / "schemas/examples/dumbbell-reno-vs-cubic.yaml").read_text())


def spec_with(**changes: Any) -> ExperimentSpec:
    raw = copy.deepcopy(EXAMPLE)
    raw["duration"] = "4s"
    raw["measurement"] = {"skip_start": "1s"}
    for path, value in changes.items():
        target = raw
        *parents, leaf = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[leaf] = value
    return ExperimentSpec.model_validate(raw)


def two_second_spec(flows: list[dict[str, Any]]) -> ExperimentSpec:
    """The example with these flows, run for 2 s and measured whole."""
    return spec_with(**{"duration": "2s", "measurement": {}, "flows": flows})


def run(spec: ExperimentSpec, run_dir: Path) -> tuple[TestbedResult, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    plan = plan_for_spec(spec, run_id="sandbox-test", out_dir=run_dir, settings=get_settings())
    result = MininetTestbed().run(plan, events=events.append, cancel=lambda: False, deadline_s=60)
    return result, events


def run_example(name: str, run_dir: Path) -> tuple[ExperimentSpec, RunAnalysis]:
    """One of schemas/examples, shortened to 5 s (2 s skipped), run and analysed."""
    raw = yaml.safe_load((REPO_ROOT / "schemas/examples" / name).read_text())
    raw.update(duration="5s", measurement={"skip_start": "2s"})
    spec = ExperimentSpec.model_validate(raw)
    result, _ = run(spec, run_dir)
    assert result.status == "done", result.describe()
    return spec, analyze_run(run_dir, spec)


def bytes_read_by_the_receivers(run_dir: Path, until_s: float) -> int:
    """Bytes every flow's receiver read from the flows' common start until `until_s` after it."""
    start = json.loads((run_dir / "provenance.json").read_text())["start_ts"]
    return sum(
        record["bytes"]
        for log in run_dir.glob("flow-*.recv.jsonl")
        for record in map(json.loads, log.open())
        if record.get("type") == "recv" and record["ts"] - start <= until_s
    )


def flows_through_each_link(run_dir: Path, spec: ExperimentSpec) -> dict[int, set[int]]:
    """For every emulated link, the flows whose data packets its emulator logged, matched by
    the sender's address and port as each flow's agent reported them."""
    senders: dict[int, int] = {}
    for flow in range(len(spec.flows)):
        records = [json.loads(line) for line in (run_dir / f"flow-{flow}.send.jsonl").open()]
        summary = next(r for r in records if r["type"] == "summary")
        address, _, port = summary["local"].rpartition(":")
        senders[sender_key(address, int(port))] = flow
    seen: dict[int, set[int]] = {}
    for link in range(len(spec.links)):
        _, log = read_packet_log(run_dir / f"link-{link}-data.bin")
        data = np.asarray(log)
        data = data[data["len"] > 1000]
        keys = set(((data["src"].astype(np.uint64) << np.uint64(16)) | data["sport"]).tolist())
        assert keys <= set(senders), (link, keys - set(senders))  # no stranger's packets
        seen[link] = {senders[key] for key in keys}
    return seen


def test_tc_byte_buffer_is_never_exceeded(tmp_path: Path) -> None:
    before = HostState.capture()
    spec = spec_with(
        **{"topology.bottleneck.buffer": "30KB", "topology.bottleneck.link_mechanism": "tc"}
    )
    result, events = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    assert [e["phase"] for e in events if e["event"] == "phase"] == [
        "provisioning",
        "running",
        "collecting",
    ]
    assert any(e["event"] == "progress" for e in events)
    qdisc = [json.loads(line) for line in (tmp_path / "qdisc.jsonl").read_text().splitlines()]
    leaf = [q for q in qdisc if q["kind"] == "bfifo"]
    assert leaf and max(q["backlog_bytes"] for q in leaf) <= 30_000
    analysis = analyze_run(tmp_path, spec)
    checks = {c.name: c for c in analysis.summary.checks}
    assert checks["buffer"].ok and checks["delay"].ok, checks
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    applied = [c["cmd"] for c in provenance["commands"]]
    assert any("bfifo limit 30000" in c for c in applied)
    assert any("htb rate 10000000bit" in c for c in applied)
    assert provenance["agent_versions"]["ccbench-agent"].startswith("ccbench-agent ")
    assert HostState.capture().leftovers_since(before) == []


def test_missing_congestion_control_fails_clearly(tmp_path: Path) -> None:
    available = probe_host(in_private_netns=False)["congestion_controls"]
    if "vegas" in available:
        pytest.skip("this host has vegas")
    result, _ = run(spec_with(**{"flows.1.algorithm": "vegas"}), tmp_path)
    assert result.status == "error"
    assert "congestion control vegas is not available on this host" in (result.message or "")


def test_emulator_red_queue_from_the_packet_log(tmp_path: Path) -> None:
    before = HostState.capture()
    spec = spec_with(
        **{
            "topology.bottleneck.queue": "red",
            "topology.bottleneck.buffer": "100pkt",
            "topology.bottleneck.red": {"min_th": 5, "max_th": 15, "max_p": 0.1, "w_q": 0.02},
        }
    )
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert provenance["link_mechanism"] == "emulator"
    assert (
        "--aqm red --red-min-th 5.0 --red-max-th 15.0" in provenance["links"]["link 0"]["forward"]
    )
    analysis = analyze_run(tmp_path, spec)
    applied, aggregate = analysis.summary.applied, analysis.summary.aggregate
    assert applied.queue_source == "emulator_log"
    assert_checks_hold(analysis)
    # RED keeps the average queue between its thresholds, far below the 100-packet buffer.
    assert aggregate.queue_mean_pkts is not None and 3 < aggregate.queue_mean_pkts < 20
    assert aggregate.drops and aggregate.queue_max_pkts is not None
    assert aggregate.queue_max_pkts < 100
    stats = json.loads((tmp_path / "link-0-data.json").read_text())
    assert stats["dropped_red"] > 0 and stats["dropped_full"] == 0
    assert HostState.capture().leftovers_since(before) == []


def test_bottleneck_jitter_is_timed_against_each_packets_own_schedule(tmp_path: Path) -> None:
    """With jitter every packet has its own release time (departure + delay + its draw, never
    before the packet ahead): the emulator's timing check measures lateness against that, not
    against delay + jitter / 2, so a jittered link passes it."""
    before = HostState.capture()
    spec = spec_with(**{"topology.bottleneck.jitter": "4ms"})
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    analysis = analyze_run(tmp_path, spec)
    assert_checks_hold(analysis)
    _, log = read_packet_log(tmp_path / "link-0-data.bin")
    data = np.asarray(log)
    data = data[data["fate"] == 0]
    due = data["due_us"].astype(np.int64)
    held = due - data["departure_us"].astype(np.int64) - 20_000
    # Draws spread over [0, 4 ms] (more only behind a later-drawn packet ahead), never reordered.
    assert held.min() >= 0 and np.percentile(held, 10) < 1000 and np.percentile(held, 90) > 3000
    assert np.all(np.diff(due) >= 0)
    late = data["release_us"].astype(np.int64) - due
    assert late.min() >= 0
    # The check's p99 may fail on the host's stalls (assert_checks_hold), its median may not.
    assert np.median(late) < 200, np.median(late)
    # Measured against delay + jitter / 2 instead, about half the packets would count as more
    # than 1 ms late or early.
    against_mean = data["release_us"].astype(np.int64) - data["departure_us"] - 20_000 - 2000
    assert np.mean(np.abs(against_mean) > 1000) > 0.25
    stats = json.loads((tmp_path / "link-0-data.json").read_text())
    assert stats["config"]["jitter_us"] == 4000
    assert HostState.capture().leftovers_since(before) == []


def test_demanding_netem_without_netem_fails_clearly(tmp_path: Path) -> None:
    spec = spec_with(
        **{
            "topology.bottleneck.link_mechanism": "tc",
            "topology.bottleneck.delay_mechanism": "netem",
        }
    )
    result, _ = run(spec, tmp_path)
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    if provenance["capabilities"]["netem"]:
        assert result.status == "done", result.describe()
        assert provenance["delay_mechanism"] == "netem"
    else:
        assert result.status == "error"
        assert "this kernel has no netem" in (result.message or "")


def test_per_flow_access_delays_give_each_flow_its_rtt(tmp_path: Path) -> None:
    before = HostState.capture()
    spec = spec_with(
        **{"flows.1.access_delay": "15ms", "flows.0.role": "reference", "flows.1.role": "candidate"}
    )
    assert spec.base_rtt_s(0) == pytest.approx(0.040) and spec.base_rtt_s(1) == pytest.approx(0.070)
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    analysis = analyze_run(tmp_path, spec)
    checks = {c.name: c for c in analysis.summary.checks}
    assert checks["flow_rtts"].ok and checks["delay"].ok, checks
    rtts = [f.rtt_min_s for f in analysis.flows]
    assert rtts[0] == pytest.approx(0.040, rel=0.05) and rtts[1] == pytest.approx(0.070, rel=0.05)
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert any("mangle -A PREROUTING -i r1-s2" in c["cmd"] for c in provenance["commands"])
    # Friendliness of the candidate against the reference, and fairness normalized by RTT.
    aggregate = analysis.summary.aggregate
    goodputs = [f.goodput_bps or 0.0 for f in analysis.flows]
    assert aggregate.friendliness_ratio == pytest.approx(goodputs[1] / goodputs[0])
    assert aggregate.equivalence_ratio is not None and aggregate.equivalence_ratio >= 1
    assert aggregate.normalized_fairness is not None and 0.5 <= aggregate.normalized_fairness <= 1
    assert len(analysis.series["fairness"]["jain_index"]) == 4
    assert HostState.capture().leftovers_since(before) == []


def test_send_jitter_holds_each_senders_packets_not_its_acks(tmp_path: Path) -> None:
    """Seed 004 section III-A's random delay before each packet is sent, for a kernel TCP
    flow (uniform, with an access delay) and a userspace flow (exponential): every packet of
    the sender is held for a fresh draw, never reordered; the ACKs only get the access
    delay."""
    before = HostState.capture()
    spec = ExperimentSpec.model_validate(
        {
            "name": "send-jitter",
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {"rate": "10Mbit", "delay": "20ms", "buffer": "1bdp"},
            },
            "flows": [
                {"algorithm": "reno", "access_delay": "5ms",
                 "send_jitter": {"distribution": "uniform", "max": "4ms"}},
                {"algorithm": "reno", "agent": "userspace",
                 "traffic": {"model": "cbr", "rate": "1Mbit"},
                 "send_jitter": {"distribution": "exponential", "mean": "1ms"}},
            ],
            "duration": "5s",
            "measurement": {"skip_start": "1s"},
            "seed": 3,
        }
    )  # fmt: skip
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    analysis = analyze_run(tmp_path, spec)
    checks = {c.name: c for c in analysis.summary.checks}
    assert_checks_hold(analysis)
    assert "flow 0: uniform jitter of mean 2 ms" in checks["send_jitter"].detail

    def held_us(flow: int, delay_us: int) -> np.ndarray:
        """How long the access link held each of the flow's data packets beyond its delay."""
        header, log = read_packet_log(tmp_path / f"link-access-{flow}-data.bin")
        assert header["delay_us"] == delay_us
        data = np.asarray(log)
        data = data[(data["len"] > 1000) & (data["fate"] == 0)]
        assert len(data) > 300
        releases = data["release_us"].astype(np.int64)
        assert np.all(np.diff(data["due_us"].astype(np.int64)) >= 0)  # never reordered
        assert np.all(releases >= data["due_us"])
        return (data["due_us"].astype(np.int64) - data["arrival_us"] - delay_us).astype(float)

    # Uniform in [0, 4 ms]: a packet held back for the one before it waits at most the same.
    uniform = held_us(0, 5000)
    assert uniform.min() >= 0 and uniform.max() <= 4000
    assert 1800 < uniform.mean() < 4000 and np.percentile(uniform, 10) < 1000
    # Exponential, 1 ms mean: the CBR flow's packets are 11.6 ms apart, so none waits for the
    # one before it and the held times are the draws (P(X > 3 ms) = e^-3 = 5%).
    exponential = held_us(1, 0)
    assert exponential.mean() == pytest.approx(1000, rel=0.2)
    assert 0.01 < np.mean(exponential > 3000) < 0.1
    # The ACKs towards flow 0's sender get its access delay only; flow 1 has no ACK line.
    ack = json.loads((tmp_path / "link-access-0-ack.json").read_text())["config"]
    assert (ack["delay_us"], ack["jitter_us"]) == (5000, 0)
    assert not (tmp_path / "link-access-1-ack.json").exists()
    # Flow 0's minimum RTT is its base RTT (50 ms, its access delay included) plus the smallest
    # hold among its RTT samples, less than the largest draw (4 ms): 51.6-52.6 ms in 4 runs.
    assert analysis.flows[0].rtt_min_s is not None
    assert 0.050 <= analysis.flows[0].rtt_min_s < 0.054, analysis.flows[0].rtt_min_s
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert "--arrival-time read" in provenance["links"]["link 0"]["forward"]
    # Every emulator runs as a real-time task; the timing check says how it was scheduled.
    for name, counters in provenance["emulator_counters"].items():
        assert counters["scheduling"] == {"policy": "fifo", "priority": 10}, name
    assert "scheduled fifo 10; its sleeps ended" in checks["emulator_timing"].detail
    commands = [c["cmd"] for c in provenance["commands"]]
    assert sum("mangle -A PREROUTING -i r1-s" in c for c in commands) == 2
    assert sum("mangle -A POSTROUTING -o r1-s" in c for c in commands) == 1
    assert HostState.capture().leftovers_since(before) == []


def test_initial_window_for_kernel_and_userspace_flows(tmp_path: Path) -> None:
    """Both runtimes start at the spec's initial window: Linux's 10 by default, 3 when asked
    (kernel flows through their sender's route, userspace flows through their agent)."""
    before = HostState.capture()
    spec = two_second_spec(
        [
            {"algorithm": "reno"},
            {"algorithm": "reno", "initial_window": 3},
            {"algorithm": "reno", "agent": "userspace"},
            {"algorithm": "bfa", "agent": "userspace", "initial_window": 3},
        ]
    )
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    first_cwnd = []
    for i in range(4):
        samples = [json.loads(line) for line in (tmp_path / f"flow-{i}.send.jsonl").open()]
        first_cwnd.append(next(s["cwnd_pkts"] for s in samples if s.get("cwnd_pkts")))
    # The first sample comes 10 ms into the flow, before any ACK of a 40 ms RTT.
    assert first_cwnd == [10, 3, 10, 3]
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    commands = [c["cmd"] for c in provenance["commands"]]
    assert any("route change default via 10.1.2.254 initcwnd 3" in c for c in commands)
    assert HostState.capture().leftovers_since(before) == []


def test_paced_bpf_senders_send_one_segment_per_skb(tmp_path: Path) -> None:
    """A flow whose BPF controller paces every segment gets gso_max_segs 1 on its sender's
    interface (TCP builds multi-segment skbs even with offloads off, and the kernel now and then
    sizes them past the controller's min_tso_segs); a Reno flow beside it and the same
    algorithm in userspace keep the kernel's default."""
    before = HostState.capture()
    spec = two_second_spec(
        [
            {"algorithm": "reno"},
            {"algorithm": "paced_newreno", "runtime": "bpf"},
            {"algorithm": "paced_westwood", "agent": "userspace"},
        ]
    )
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    capped = [c["cmd"] for c in provenance["commands"] if "gso_max_segs 1" in c["cmd"]]
    assert len(capped) == 1 and "link set s2-" in capped[0], capped
    assert HostState.capture().leftovers_since(before) == []


def test_reverse_path_flow_shares_the_reverse_queue(tmp_path: Path) -> None:
    before = HostState.capture()
    spec = spec_with(**{"flows.1.direction": "reverse"})
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    analysis = analyze_run(tmp_path, spec)
    forward, reverse = analysis.flows
    assert (forward.direction, reverse.direction) == ("forward", "reverse")
    # Each direction has its own 10 Mbit/s queue: together they carry more than one link
    # could (each flow is slowed by the other's ACKs waiting behind its data).
    assert forward.goodput_bps and reverse.goodput_bps
    assert min(forward.goodput_bps, reverse.goodput_bps) > 4e6
    assert forward.goodput_bps + reverse.goodput_bps > 12e6
    # The reverse queue is rate-limited and logged; the forward flow's ACKs wait in it.
    stats = json.loads((tmp_path / "link-0-ack.json").read_text())
    assert stats["config"]["rate"] == {"bps": 10_000_000} and (tmp_path / "link-0-ack.bin").exists()
    assert analysis.summary.aggregate.goodput_bps == forward.goodput_bps
    assert HostState.capture().leftovers_since(before) == []


def test_two_bottleneck_chain_with_cross_traffic(tmp_path: Path) -> None:
    """Seed 001 Fig. 13: the through flow is held to hop 1's 40 Mbit/s, the cross flow takes
    what is left of hop 2's 100 Mbit/s, and each flow sees its own path's RTT."""
    before = HostState.capture()
    spec, analysis = run_example("two-bottleneck.yaml", tmp_path)
    checks = {c.name: c for c in analysis.summary.checks}
    assert checks["flow_rtts"].ok and checks["delay"].ok, checks
    # Hop 1's 30-packet buffer (0.4 BDP) is not always backlogged for the 1 s the rate check
    # needs within the 3 s measured (not measurable once in CI, 2026-12-07); the rate it
    # measures must be right when it can, and the goodputs below bound both hops anyway.
    rate = checks["rate"]
    assert rate.ok or "rate not measurable" in rate.detail, rate
    through, cross = analysis.flows
    assert through.goodput_bps and cross.goodput_bps
    payload = 1448 / 1500
    # Hop 1 caps the through flow (its 30-packet buffer is 0.4 BDP: reno does not fill it);
    # hop 2 carries both, the cross flow taking most of what is left.
    assert 20e6 < through.goodput_bps <= 40e6 * payload * 1.01
    assert cross.goodput_bps > 40e6
    assert through.goodput_bps + cross.goodput_bps <= 100e6 * payload * 1.01
    assert analysis.summary.applied.rate_bps == 40e6  # aggregates describe the slowest link
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert set(provenance["links"]) == {"link 0", "link 1"}
    assert provenance["links"]["link 1"]["router"] == "r2"
    # The emulators' packet logs: hop 1 carried the through flow only, hop 2 both.
    assert flows_through_each_link(tmp_path, spec) == {0: {0}, 1: {0, 1}}
    assert HostState.capture().leftovers_since(before) == []


def test_parking_lot_wires_each_flow_through_its_hops(tmp_path: Path) -> None:
    """Seed 002's multi-hop network (R1-R4, the T1 hop R2-R3 the bottleneck): each flow's
    packets are in the logs of exactly the hops between its entry and exit routers, and the
    T1 hop's 1.5 Mbit/s is shared by all three flows."""
    before = HostState.capture()
    spec, analysis = run_example("parking-lot.yaml", tmp_path)
    assert flows_through_each_link(tmp_path, spec) == {0: {0, 2}, 1: {0, 1, 2}, 2: {0, 1}}
    checks = {c.name: c for c in analysis.summary.checks}
    assert checks["flow_rtts"].ok and checks["rate"].ok, checks
    # The rate check holds the T1 hop to 1.5 Mbit/s while backlogged; over the 3 s measured,
    # three Reno flows at a 104 ms RTT leave it idle now and then (0.91 of it used, measured).
    payload_bps = 1.5e6 * 1448 / 1500
    goodput = sum(f.goodput_bps or 0 for f in analysis.flows)
    assert goodput > 0.8 * payload_bps, goodput
    # Goodput counts bytes when the receiving application reads them, in order: bytes that
    # crossed the hop before the window but waited behind a loss for its retransmission are
    # read inside it. So over 3 s the flows' goodput may exceed the hop (by 4.8% once in CI,
    # 2026-12-07: one flow read 42 KB, 0.5 s of its share, at once 0.4 s into the window).
    # From the flows' start, with nothing sent before, it cannot.
    delivered = bytes_read_by_the_receivers(tmp_path, spec.duration)
    assert delivered * 8 <= 1.01 * payload_bps * spec.duration, delivered
    # Base RTTs: 2 x (1 + 50 + 1) ms for the long flow, 2 x (50 + 1) ms for the two others.
    rtts = [f.rtt_min_s for f in analysis.flows]
    assert rtts == pytest.approx([0.104, 0.102, 0.102], rel=0.05), rtts
    assert HostState.capture().leftovers_since(before) == []


def test_trace_driven_rate_and_host_cpu_check(tmp_path: Path) -> None:
    # A Mahimahi-style trace: 12 opportunities every 10 ms = 1800 B/ms = 14.4 Mbit/s on average,
    # delivered in bursts (all opportunities in the first 2 ms of each period).
    trace = [1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 10]
    raw = copy.deepcopy(EXAMPLE)
    raw["duration"], raw["measurement"] = "4s", {"skip_start": "1s"}
    raw["topology"]["bottleneck"] = {"rate_trace_ms": trace, "delay": "20ms", "buffer": "50pkt"}
    spec = ExperimentSpec.model_validate(raw)
    assert spec.bottleneck.rate == pytest.approx(14.4e6)
    result, _ = run(spec, tmp_path)
    assert result.status == "done", result.describe()
    assert (tmp_path / "link-0.trace").read_text().split() == [str(t) for t in trace]
    analysis = analyze_run(tmp_path, spec)
    goodput = sum(f.goodput_bps or 0 for f in analysis.flows)
    assert goodput == pytest.approx(14.4e6 * 1448 / 1500, rel=0.05)
    checks = {c.name: c for c in analysis.summary.checks}
    assert "host_cpu" in checks and "% busy" in checks["host_cpu"].detail
