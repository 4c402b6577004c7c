"""ccbench's BPF struct_ops congestion controllers: the objects, the loader (tunables and per-run
names written into the object, registration, teardown, the orphan sweep) and the algorithms'
behaviour through the emulated bottleneck, each against what its seed describes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ccbench.analysis.packetlog import read_packet_log
from ccbench.analysis.run import RunAnalysis, analyze_run
from ccbench.plots.run import run_figure_data
from ccbench.settings import get_settings
from schemas import ExperimentSpec
from schemas.algorithms import BPF_ALGORITHMS, PARAMETERS
from tests.hoststate import HostState
from workers import bpf, bpf_trace
from workers.bpf_ledger import LedgerError, default_ledger, ledger_at
from workers.plan import ControllerPlan
from workers.planning import plan_for_spec
from workers.testbeds.mininet.runner import MininetTestbed

pytestmark = pytest.mark.skipif(
    shutil.which("bpftool") is None or not bpf.object_path("reno").exists(),
    reason="needs bpftool and the BPF objects (scripts/install.sh builds agents/kernel)",
)


def test_every_object_declares_its_parameters_and_name_placeholder(tmp_path: Path) -> None:
    for algorithm in BPF_ALGORITHMS:
        params = {p.name: p.default for p in PARAMETERS[algorithm]}
        symbols = bpf.symbol_values(algorithm.value, params)
        # patch_object refuses a missing or mistyped tunable and a missing placeholder.
        bpf.patch_object(
            bpf.object_path(algorithm.value),
            tmp_path / f"{algorithm.value}.o",
            algorithm.value,
            f"cb00000a0_{algorithm.value}"[:15],
            symbols,
        )
    with pytest.raises(bpf.BpfError, match="declares no tunable 'nope'"):
        bpf.patch_object(bpf.object_path("reno"), tmp_path / "x.o", "reno", "cbx", {"nope": 1})


def test_every_object_traces_its_state_under_a_per_run_ring_buffer_name(tmp_path: Path) -> None:
    for algorithm in BPF_ALGORITHMS:
        name = f"cbabc123{len(algorithm.value) % 10}_{algorithm.value}"[:15]
        target = tmp_path / f"{algorithm.value}.o"
        bpf.patch_object(bpf.object_path(algorithm.value), target, algorithm.value, name, {})
        data = target.read_bytes()
        assert bpf.TRACE_PLACEHOLDER not in data
        assert data.count(bpf.trace_map_name(name).encode()) >= 2  # symbol table and BTF
        fields = bpf.state_fields(target)
        assert len(fields) <= 4 and all(f.isidentifier() for f in fields), fields
    assert bpf.state_fields(bpf.object_path("bfa")) == ["flag", "srv_us", "bfa_srtt_us"]
    assert bpf.trace_map_name("cb0a1b2c3_vegas") == "ct0a1b2c3_trace"
    with pytest.raises(bpf.BpfError, match="not a ccbench controller name"):
        bpf.trace_map_name("cubic")


def test_trace_samples_decode_with_named_fixed_point_state() -> None:
    record = bpf_trace.SAMPLE.pack(
        2_500_000_000, 7, int.from_bytes(bytes([10, 1, 1, 1]), "little"), 43210, 1,
        20, 0x7FFFFFFF, 41000, 384, -12, 0, 0,
    )  # fmt: skip
    sample = bpf_trace.decode(record, "cbx", ["diff_x256", "srv_us"], clock_offset_s=100.0)
    assert sample == {
        "ts": 102.5, "controller": "cbx", "seq": 7, "saddr": "10.1.1.1", "sport": 43210,
        "event": "loss", "cwnd_pkts": 20, "ssthresh_pkts": None, "srtt_s": 0.041,
        "state": {"diff": 1.5, "srv_us": -12},
    }  # fmt: skip
    # Above TCP_INFINITE_SSTHRESH no controller returns it: flagged, not read as infinite.
    stale = bpf_trace.SAMPLE.pack(
        2_500_000_000, 8, 0, 43210, 0, 20, 0x81104110, 41000, 0, 0, 0, 0
    )  # fmt: skip
    flagged = bpf_trace.decode(stale, "cbx", [], clock_offset_s=0.0)
    assert flagged["ssthresh_pkts"] is None and flagged["ssthresh_invalid"] is True
    assert "ssthresh_invalid" not in sample


def rodata_of(name: str) -> dict[str, Any]:
    """The .rodata values the kernel holds for a registered controller, read back by bpftool
    (struct_ops map -> one of its programs -> that program's maps)."""
    _, data = bpf.registered_ops()[name]
    prog_id = next(v.split("prog_id:")[1] for v in data.values() if "prog_id:" in str(v))
    prog = json.loads(bpf._bpftool("-j", "prog", "show", "id", prog_id))
    for map_id in prog.get("map_ids", []):
        info = json.loads(bpf._bpftool("-j", "map", "show", "id", str(map_id)))
        if info["name"].endswith(".rodata"):
            [entry] = json.loads(bpf._bpftool("-j", "map", "dump", "id", str(map_id)))
            values: dict[str, Any] = {}
            for item in entry["formatted"]["value"][".rodata"]:
                values.update(item)
            return values
    raise AssertionError(f"no .rodata map for {name}")


@pytest.mark.root
def test_register_with_parameters_then_unregister(tmp_path: Path) -> None:
    before = HostState.capture()
    params = {"sigma_on": 0.002, "sigma_off": -0.003, "alpha_srv": 0.75}
    controller = ControllerPlan(
        name=bpf.controller_name("loader-test", 0, "bfa"),
        algorithm="bfa",
        params=params,
        symbols=bpf.symbol_values("bfa", params),
    )
    with bpf.loaded([controller], tmp_path) as names:
        assert names == [controller.name]
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
        assert controller.name in available.split()
        # The values the spec asked for are what the kernel runs with.
        rodata = rodata_of(controller.name)
        assert rodata.pop("ccb_state_fields") == "flag,srv_us,bfa_srtt_us"
        assert rodata == {"sigma_on_us": 2000, "sigma_off_us": -3000, "alpha_srv_x256": 192}
        with pytest.raises(bpf.BpfError, match="already registered"):
            bpf.register(controller, tmp_path)
        # Its maps (state trace, tunables) are what HostState watches: gone after teardown.
        names = {m.split(":", 1)[1] for m in HostState.capture().bpf_maps}
        assert {bpf.trace_map_name(controller.name), f"{controller.name[:8]}.rodata"} <= names
    assert controller.name not in bpf.registered()
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_sweep_removes_controllers_of_runs_that_are_gone(tmp_path: Path) -> None:
    def controller(run_id: str) -> ControllerPlan:
        return ControllerPlan(bpf.controller_name(run_id, 0, "reno"), "reno", {}, {})

    dead, alive = controller("run-killed-with-its-worker"), controller("run-still-running")
    bpf.register(dead, tmp_path)
    bpf.register(alive, tmp_path)
    try:
        assert bpf.sweep(active=["run-still-running"]) == [dead.name]
        assert set(bpf.registered()) >= {alive.name}
        assert dead.name not in bpf.registered()
    finally:
        bpf.unregister(dead.name)
        bpf.unregister(alive.name)


def test_each_attempt_of_a_run_has_its_own_controller_names(tmp_path: Path) -> None:
    """A retry never meets the controller a killed attempt left: names (and ring buffer names)
    are derived from the run id and the attempt number, and still fit 15 bytes."""
    spec = ExperimentSpec.model_validate(
        single_flow({"algorithm": "bfa", "runtime": "bpf"}, "1bdp", "4s")
    )
    names = [
        plan_for_spec(spec, run_id="r1", out_dir=tmp_path, settings=get_settings(), attempt=a)
        .controllers[0]
        .name
        for a in (1, 2)
    ]
    assert names[0] == bpf.controller_name(bpf.attempt_key("r1", 1), 0, "bfa")
    assert names[1] == bpf.controller_name(bpf.attempt_key("r1", 2), 0, "bfa")
    assert names[0] != names[1]
    assert len({bpf.trace_map_name(n) for n in names}) == 2
    longest = bpf.controller_name(bpf.attempt_key("f" * 32, 99), 15, "alpha_paced_westwood")
    assert len(longest) == 15 and bpf.NAME_PATTERN.match(longest)


def test_on_hosts_each_sender_host_has_its_own_controllers(tmp_path: Path) -> None:
    """Hosts may share one kernel (namespace hosts, containers) and with it one list of
    controllers: on the hosts testbed a run attempt registers one controller per sender host,
    algorithm and parameters, each name unique; flows of one host share theirs."""
    flow = {"algorithm": "bfa", "runtime": "bpf", "dst": "h3"}
    spec = ExperimentSpec.model_validate({
        "name": "bpf-on-hosts", "testbed": {"kind": "hosts"},
        "topology": {"kind": "path"}, "duration": "5s", "seed": 1,
        "flows": [{**flow, "src": "h1"}, {**flow, "src": "h2"}, {**flow, "src": "h1"},
                  {**flow, "src": "h1", "params": {"sigma_on": 0.02}}],
    })  # fmt: skip
    plan = plan_for_spec(spec, run_id="r1", out_dir=tmp_path, settings=get_settings())
    key = bpf.attempt_key("r1", 1)
    assert [(c.name, c.host) for c in plan.controllers] == [
        (bpf.controller_name(key, 0, "bfa"), "h1"),
        (bpf.controller_name(key, 1, "bfa"), "h2"),
        (bpf.controller_name(key, 2, "bfa"), "h1"),
    ]
    assert plan.controllers[2].symbols["sigma_on_us"] == 20000
    names = [c.name for c in plan.controllers]
    assert [f.algorithm for f in plan.flows] == [names[0], names[1], names[0], names[2]]
    # The mininet testbed has one kernel: one controller per algorithm and parameters.
    local = ExperimentSpec.model_validate(
        single_flow({"algorithm": "bfa", "runtime": "bpf"}, "1bdp", "4s")
    )
    [controller] = plan_for_spec(local, run_id="r1", out_dir=tmp_path,
                                 settings=get_settings()).controllers  # fmt: skip
    assert controller.host is None


def test_the_ledger_is_owner_only_and_safe_for_concurrent_processes(tmp_path: Path) -> None:
    """Two processes (and a child forked while its parent holds the lock) add entries at the
    same time: none is lost; the files are the owner's only."""
    ledger = ledger_at(tmp_path / "state" / "bpf-controllers.json")

    def add_in_child(prefix: str, count: int) -> int:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for i in range(count):
                    with ledger.open() as entries:
                        entries[f"{prefix}{i}"] = {"pid": os.getpid()}
                code = 0
            finally:
                os._exit(code)
        return pid

    def reap(pid: int) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                return
            time.sleep(0.02)
        os.kill(pid, 9)
        raise AssertionError(f"child {pid} did not finish: blocked on the ledger")

    children = [add_in_child("a", 40), add_in_child("b", 40)]
    for pid in children:
        reap(pid)
    assert ledger.names() == {f"{p}{i}" for p in "ab" for i in range(40)}
    # A child forked while the parent holds the lock waits for it, then adds its entry.
    with ledger.open() as entries:
        child = add_in_child("child", 1)
        time.sleep(0.3)
        entries["parent"] = {}
    reap(child)
    assert {"parent", "child0"} <= ledger.names()
    assert (ledger.path.stat().st_mode & 0o777, ledger.lock_path.stat().st_mode & 0o777) == (
        0o600,
        0o600,
    )
    ledger.path.write_text("not json")
    with pytest.raises(LedgerError, match="is not JSON"):
        ledger.names()


# --- behaviour through the emulated bottleneck ------------------------------------------------


def single_flow(
    flow: dict[str, Any],
    buffer: str,
    duration: str = "12s",
    rate: str = "10Mbit",
    delay: str = "20ms",
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "bpf-test",
        "seed": 5,
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {"rate": rate, "delay": delay, "buffer": buffer},
        },
        "flows": [flow],
        "duration": duration,
        "measurement": {"skip_start": "2s"},
    }


def run(raw: dict[str, Any], run_dir: Path, run_id: str) -> tuple[RunAnalysis, dict[str, Any]]:
    spec = ExperimentSpec.model_validate(raw)
    plan = plan_for_spec(spec, run_id=run_id, out_dir=run_dir, settings=get_settings())
    result = MininetTestbed().run(
        plan, lambda e: None, lambda: False, deadline_s=spec.duration + 60
    )
    assert result.status == "done", result.describe()
    provenance = json.loads((run_dir / "provenance.json").read_text())
    return analyze_run(run_dir, spec), provenance


def throughput(analysis: RunAnalysis) -> float:
    goodput = analysis.summary.aggregate.goodput_bps
    assert goodput is not None
    return goodput


@pytest.mark.root
def test_reno_clone_matches_builtin_reno(tmp_path: Path) -> None:
    """With a quarter-BDP buffer the link is not always busy, so utilization depends on the
    sawtooth itself: the clone's must match built-in reno's within 5%."""
    before = HostState.capture()
    builtin, _ = run(single_flow({"algorithm": "reno"}, "0.25bdp"), tmp_path / "b", "reno-b")
    clone, provenance = run(
        single_flow({"algorithm": "reno", "runtime": "bpf"}, "0.25bdp"), tmp_path / "c", "reno-c"
    )
    [controller] = provenance["bpf_controllers"]
    assert controller["algorithm"] == "reno" and controller["name"].endswith("_reno")
    assert provenance["bpf_teardown"] == {controller["name"]: "removed"}
    ratio = throughput(clone) / throughput(builtin)
    print(f"goodput: bpf reno {throughput(clone) / 1e6:.3f} Mbit/s, builtin "
          f"{throughput(builtin) / 1e6:.3f} Mbit/s, ratio {ratio:.3f}")  # fmt: skip
    assert throughput(builtin) < 0.97 * 10e6 * 1448 / 1500  # the buffer does limit it
    assert ratio == pytest.approx(1.0, abs=0.05)
    assert HostState.capture().leftovers_since(before) == []


# Seed 000's conditions (section 4): a slow link ("1.5 Mbps gave similar results" to its
# 64 kbit/s), where a packet adds 8 ms of queueing, so one round's window increase moves the RTT
# by about sigma_on (10 ms); and slow start from one packet, as its simulations start, so the
# window is still below the BDP (12.5 packets at 100 ms) when the first RTT samples come.
# At 10 Mbit/s a packet adds 1.2 ms: timed once per round as the seed's BSD code does,
# congestion avoidance's drift (about 7 x 1.2 ms of lag in the smoothed RTT) never reaches
# sigma_on; and Linux's initial window of 10 overshoots a small BDP before the first sample.
def seed_000_flow(algorithm: str, runtime: str | None = None) -> dict[str, Any]:
    flow: dict[str, Any] = {"algorithm": algorithm, "initial_window": 1}
    if runtime is not None:
        flow["runtime"] = runtime
    return single_flow(flow, "8bdp", rate="1.5Mbit", delay="50ms")


@pytest.mark.root
def test_bfa_holds_its_window_and_keeps_the_queue_below_renos(tmp_path: Path) -> None:
    """Seed 000 with its own thresholds (10 ms, -10 ms, alpha_srv 1/2) and conditions
    (seed_000_flow), an 8-BDP buffer (100 packets): Reno keeps filling the queue; TCP-BFA
    freezes its window once the RTT drifts up, so its queue and RTT are much smaller at the
    same throughput (higher power, the seed's Figs. 5-9)."""
    before = HostState.capture()
    reno, _ = run(seed_000_flow("reno"), tmp_path / "r", "bfa-r")
    bfa, provenance = run(seed_000_flow("bfa", "bpf"), tmp_path / "f", "bfa-f")
    assert provenance["bpf_controllers"][0]["symbols"] == {
        "sigma_on_us": 10000, "sigma_off_us": -10000, "alpha_srv_x256": 128,
    }  # fmt: skip
    reno_queue = reno.summary.aggregate.queue_mean_pkts
    bfa_queue = bfa.summary.aggregate.queue_mean_pkts
    assert reno_queue is not None and bfa_queue is not None
    print(f"mean queue: reno {reno_queue:.1f} pkts, bfa {bfa_queue:.1f} pkts; goodput reno "
          f"{throughput(reno) / 1e6:.2f}, bfa {throughput(bfa) / 1e6:.2f} Mbit/s; power reno "
          f"{reno.summary.aggregate.power:.3g}, bfa {bfa.summary.aggregate.power:.3g}")  # fmt: skip
    assert bfa_queue < 0.6 * reno_queue
    assert throughput(bfa) > 0.95 * throughput(reno)
    assert (bfa.summary.aggregate.power or 0) > 1.3 * (reno.summary.aggregate.power or 0)
    # The window is held: over the last half of the run it does not change, far below Reno's.
    info = bfa.series["flow-0.tcp_info"]
    late = [c for t, c in zip(info["t_s"], info["cwnd_pkts"], strict=True) if t > 6 and c]
    assert late and len(set(late)) == 1, sorted(set(late))
    assert late[0] < 0.5 * max(c for c in reno.series["flow-0.tcp_info"]["cwnd_pkts"] if c)
    # The state trace shows why: the BFA flag is set while the window is held.
    state = bfa.series["flow-0.cc_state"]
    flags = [f for t, f in zip(state["t_s"], state["flag"], strict=True) if t > 6]
    assert flags and min(flags) == 1, flags
    assert (
        provenance["bpf_trace"]["controllers"][provenance["bpf_controllers"][0]["name"]]["lost"]
        == 0
    )
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_vegas_alone_keeps_between_alpha_and_beta_packets_queued(tmp_path: Path) -> None:
    """Seed 002: a single Vegas flow's Diff estimates its own queued packets and CAM holds it
    between alpha (1) and beta (3): the bottleneck's queue, read from the emulator's packet log,
    stays there while the link is used fully and nothing is dropped."""
    before = HostState.capture()
    vegas, provenance = run(
        single_flow({"algorithm": "vegas", "runtime": "bpf"}, "2bdp"), tmp_path / "v", "vegas"
    )
    assert provenance["bpf_controllers"][0]["symbols"] == {
        "alpha_pkts": 1, "beta_pkts": 3, "gamma_pkts": 1,
    }  # fmt: skip
    aggregate = vegas.summary.aggregate
    print(f"vegas: queue mean {aggregate.queue_mean_pkts:.2f} pkts, max "
          f"{aggregate.queue_max_pkts}, utilization {aggregate.utilization:.3f}, "
          f"drops {aggregate.drops}")  # fmt: skip
    # The controller's own Diff, traced once per round trip, stays between alpha and beta.
    state = vegas.series["flow-0.cc_state"]
    diffs = [d for t, d in zip(state["t_s"], state["diff"], strict=True) if t > 4]
    inside = sum(1 for d in diffs if 1 <= d <= 3) / len(diffs)
    print(f"vegas Diff after 4 s: {len(diffs)} rounds, {inside:.1%} in [1, 3], "
          f"mean {sum(diffs) / len(diffs):.2f}; BaseRTT {min(state['base_rtt_us'])}-"
          f"{max(state['base_rtt_us'])} us")  # fmt: skip
    assert len(diffs) > 100 and inside > 0.9
    # The queue is Diff plus the packet on the wire, so up to beta + 1 = 4 packets, and CAM may
    # hold Diff anywhere in [1, 3]: in 4 runs Diff averaged 1.71-2.83 and the queue 2.10-3.92
    # (0.4-1.2 above Diff); in two CI runs the queue averaged 4.06 and 4.09.
    assert aggregate.queue_mean_pkts is not None and 0.5 <= aggregate.queue_mean_pkts <= 4.5
    assert (aggregate.utilization or 0) > 0.95
    assert aggregate.drops == 0
    # Reports draw it: one figure per state variable.
    figures = {f.name: f for f in run_figure_data(
        {"series": vegas.series, "flows": [{"flow": 0, "algorithm": "vegas"}]}
    )}  # fmt: skip
    assert {"state_diff", "state_base_rtt_us", "state_round_min_rtt_us"} <= set(figures)
    assert figures["state_diff"].traces[0].y[-1] == diffs[-1]
    assert HostState.capture().leftovers_since(before) == []


def test_a_missing_object_fails_the_run_before_traffic(tmp_path: Path) -> None:
    with pytest.raises(bpf.BpfError, match="no BPF object for bfa"):
        bpf.register(ControllerPlan("cbxxxxxx0_bfa", "bfa", {}, {}), tmp_path, tmp_path)


@pytest.mark.root
def test_worker_sweep_keeps_only_controllers_of_active_runs(tmp_path: Path) -> None:
    """What a worker does before a BPF run: controllers whose run is not active in the database
    (here: a run id the database never had, as after a killed worker) are unregistered."""
    from workers.testbeds.registry import sweep_orphan_controllers

    orphan = ControllerPlan(bpf.controller_name("no-such-run-in-db", 0, "reno"), "reno", {}, {})
    bpf.register(orphan, tmp_path)
    try:
        assert orphan.name in sweep_orphan_controllers()
        assert orphan.name not in bpf.registered()
    finally:
        bpf.unregister(orphan.name)


@pytest.mark.root
def test_sweep_removes_an_older_attempt_of_a_run_that_is_active_again(tmp_path: Path) -> None:
    """A run killed with its worker and claimed again: its first attempt's controller goes, the
    running attempt's stays."""
    first, second = (
        ControllerPlan(
            bpf.controller_name(bpf.attempt_key("run-retried", a), 0, "bfa"), "bfa", {}, {}
        )  # fmt: skip
        for a in (1, 2)
    )
    bpf.register(first, tmp_path)
    bpf.register(second, tmp_path)
    try:
        removed = bpf.sweep(active=[bpf.attempt_key("run-retried", 2)])
        assert first.name in removed and second.name not in removed
        assert second.name in bpf.registered() and first.name not in bpf.registered()
    finally:
        bpf.unregister(first.name)
        bpf.unregister(second.name)
    assert not {first.name, second.name} & default_ledger().names()


@pytest.mark.root
def test_sweep_leaves_controllers_this_installation_did_not_register(tmp_path: Path) -> None:
    """Another ccbench installation's controller (registered here straight with bpftool, in no
    ledger of ours) looks like ours but survives our sweeps; our own orphan beside it goes."""
    before = HostState.capture()
    foreign = bpf.controller_name(bpf.attempt_key("another-installation", 1), 0, "reno")
    ours = ControllerPlan(bpf.controller_name("our-killed-run", 0, "reno"), "reno", {}, {})
    bpf.patch_object(bpf.object_path("reno"), tmp_path / "foreign.bpf.o", "reno", foreign, {})
    bpf._bpftool("struct_ops", "register", str(tmp_path / "foreign.bpf.o"))
    try:
        bpf.register(ours, tmp_path)
        removed = bpf.sweep(active=[])
        assert ours.name in removed and foreign not in removed
        from workers.testbeds.registry import sweep_orphan_controllers

        assert foreign not in sweep_orphan_controllers()
        assert foreign in bpf.registered() and ours.name not in bpf.registered()
    finally:
        bpf.unregister(foreign)
        bpf.unregister(ours.name)
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_a_controller_a_socket_still_uses_is_pending_never_a_failure(tmp_path: Path) -> None:
    """Unregistering a controller that a socket still uses (as a killed run's orphaned sockets
    do) leaves it listed in state TOBEFREE until the socket closes, and unregistering it again
    fails with EINPROGRESS. The run's teardown records it as pending, the ledger keeps it, a
    later BPF run's sweep neither fails nor fails that run, and once the socket is gone the
    next sweep forgets it."""
    before = HostState.capture()
    held = ControllerPlan(bpf.controller_name(bpf.attempt_key("held", 1), 0, "reno"), "reno",
                          {}, {})  # fmt: skip
    sock = socket.socket()
    try:
        with bpf.loaded([held], tmp_path) as names:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, held.name.encode())
        assert names.teardown == {held.name: f"pending: {bpf.PENDING_REASON}"}
        # No new socket can select it, but the kernel still lists it.
        assert (
            held.name not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
        )
        [listed] = [m for m in bpf.ops_maps() if m.name == held.name]
        assert listed.pending and listed.state == "BPF_STRUCT_OPS_STATE_TOBEFREE"
        # What the sweep used to do, and fail the run with.
        with pytest.raises(bpf.BpfError, match="Operation now in progress"):
            bpf._bpftool("struct_ops", "unregister", "id", str(listed.id))
        with default_ledger().open() as entries:
            assert entries[held.name]["pending"] == bpf.PENDING_REASON
        assert bpf.unregister(held.name) == "pending"
        # Another run sweeps first (its own attempt is the only one active): it is done.
        raw = single_flow({"algorithm": "reno", "runtime": "bpf"}, "1bdp", "3s")
        raw["measurement"] = {"skip_start": "1s"}
        spec = ExperimentSpec.model_validate(raw)
        plan = plan_for_spec(spec, run_id="next", out_dir=tmp_path / "next",
                             settings=get_settings())  # fmt: skip
        result = MininetTestbed(active_runs=lambda: [bpf.attempt_key("next", 1)]).run(
            plan, lambda e: None, lambda: False, deadline_s=60
        )
        assert result.status == "done", result.describe()
        provenance = json.loads((tmp_path / "next" / "provenance.json").read_text())
        assert provenance["bpf_teardown"] == {plan.controllers[0].name: "removed"}
        assert held.name in default_ledger().names()
    finally:
        sock.close()
    assert held.name not in bpf.sweep(active=[])  # freed by the kernel, not removed by us
    assert held.name not in default_ledger().names()
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_probe_reports_which_controllers_the_kernel_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = HostState.capture()
    found = bpf.probe()
    assert found["btf"] and found["struct_ops"]
    assert found["loadable"] == {a.value: "ok" for a in BPF_ALGORITHMS}
    # A broken object and missing ones are reported with their reason, not as loadable.
    (tmp_path / "reno.bpf.o").write_bytes(b"not an object")
    found = bpf.probe(tmp_path)
    assert found["objects"] == ["reno"]
    assert found["loadable"]["reno"] == "not a 64-bit little-endian ELF object"
    assert found["loadable"]["bfa"].startswith("not built: ")
    assert not found["struct_ops"]
    # The CLI prints the same probe for the host.
    from cli.main import main

    assert main(["probe", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["bpf"]["loadable"]["vegas"] == "ok"
    assert "reno" in printed["congestion_controls"]
    assert HostState.capture().leftovers_since(before) == []


# Linux never paces a connection's first 10 data segments (tcp_update_skb_after_send: "Original
# sch_fq does not pace first 10 MSS", data_segs_out < 10), whatever the controller sets: they
# leave back to back although the controllers set sk_pacing_status and the rate (cwnd/SRTT of
# the SYN's RTT) in init, before the first data segment (measured on the sender: status NEEDED,
# 2.9 Mbit/s at segment 1). A struct_ops controller cannot write data_segs_out.
KERNEL_UNPACED_SEGMENTS = 10
BACK_TO_BACK_US = 100  # a tenth of a packet's transmission time at the 10 Mbit/s bottleneck


def slow_start_bursts(
    run_dir: Path, skip_stalls: bool = False
) -> tuple[int, int, int, int, list[int]]:
    """(packets, back-to-back pairs among the first KERNEL_UNPACED_SEGMENTS packets, back-to-back
    pairs after them, the longest back-to-back train after them in packets, the lengths of the
    trains set aside as stalls) of the flow's first
    slow start at the bottleneck, from the emulator's
    arrival log: data packets up to the first drop (the end of slow start at a 1-BDP buffer) or
    the first 2 s. A pair is back to back when the second packet arrives within
    BACK_TO_BACK_US of the first (the access link is a veth: no transmission time of its own).
    The emulator's arrival times were checked against packet captures with kernel timestamps
    on the sender's interface and the router's ingress: the same pairs are back to back in all
    three (±1 pair per run), so the log measures the sender, not the emulator's scheduling.

    With `skip_stalls`, a train that follows a silence of at least half its length in the
    flow's usual spacing, after a packet that was itself paced, is set aside: the host stalled
    (on these VMs the virtual CPUs stop for milliseconds now and then, tests/fidelity.py) and
    what the sender owed, or what waited in the path, arrived at once. A burst the sender chose
    comes after its usual spacing (a big skb is followed by its silence, not preceded)."""
    _, log = read_packet_log(run_dir / "link-0-data.bin")
    records = np.array(log)
    data = records[records["len"] > 1000]
    # Forwarded packets are logged at release and drops at arrival: order by arrival.
    arrivals = np.sort(data["arrival_us"].astype(np.int64), kind="stable")
    dropped = np.sort(data["arrival_us"][data["fate"] != 0].astype(np.int64))
    end = dropped[0] if len(dropped) else arrivals[0] + 2_000_000
    first = arrivals[arrivals < end]
    gaps = np.diff(first)
    back_to_back = gaps < BACK_TO_BACK_US
    unpaced_pairs = KERNEL_UNPACED_SEGMENTS - 1
    # Trains after the unpaced segments: (index of their first back-to-back gap, gaps).
    trains, i = [], unpaced_pairs
    while i < len(gaps):
        if back_to_back[i]:
            j = i
            while j < len(gaps) and back_to_back[j]:
                j += 1
            trains.append((i, j - i))
            i = j
        else:
            i += 1
    stalls = []
    if skip_stalls:
        for start, length in trains:
            before = gaps[max(start - 9, 0) : start - 1]
            usual = (
                np.median(before[before >= BACK_TO_BACK_US])
                if np.any(before >= BACK_TO_BACK_US)
                else None
            )
            paced_before = start >= 2 and not back_to_back[start - 2]
            if usual is not None and paced_before and gaps[start - 1] >= 0.5 * length * usual:
                stalls.append((start, length))
    kept = [t for t in trains if t not in stalls]
    return (
        len(first),
        int(np.count_nonzero(back_to_back[:unpaced_pairs])),
        sum(length for _, length in kept),
        max((length + 1 for _, length in kept), default=1),
        [length + 1 for _, length in stalls],
    )


def trace_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "bpf-trace.jsonl").read_text().splitlines()]


@pytest.mark.root
def test_westwood_estimates_the_bandwidth_and_sets_ssthresh_from_it(tmp_path: Path) -> None:
    """Seed 003 §III-A: BSE, low-pass filtered from the ACK rate, converges to the flow's
    delivery rate; after a loss ssthresh = BSE x RTTmin / segment size (the trace shows both,
    and the kernel's ssthresh in the next sample). A quarter-BDP buffer makes losses frequent."""
    before = HostState.capture()
    analysis, _ = run(
        single_flow({"algorithm": "westwood", "runtime": "bpf"}, "0.25bdp", "8s"),
        tmp_path / "w",
        "westwood",
    )
    samples = trace_of(tmp_path / "w")
    t0 = samples[0]["ts"]
    late = [s["state"]["bse_bps"] for s in samples if s["ts"] - t0 > 5]
    goodput = throughput(analysis)
    print(f"westwood: BSE late mean {sum(late) / len(late) / 1e6:.2f} Mbit/s, goodput "
          f"{goodput / 1e6:.2f} Mbit/s")  # fmt: skip
    assert sum(late) / len(late) == pytest.approx(goodput, rel=0.1)
    checked = 0
    for sample, after in zip(samples, samples[1:], strict=False):
        state = sample["state"]
        if sample["event"] != "loss" or not state["bse_bps"]:
            continue
        expected = max(int(state["bse_bps"] / 8 * state["rtt_min_us"] / 1e6 / 1448), 2)
        assert abs(after["ssthresh_pkts"] - expected) <= 1, (sample, after)
        checked += 1
    assert checked >= 3
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_paced_variants_send_no_bursts_in_slow_start(tmp_path: Path) -> None:
    """Seed 003: unpaced slow start sends two segments per ACK, back to back; the paced
    variants space them (at cwnd/RTT, BSE or alpha x BSE). In the bottleneck's arrival log
    (slow_start_bursts), most of Reno's first slow start arrives back-to-back; after the first
    10 segments, which Linux never paces (KERNEL_UNPACED_SEGMENTS), Paced NewReno sends none.
    Paced Westwood can starve itself (BSE measured while paced at BSE, the seed's Fig. 5);
    alpha = 2 removes that (Fig. 6) and matches Paced NewReno (Fig. 7)."""
    before = HostState.capture()
    results = {}
    for algorithm in ("reno", "paced_newreno", "paced_westwood", "alpha_paced_westwood"):
        flow = {"algorithm": algorithm}
        if algorithm != "reno":
            flow["runtime"] = "bpf"
        analysis, _ = run(single_flow(flow, "1bdp", "8s"), tmp_path / algorithm, algorithm)
        packets, unpaced_pairs, paced_pairs, train, stalls = slow_start_bursts(
            tmp_path / algorithm, skip_stalls=algorithm != "reno"
        )
        results[algorithm] = (packets, paced_pairs / (packets - KERNEL_UNPACED_SEGMENTS),
                              throughput(analysis), train)  # fmt: skip
        print(f"{algorithm}: first slow start {packets} packets, back-to-back pairs: "
              f"{unpaced_pairs} in the first {KERNEL_UNPACED_SEGMENTS} segments, {paced_pairs} "
              f"after ({results[algorithm][1]:.1%}), longest train {train} packets, goodput "
              f"{throughput(analysis) / 1e6:.2f} Mbit/s; trains after a stall, set aside: "
              f"{stalls}")  # fmt: skip
    assert results["reno"][1] > 0.4 and results["reno"][3] >= 3
    for algorithm in ("paced_newreno", "paced_westwood", "alpha_paced_westwood"):
        packets, share, _, train = results[algorithm]
        assert packets > 50, (algorithm, packets)
        # No burst. The Westwood variants used to send, in about half the runs, one skb of
        # cwnd/2 segments (tens of packets) back to back (tcp_write_xmit:
        # min(tcp_tso_segs(), tcp_cwnd_test())) whenever the BPF min_tso_segs op's value was
        # not honoured; their window now stays within two segments of what the pacer keeps in
        # flight (westwood_common.h), as Paced NewReno's does by construction, so such an skb
        # is at most a pair: 0-10 stray pairs per run measured (at most 1.8%), Paced NewReno
        # none, the longest train 2 packets on a quiet host. With other work on the CPUs (CI
        # builds its tools beside the tests) a pacing timer now and then fires late and the
        # kernel sends what it owed at once: trains of 4 packets, in 3 of 4 runs of Alpha
        # Paced Westwood measured under two SCHED_IDLE busy loops, never longer. A timer late by
        # milliseconds (the VM's CPUs stalled: once in CI, Paced NewReno's 9-packet train) shows
        # as silence then a train, which slow_start_bursts sets aside and the test prints.
        # Twice in CI (2026-11-25) a Westwood variant still sent one train of 7-10 packets
        # followed by its silence, in its first window, which the window bound does not cover;
        # their senders' interfaces now send one segment per skb (gso_max_segs 1, planning.py).
        assert train <= 4, (algorithm, train)
        assert share <= (0.01 if algorithm == "paced_newreno" else 0.04), (algorithm, share)
    # Paced Westwood's starvation depends on its first BSE sample (3.2 to 7.9 Mbit/s across
    # runs here), so only its corrected form is held to the seed's result (Fig. 7).
    goodput = {a: r[2] for a, r in results.items()}
    assert goodput["alpha_paced_westwood"] > 0.97 * goodput["paced_newreno"]
    # The paced flows' state traces carry the rate they paced at.
    state = trace_of(tmp_path / "alpha_paced_westwood")
    assert any(s["state"]["pacing_rate_bps"] > 0 for s in state)
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_dual_cuts_an_eighth_when_the_rtt_exceeds_its_threshold(tmp_path: Path) -> None:
    """Seed 002's Dual: every other RTT, when the RTT exceeds (Dmin + Dmax) / 2, cwnd -= cwnd/8.
    Each cut is traced (before it) with the threshold, Dmin, Dmax and the RTT, and the round
    sample right after shows the cut window. At a 4-BDP buffer, where Reno would fill 132
    packets, the queue stays small and the link busy, without a loss."""
    before = HostState.capture()
    analysis, _ = run(
        single_flow({"algorithm": "dual", "runtime": "bpf"}, "4bdp"), tmp_path / "d", "dual"
    )
    samples = trace_of(tmp_path / "d")
    cuts = 0
    for sample, after in zip(samples, samples[1:], strict=False):
        if sample["event"] != "change":
            continue
        state, cwnd = sample["state"], sample["cwnd_pkts"]
        assert state["threshold_us"] == state["dmin_us"] + (
            (state["dmax_us"] - state["dmin_us"]) * 128 >> 8
        )
        assert state["rtt_us"] > state["threshold_us"], sample
        assert after["cwnd_pkts"] == max(cwnd - (cwnd + 4) // 8, 2), (sample, after)
        cuts += 1
    aggregate = analysis.summary.aggregate
    print(f"dual: {cuts} cuts, queue mean {aggregate.queue_mean_pkts:.1f} pkts, utilization "
          f"{aggregate.utilization:.3f}, drops {aggregate.drops}")  # fmt: skip
    assert cuts >= 10
    assert aggregate.queue_mean_pkts is not None and aggregate.queue_mean_pkts < 20
    assert (aggregate.utilization or 0) > 0.95 and aggregate.drops == 0
    assert HostState.capture().leftovers_since(before) == []


@pytest.mark.root
def test_aaimd_backs_off_by_rttmin_over_rttmax_and_keeps_small_buffers_busy(
    tmp_path: Path,
) -> None:
    """Seed 001: at each congestion event beta = RTTmin / RTTmax (clamped to [0.5, 0.8]) and
    cwnd becomes beta x cwnd; alpha = 2 (1 - beta). The trace carries beta, alpha, RTTmin and
    the RTTmax beta came from; the kernel's ssthresh in the next sample is the backed-off
    window. With a half-BDP buffer the gentler backoff keeps the link busier than Reno's."""
    before = HostState.capture()
    reno, _ = run(single_flow({"algorithm": "reno"}, "0.5bdp"), tmp_path / "r", "aaimd-r")
    aaimd, _ = run(
        single_flow({"algorithm": "aaimd", "runtime": "bpf"}, "0.5bdp"), tmp_path / "a", "aaimd"
    )
    samples = trace_of(tmp_path / "a")
    events = 0
    for sample, after in zip(samples, samples[1:], strict=False):
        if sample["event"] != "loss" or not sample["state"]["rtt_max_us"]:
            continue
        state = sample["state"]
        ratio_x256 = state["rtt_min_us"] * 256 // state["rtt_max_us"]
        beta_x256 = min(max(ratio_x256, 128), 205)
        assert state["beta"] * 256 == beta_x256, sample
        assert state["alpha"] == 2 * (1 - state["beta"])
        assert after["ssthresh_pkts"] == max(sample["cwnd_pkts"] * beta_x256 // 256, 2), after
        events += 1
    betas = [s["state"]["beta"] for s in samples if s["event"] == "loss"]
    utilization = (reno.summary.aggregate.utilization, aaimd.summary.aggregate.utilization)
    print(f"aaimd: {events} congestion events, beta {min(betas):.3f}-{max(betas):.3f}; "
          f"utilization reno {utilization[0]:.3f}, aaimd {utilization[1]:.3f}")  # fmt: skip
    assert events >= 5
    assert any(0.5 < b < 0.8 for b in betas)  # tracking the ratio, not pinned to a clamp
    # Busier than Reno: by 0.054 (0.997 against 0.943) when this was written, by 0.028 (0.971
    # against 0.943) in a full test run on a stalling VM, 2026-11-24; Reno's own spread between
    # runs is under 0.01.
    assert (utilization[1] or 0) > (utilization[0] or 0) + 0.01
    assert HostState.capture().leftovers_since(before) == []
