"""The `hosts` testbed end to end over real SSH: namespace hosts with their own sshd
(tests/sshhosts.py) registered through the API, provisioned by the playbooks on the first run,
then experiments between them through a namespace router that emulates the bottleneck with
ccbench-link, and over the plain routed path; then the failures a lab produces: a congestion
control the host lacks (a clear error before any traffic), and a host whose sshd is down (the
run fails naming it, nothing keeps running on the others). A BPF controller (`runtime: bpf`)
is built on its sender's host on demand, registered for the run and removed afterwards."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import app
from ccbench import rundir
from ccbench.db.models import Run
from ccbench.db.session import session_scope
from ccbench.settings import get_settings
from tests.hoststate import HostState
from tests.sshhosts import PREFIX, SshHosts
from workers import bpf, bpf_host
from workers.lifecycle import execute

pytestmark = [pytest.mark.root, pytest.mark.services]

DURATION_S = 6.0


@pytest.fixture(scope="module")
def lab() -> Iterator[SshHosts]:
    """h1 (left), h2 (right) and the router r1 between them; torn down after the module,
    leaving nothing of the harness behind."""
    before = HostState.capture()
    with SshHosts(2, router=True) as hosts:
        yield hosts
    time.sleep(0.5)  # ssh ControlPersist masters notice their peers are gone
    leftovers = HostState.capture().leftovers_since(before)
    assert [problem for problem in leftovers if PREFIX in problem] == []


@pytest.fixture(scope="module")
def team(lab: SshHosts) -> dict[str, str]:
    """A team with the lab's three hosts in its inventory."""
    from ccbench import teams

    with session_scope() as session:
        token = teams.create_token(session, teams.create_team(session, f"lab-{lab.tag}"), "t")
    headers = {"Authorization": f"Bearer {token}"}
    client = TestClient(app)
    for host in lab.hosts.values():
        created = client.post("/v1/hosts", json=host.registration(), headers=headers)
        assert created.status_code == 201, created.text
        assert "PRIVATE KEY" not in created.text and '"private_key":' not in created.text
    return headers


def spec(flows: list[dict[str, Any]], *, router: str | None = "r1") -> dict[str, Any]:
    topology: dict[str, Any] = {
        "kind": "dumbbell",
        "bottleneck": {"rate": "20Mbit", "delay": "10ms", "buffer": "1bdp"},
    }
    if router is None:
        topology = {"kind": "path", "rate": "1Gbit"}
    return {
        "name": "hosts-e2e",
        "testbed": {"kind": "hosts", "router": router},
        "topology": topology,
        "flows": flows,
        "duration": f"{DURATION_S}s",
        "measurement": {"skip_start": "1s"},
    }


def submit_and_execute(headers: dict[str, str], body: dict[str, Any]) -> tuple[Run, float, int]:
    """Submit one run and execute it here until it ends; returns it, the wall time and the
    number of attempts."""
    client = TestClient(app)
    created = client.post("/v1/experiments", json=body, headers=headers)
    assert created.status_code == 201, created.text
    runs = client.get(f"/v1/experiments/{created.json()['id']}", headers=headers).json()["runs"]
    started = time.monotonic()
    # A run whose emulator the host's timer or load made late is queued to run again alone
    # (workers/packing.py): run it again, as a worker would (once in CI, 2026-12-07).
    attempts = 1
    while execute(runs[0]["id"], worker_id="hosts-test") == "queued":
        attempts += 1
        assert attempts <= 1 + get_settings().pack_load_reruns, "re-run past its bound"
    wall = time.monotonic() - started
    with session_scope() as session:
        run = session.get(Run, runs[0]["id"])
        assert run is not None
        session.expunge(run)
    return run, wall, attempts


def first_attempt_log(run: Run) -> str:
    """The run log of the run's first attempt (a re-run's provisioning happened there)."""
    runs_dir = Path(run.artifacts_dir or "").parents[1]
    return (rundir.attempt_dir(runs_dir, run.id, 1) / rundir.RUN_LOG).read_text()


def nothing_left(lab: SshHosts) -> None:
    """No agent or emulator of the harness's installs runs, no trial directory or router rule
    is left."""
    out = subprocess.run(["pgrep", "-a", "-f", f"/{PREFIX}{lab.tag}-.*/opt/bin/"],
                         capture_output=True, text=True).stdout  # fmt: skip
    assert out == ""
    for host in lab.hosts.values():
        assert list((host.prefix / "runs").glob("*")) == []
        if host.sshd is not None:
            rules = lab.exec(host.name, "iptables", "-S").stdout
            assert "CCB-" not in rules and "NFQUEUE" not in rules, rules


def two_flows() -> list[dict[str, Any]]:
    return [
        {"algorithm": "cubic", "src": "h1", "dst": "h2"},
        {"algorithm": "reno", "src": "h1", "dst": "h2", "start": "0.5s"},
    ]


def test_two_flows_through_an_emulating_router(lab: SshHosts, team: dict[str, str]) -> None:
    run, wall, attempts = submit_and_execute(team, spec(two_flows()))
    assert run.status == "done", run.error
    print(f"first run (provisioning {run.provenance.get('provision_s')} s): {wall:.2f} s")
    # A re-run finds the hosts its first attempt provisioned.
    assert run.provenance["provisioned"] == (["h1", "h2", "r1"] if attempts == 1 else [])
    report = TestClient(app).get(f"/v1/runs/{run.id}", headers=team).json()
    checks = {c["name"]: c for c in run.aggregate["checks"]}
    assert checks["rate"]["ok"] and checks["buffer"]["ok"] and checks["delay"]["ok"], checks
    assert checks["clock"]["ok"], checks["clock"]
    applied = run.aggregate["applied"]
    assert applied["link_mechanism"] == "emulator" and applied["queue_source"] == "emulator_log"
    assert applied["measured_rate_bps"] == pytest.approx(20e6, rel=0.05)
    goodputs = [f["metrics"]["goodput_bps"] for f in report["flows"]]
    assert sum(goodputs) == pytest.approx(20e6 * 1448 / 1500, rel=0.08), goodputs
    assert all(g > 2e6 for g in goodputs)
    assert 0.020 <= applied["measured_min_rtt_s"] <= 0.020 * 1.05 + 0.002
    assert run.aggregate["aggregate"]["queue_max_pkts"] <= applied["buffer_pkts"]

    # Provenance for a real path: base RTT and MTU measured before the flows, each
    # receiver's clock against its sender, and the agents found on every host.
    paths = run.provenance["paths"]
    assert set(paths) == {"flow-0", "flow-1"}
    assert paths["flow-0"]["address"] == lab["h2"].data_address
    assert 0.020 <= paths["flow-0"]["ping_rtt_s"]["min"] < 0.025
    assert paths["flow-0"]["path_mtu"]["mtu"] == 1500
    assert abs(run.provenance["receiver_clock_offset_s"]["0"]) <= 0.002
    versions = run.provenance["agent_versions"]
    assert set(versions) == {"h1", "h2", "r1"}
    assert versions["r1"]["ccbench-link"].startswith("ccbench-link ")
    assert versions["h1"]["ccbench-agent"].startswith("ccbench-agent ")
    assert run.provenance["router_rules"]["devices"] == {lab["h2"].data_address: "eth2"}

    # The run's log has every Ansible task; the files came back to the worker.
    run_dir = Path(run.artifacts_dir or "")
    log = (run_dir / "run.log").read_text()
    assert "r1 | Trial | Start the link emulators" in log
    assert "h1 | Trial | Start the senders" in log
    served = TestClient(app).get(f"/v1/runs/{run.id}/log", headers=team)
    assert served.status_code == 200 and served.text == log
    assert (run_dir / "link-0-data.bin").stat().st_size > 0
    assert not (run_dir / "ssh").exists()  # the decrypted keys are gone
    nothing_left(lab)

    # Provisioned now: the next run is one play; its overhead beyond the experiment's own
    # duration is what `make bench-hosts` reports.
    again, wall, _ = submit_and_execute(team, spec(two_flows()))
    assert again.status == "done", again.error
    assert again.provenance["provisioned"] == []
    print(f"second run: {wall:.2f} s for a {DURATION_S:g} s experiment")
    nothing_left(lab)


def test_flows_over_the_real_path(lab: SshHosts, team: dict[str, str]) -> None:
    """No router host: nothing is emulated, the flows cross the routed path as it is."""
    flows = [{"algorithm": "cubic", "src": "h1", "dst": "h2"},
             {"algorithm": "reno", "agent": "userspace", "src": "h2", "dst": "h1"}]  # fmt: skip
    run, _, _ = submit_and_execute(team, spec(flows, router=None))
    assert run.status == "done", run.error
    applied = run.aggregate["applied"]
    assert applied["link_mechanism"] == "none" and applied["queue_source"] == "none"
    assert applied["delay_s"] is None and applied["ping_rtt_min_s"] < 0.005
    checks = {c["name"]: c for c in run.aggregate["checks"]}
    assert list(checks) == ["clock", "controller_state"]
    assert checks["controller_state"]["ok"], checks["controller_state"]
    report = TestClient(app).get(f"/v1/runs/{run.id}", headers=team).json()
    goodputs = [f["metrics"]["goodput_bps"] for f in report["flows"]]
    assert all(g > 10e6 for g in goodputs), goodputs
    assert run.provenance["paths"]["flow-1"]["address"] == lab["h1"].data_address
    nothing_left(lab)


def test_unknown_host_is_refused_at_submission(team: dict[str, str]) -> None:
    flows = [{"algorithm": "cubic", "src": "h1", "dst": "nowhere"}]
    created = TestClient(app).post("/v1/experiments", json=spec(flows), headers=team)
    assert created.status_code == 422, created.text
    assert created.json()["errors"] == [
        {"field": "flows.0.dst", "reason": "host 'nowhere' is not in the team's inventory"}
    ]


def test_missing_controller_fails_before_any_traffic(lab: SshHosts, team: dict[str, str]) -> None:
    """vegas is a kernel module on normal servers; this kernel has none."""
    flows = [{"algorithm": "vegas", "src": "h1", "dst": "h2"}]
    run, _, _ = submit_and_execute(team, spec(flows))
    assert run.status == "failed"
    assert run.error is not None
    assert "host h1" in run.error and "congestion control vegas is not available" in run.error
    log = (Path(run.artifacts_dir or "") / "run.log").read_text()
    assert "Start the receivers" not in log and "Start the link emulators" not in log
    nothing_left(lab)


@pytest.mark.skipif(
    shutil.which("bpftool") is None or shutil.which("clang-14") is None,
    reason="needs bpftool and clang-14 (scripts/install.sh installs them)",
)
def test_bpf_controller_on_the_sender_host(lab: SshHosts, team: dict[str, str]) -> None:
    """`runtime: bpf` on hosts: the first such run provisions its sender (the objects built on
    h1 against its kernel), registers the run attempt's controller there, the flow uses it, and
    the play removes it. This kernel has no built-in vegas: the flow's few queued packets (Vegas
    holds alpha..beta, seed 002) come from ccbench's BPF Vegas, where a Reno-like flow would
    fill the 1-BDP buffer."""
    flows = [{"algorithm": "vegas", "runtime": "bpf", "src": "h1", "dst": "h2"}]
    run, wall, attempts = submit_and_execute(team, spec(flows))
    assert run.status == "done", run.error
    print(f"BPF run (provisioning {run.provenance.get('provision_s')} s): {wall:.2f} s")
    name = bpf.controller_name(bpf.attempt_key(run.id, run.attempt), 0, "vegas")
    [controller] = run.provenance["bpf_controllers"]
    assert (controller["name"], controller["host"]) == (name, "h1")
    assert controller["symbols"] == {"alpha_pkts": 1, "beta_pkts": 3, "gamma_pkts": 1}
    assert run.provenance["bpf_teardown"] == {name: "removed"}
    run_dir = Path(run.artifacts_dir or "")
    log = (run_dir / "run.log").read_text()
    # A re-run finds the hosts its first attempt provisioned (and built the controllers).
    assert run.provenance["provisioned"] == (["h1", "h2", "r1"] if attempts == 1 else [])
    provisioning = first_attempt_log(run)
    assert "changed     h1 | Provision | Build the BPF controllers" in provisioning
    assert "skipped     h2 | Provision | Build the BPF controllers" in provisioning
    assert "changed     h1 | Trial | Register the trial's BPF congestion controllers" in log
    # The sender read its socket's controller back (getsockopt TCP_CONGESTION).
    sent = [json.loads(line) for line in (run_dir / "flow-0.send.jsonl").read_text().splitlines()]
    assert sent[-1]["type"] == "summary" and sent[-1]["cc"] == name
    aggregate = run.aggregate["aggregate"]
    applied = run.aggregate["applied"]
    print(f"vegas on h1: queue mean {aggregate['queue_mean_pkts']:.2f} of "
          f"{applied['buffer_pkts']} pkts, utilization {aggregate['utilization']:.3f}")  # fmt: skip
    assert aggregate["queue_mean_pkts"] <= 6 and aggregate["utilization"] > 0.9
    # Nothing of it is left: not in the kernel, not in the host's ledger.
    assert not [m for m in bpf_host.ops_maps() if m.name == name]
    assert name not in bpf_host.available()
    assert list((lab["h1"].prefix / "lib" / "bpf" / "registered").glob("*")) == []
    nothing_left(lab)


def test_unreachable_host_fails_the_run_naming_it(lab: SshHosts, team: dict[str, str]) -> None:
    """Last: it stops h2's sshd for good."""
    lab.stop_sshd("h2")
    run, wall, _ = submit_and_execute(team, spec(two_flows()))
    assert run.status == "failed"
    assert run.error is not None and "host h2 is unreachable" in run.error, run.error
    assert wall < 60
    nothing_left(lab)
