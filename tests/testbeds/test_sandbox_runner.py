"""The sandbox driven through its own interfaces (plan.json and `run_sandbox`), without a spec or a
database: raw accuracy of the emulated dumbbell, cancellation, the deadline, start failures, and
the plan and topology as the two Pythons see them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ccbench.analysis.packetlog import read_packet_log
from ccbench.settings import REPO_ROOT, get_settings
from tests.hoststate import HostState
from workers.plan import (
    TCP_BUFFER_CAP_BYTES,
    TCP_BUFFER_DEFAULT_MAX_BYTES,
    FlowPlan,
    LinkPlan,
    Plan,
    tcp_buffer_max_bytes,
)
from workers.testbeds.base import TestbedResult
from workers.testbeds.mininet.runner import MininetTestbed
from workers.testbeds.mininet.topology import chain

RATE_BPS = 10e6
DELAY_S = 0.020
BUFFER_PKTS = 33  # 1 BDP: 10 Mbit/s x 40 ms = 50 000 B = 33 packets of 1500 B
PAYLOAD = 1448 / 1500  # goodput per bit on the wire: 20 B IP, 20 B TCP, 12 B timestamps
SKIP_S = 2.0


def dumbbell(
    run_dir: Path,
    duration_s: float,
    link_mechanism: str = "tc",
    delay_mechanism: str = "auto",
    algorithms: tuple[str, ...] = ("reno", "cubic"),
) -> Plan:
    return Plan(
        run_id="runner-test",
        run_dir=str(run_dir.resolve()),
        agents_dir=str(Path(get_settings().agents_dir).resolve()),
        duration_s=duration_s,
        sampling_interval_s=0.01,
        seed=123,
        links=[LinkPlan(RATE_BPS, DELAY_S, buffer_pkts=BUFFER_PKTS, buffer_bytes=None)],
        flows=[FlowPlan(i, alg, 0.0, duration_s) for i, alg in enumerate(algorithms)],
        link_mechanism=link_mechanism,
        delay_mechanism=delay_mechanism,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def leftovers(before: HostState, run_dir: Path) -> list[str]:
    """What the test left on the host. Processes count only when they are this test's (their
    command line names its run directory): other test sessions may run sandboxes meanwhile."""
    after = HostState.capture()
    mine = frozenset(p for p in after.processes if str(run_dir) in p)
    return dataclasses.replace(after, processes=before.processes | mine).leftovers_since(before)


# --- no root needed ---------------------------------------------------------------------------


def test_plan_round_trips_through_the_system_python(tmp_path: Path) -> None:
    plan = dumbbell(tmp_path, 6.0)
    assert Plan.from_json(plan.to_json()) == plan
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from workers.plan import Plan;"
        "print(Plan.from_json(sys.stdin.read()).to_json())"
    )
    out = subprocess.run(
        ["/usr/bin/python3", "-c", script, str(REPO_ROOT)],
        input=plan.to_json(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Plan.from_json(out) == plan
    with pytest.raises(ValueError, match="exactly one of buffer_pkts and buffer_bytes"):
        Plan.from_json(plan.to_json().replace('"buffer_bytes": null', '"buffer_bytes": 50000'))
    with pytest.raises(ValueError, match="delay_mechanism applies to link_mechanism tc only"):
        dumbbell(tmp_path, 6.0, link_mechanism="emulator", delay_mechanism="netem")


def test_the_sandbox_imports_under_the_system_python() -> None:
    """Everything sandbox.py imports must exist without the worker's venv (stdlib + Mininet)."""
    script = (
        "import sys, runpy; sys.path.insert(0, sys.argv[1]);"
        "runpy.run_path(sys.argv[1] + '/workers/testbeds/mininet/sandbox.py', run_name='check')"
    )
    done = subprocess.run(["/usr/bin/python3", "-c", script, str(REPO_ROOT)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_dumbbell_addresses_and_routes() -> None:
    topo = chain(1, [(0, 1), (0, 1)])
    assert topo.routers == ["r1", "r2"] and topo.senders == ["s1", "s2"]
    addresses = {(end.node, end.name): end.address for w in topo.wires for end in (w.a, w.b)}
    assert addresses[("r1", "r1-r2")] == "10.0.0.1/30"
    assert addresses[("r2", "r2-r1")] == "10.0.0.2/30"
    for i in (1, 2):
        assert addresses[(f"s{i}", f"s{i}-eth0")] == f"10.1.{i}.1/24"
        assert addresses[("r1", f"r1-s{i}")] == f"10.1.{i}.254/24"
        assert addresses[(f"d{i}", f"d{i}-eth0")] == f"10.2.{i}.1/24"
        assert addresses[("r2", f"r2-d{i}")] == f"10.2.{i}.254/24"
    routes = {(r.node, r.destination): r.via for r in topo.routes}
    assert routes[("s1", "default")] == "10.1.1.254" and routes[("d2", "default")] == "10.2.2.254"
    assert routes[("r1", "10.2.1.0/24")] == "10.0.0.2"
    assert routes[("r2", "10.1.2.0/24")] == "10.0.0.1"
    assert topo.link_interface(0) == "r1-r2"


def test_tcp_buffers_are_sized_for_the_path(tmp_path: Path) -> None:
    # 10 Mbit/s x 40 ms + 33 packets is far below the kernel's default: keep the default.
    assert tcp_buffer_max_bytes(dumbbell(tmp_path, 6.0)) == TCP_BUFFER_DEFAULT_MAX_BYTES
    # 1 Gbit/s x 40 ms = 5 MB in the pipe + a 5 MB buffer, x4.
    fast = dataclasses.replace(
        dumbbell(tmp_path, 6.0),
        links=[LinkPlan(1e9, DELAY_S, buffer_pkts=None, buffer_bytes=5_000_000)],
    )
    assert tcp_buffer_max_bytes(fast) == 4 * (5_000_000 + 5_000_000)
    # Access delays lengthen the RTT; the cap bounds absurd paths.
    far = dataclasses.replace(fast, flows=[FlowPlan(0, "cubic", 0.0, 6.0, access_delay_s=0.08)])
    assert tcp_buffer_max_bytes(far) == 4 * (1e9 / 8 * 0.2 + 5_000_000)
    huge = dataclasses.replace(fast, links=[LinkPlan(1e11, 1.0, None, 5_000_000)])
    assert tcp_buffer_max_bytes(huge) == TCP_BUFFER_CAP_BYTES


# --- real sandboxes ---------------------------------------------------------------------------


@pytest.mark.root
@pytest.mark.parametrize("link_mechanism", ["tc", "emulator"])
def test_dumbbell_rate_rtt_and_buffer(tmp_path: Path, link_mechanism: str) -> None:
    before = HostState.capture()
    duration = 6.0
    events: list[dict[str, Any]] = []
    result = MininetTestbed().run(
        dumbbell(tmp_path, duration, link_mechanism),
        events=events.append,
        cancel=lambda: False,
        deadline_s=60,
    )
    assert result.status == "done", result.describe()
    assert result.returncode == 0 and result.message is None
    phases = [e["phase"] for e in events if e["event"] == "phase"]
    assert phases == ["provisioning", "running", "collecting"]
    assert events[-1] == {"event": "done"}
    assert sum(e["event"] == "progress" for e in events) >= duration - 1
    for name in ("provenance.json", "sandbox.log", "plan.json"):
        assert (tmp_path / name).exists(), name
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    t0 = float(provenance["start_ts"])
    assert provenance["link_mechanism"] == link_mechanism
    assert provenance["mininet_version"] and provenance["capabilities"]["kernel"]
    assert all(c["rc"] in (0, None) for c in provenance["commands"] if "ethtool" not in c["cmd"])

    # Base RTT 2 x 20 ms: the smallest RTT the kernel measured (plus one 1500 B packet's
    # serialization, 1.2 ms at 10 Mbit/s, and the delay line's sub-millisecond lateness).
    for i in (0, 1):
        samples = [s for s in lines(tmp_path / f"flow-{i}.send.jsonl") if s["type"] == "tcp_info"]
        assert len(samples) >= 0.8 * duration / 0.01
        min_rtt = min(s["min_rtt_s"] for s in samples if s["min_rtt_s"])
        assert 2 * DELAY_S <= min_rtt <= 2 * DELAY_S * 1.05, (i, min_rtt)
        assert min(s["srtt_s"] for s in samples if s["srtt_s"]) >= 2 * DELAY_S
        assert lines(tmp_path / f"flow-{i}.send.jsonl")[-1]["type"] == "summary"

    # Aggregate goodput after the start-up: the bottleneck rate times the payload share.
    start, end = t0 + SKIP_S, t0 + duration - 0.5
    received = sum(
        r["bytes"]
        for i in (0, 1)
        for r in lines(tmp_path / f"flow-{i}.recv.jsonl")
        if r["type"] == "recv" and start < r["ts"] <= end
    )
    goodput = received * 8 / (end - start)
    assert goodput == pytest.approx(RATE_BPS * PAYLOAD, rel=0.05)

    # The drop-tail buffer held at most its 33 packets and was used.
    if link_mechanism == "tc":
        leaf = [q for q in lines(tmp_path / "qdisc.jsonl") if q["kind"] == "pfifo"]
        assert leaf and {q["handle"] for q in leaf} == {"10:"}
        assert max(q["qlen_pkts"] for q in leaf) <= BUFFER_PKTS
        assert leaf[-1]["drops"] > 0 or max(q["qlen_pkts"] for q in leaf) >= BUFFER_PKTS // 2
        assert any("pfifo limit 33" in c["cmd"] and c["rc"] == 0 for c in provenance["commands"])
        mechanism = provenance["delay_mechanism"]
        assert mechanism in ("netem", "nfqueue")
        if mechanism == "nfqueue":
            for direction in ("data", "ack"):
                assert (tmp_path / f"delay-{direction}.json").exists()
    else:
        stats = json.loads((tmp_path / "link-0-data.json").read_text())
        assert stats["max_qlen_pkts"] <= BUFFER_PKTS
        assert stats["dropped_full"] > 0 or stats["max_qlen_pkts"] >= BUFFER_PKTS // 2
        assert (tmp_path / "link-0-data.bin").exists() and (tmp_path / "link-0-ack.json").exists()
    assert leftovers(before, tmp_path) == []


def _stopped_run(tmp_path: Path, cancel_after_s: float | None, deadline_s: float) -> TestbedResult:
    """A 30 s run stopped by cancellation (cancel_after_s after it started running) or by its
    deadline; returns the result after checking how fast it stopped and what it left."""
    before = HostState.capture()
    running_at: list[float] = []
    stop_requested: list[float] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("phase") == "running":
            running_at.append(time.monotonic())

    def should_cancel() -> bool:
        if cancel_after_s is None or not running_at:
            return False
        if time.monotonic() - running_at[0] < cancel_after_s:
            return False
        stop_requested.append(time.monotonic())
        return True

    started = time.monotonic()
    result = MininetTestbed().run(
        dumbbell(tmp_path, 30.0, "emulator"),
        events=on_event,
        cancel=should_cancel,
        deadline_s=deadline_s,
    )
    ended = time.monotonic()
    assert running_at, "the run never started running"
    stop = stop_requested[0] if stop_requested else started + deadline_s
    assert ended - stop < 3.0
    assert result.duration_s == pytest.approx(ended - started, abs=0.5)
    assert leftovers(before, tmp_path) == []
    return result


@pytest.mark.root
def test_cancel_mid_run_stops_everything(tmp_path: Path) -> None:
    result = _stopped_run(tmp_path, cancel_after_s=1.5, deadline_s=120)
    assert result.status == "cancelled" and result.describe() == "cancelled"


@pytest.mark.root
def test_deadline_stops_a_run_that_overruns(tmp_path: Path) -> None:
    result = _stopped_run(tmp_path, cancel_after_s=None, deadline_s=4.0)
    assert result.status == "timeout"
    assert "time limit" in result.describe()


@pytest.mark.root
def test_emulator_killed_alone_mid_run_fails_the_run_and_leaves_nothing(tmp_path: Path) -> None:
    """SIGKILL to one ccbench-link (not the sandbox): the run fails at once (not at the end of
    its 20 s) naming the emulator, and its NFQUEUE rule, namespaces and processes are gone
    with the sandbox."""
    before = HostState.capture()
    killed: list[str] = []
    progress: list[float] = []

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "progress":
            progress.append(event["elapsed_s"])
        if event.get("event") == "progress" and event.get("elapsed_s", 0) >= 1 and not killed:
            found = subprocess.run(["pgrep", "-f", f"ccbench-link run .*{tmp_path}"],
                                   capture_output=True, text=True).stdout.split()  # fmt: skip
            assert found, "no ccbench-link of this run to kill"
            subprocess.run(["kill", "-KILL", found[0]], check=True)
            killed.append(found[0])

    result = MininetTestbed().run(
        dumbbell(tmp_path, 20.0, "emulator"),
        events=on_event,
        cancel=lambda: False,
        deadline_s=60,
    )
    assert killed
    assert result.status == "error"
    assert "ccbench-link" in result.describe() and "-9" in result.describe(), result.describe()
    assert "during the run" in result.describe()
    assert max(progress) < 10, progress
    assert leftovers(before, tmp_path) == []


@pytest.mark.root
def test_concurrent_runs_do_not_interfere(tmp_path: Path) -> None:
    """Two emulated dumbbells at once on this host (as a worker with concurrency 2 runs them):
    10 Mbit/s with reno + cubic and a 33-packet buffer, 20 Mbit/s with one cubic flow and a
    66-packet buffer. Each delivers its own rate, holds its own buffer limit, and its
    emulator's packet log holds its own flows only (the two sandboxes use the same addresses
    and NFQUEUE numbers, each in its own network namespaces)."""
    before = HostState.capture()
    duration = 6.0
    slow = dataclasses.replace(dumbbell(tmp_path / "slow", duration, "emulator"), run_id="slow")
    fast = dataclasses.replace(
        dumbbell(tmp_path / "fast", duration, "emulator", algorithms=("cubic",)),
        run_id="fast",
        links=[LinkPlan(2 * RATE_BPS, DELAY_S, buffer_pkts=2 * BUFFER_PKTS, buffer_bytes=None)],
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(MininetTestbed().run, plan, lambda e: None, lambda: False, 60)
            for plan in (slow, fast)
        ]
        results = [future.result() for future in futures]
    for plan, result in zip((slow, fast), results, strict=True):
        run_dir = Path(plan.run_dir)
        assert result.status == "done", (plan.run_id, result.describe())
        t0 = float(json.loads((run_dir / "provenance.json").read_text())["start_ts"])
        start, end = t0 + SKIP_S, t0 + duration - 0.5
        received = sum(
            r["bytes"]
            for flow in plan.flows
            for r in lines(run_dir / f"flow-{flow.index}.recv.jsonl")
            if r["type"] == "recv" and start < r["ts"] <= end
        )
        rate = plan.links[0].rate_bps
        assert received * 8 / (end - start) == pytest.approx(rate * PAYLOAD, rel=0.05), plan.run_id
        stats = json.loads((run_dir / "link-0-data.json").read_text())
        assert stats["max_qlen_pkts"] <= (plan.links[0].buffer_pkts or 0), plan.run_id
        _, log = read_packet_log(run_dir / "link-0-data.bin")
        data = np.asarray(log)[np.asarray(log)["len"] > 1000]
        senders = {int(port) for port in np.unique(data["sport"])}
        print(f"{plan.run_id}: goodput {received * 8 / (end - start) / 1e6:.2f} Mbit/s, "
              f"max queue {stats['max_qlen_pkts']} packets, senders {sorted(senders)}")  # fmt: skip
        assert len(senders) == len(plan.flows), (plan.run_id, senders)
    assert leftovers(before, tmp_path) == []


@pytest.mark.root
def test_demanded_netem_fails_clearly_when_missing(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    plan = dumbbell(tmp_path, 4.0, link_mechanism="tc", delay_mechanism="netem")
    result = MininetTestbed().run(plan, events.append, lambda: False, deadline_s=60)
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    if provenance["capabilities"]["netem"]:
        pytest.skip("this kernel has netem")
    assert result.status == "error" and result.returncode == 1
    assert result.message is not None and "this kernel has no netem" in result.message
    assert events[-1] == {"event": "error", "message": result.message}
    assert not (tmp_path / "flow-0.send.jsonl").exists()


@pytest.mark.root
def test_sandbox_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    plan = dumbbell(tmp_path, 4.0)
    testbed = MininetTestbed(sandbox_python="/nonexistent/python3")
    result = testbed.run(plan, lambda e: None, lambda: False, deadline_s=30)
    assert result.status == "error" and result.returncode not in (0, None)
    assert result.message is not None and "/nonexistent/python3" in result.message


@pytest.mark.root
def test_agent_that_fails_to_start_is_reported(tmp_path: Path) -> None:
    """A link emulator that exits instead of printing its ready line: the run fails at once with
    the emulator's own error, and nothing is left behind."""
    before = HostState.capture()
    agents = tmp_path / "agents"
    agents.mkdir()
    real = Path(get_settings().agents_dir).resolve()
    (agents / "ccbench-agent").symlink_to(real / "ccbench-agent")
    fake = agents / "ccbench-link"
    fake.write_text(
        "#!/bin/sh\n"
        '[ "$1" = --version ] && { echo "ccbench-link 0.0.0"; exit 0; }\n'
        'echo \'{"error": "cannot bind NFQUEUE queue 0"}\' >&2\n'
        "exit 1\n"
    )
    fake.chmod(0o755)
    plan = dataclasses.replace(dumbbell(tmp_path / "run", 4.0, "emulator"), agents_dir=str(agents))
    result = MininetTestbed().run(plan, lambda e: None, lambda: False, deadline_s=30)
    assert result.status == "error"
    assert result.message == (
        'ccbench-link 0 forward on r1 did not start: {"error": "cannot bind NFQUEUE queue 0"}'
    )
    assert leftovers(before, tmp_path) == []
