"""The `hosts` testbed's Ansible layer against real sshd: network-namespace hosts
(tests/sshhosts.py) probed, provisioned and driven through a trial by the playbooks, plus the
failures a real lab produces (a host down, a wrong host key, a missing controller)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ccbench.settings import get_settings
from tests.hoststate import HostState
from tests.sshhosts import PREFIX, SshHosts
from workers import bpf, bpf_host
from workers.testbeds.hosts import ansible, errors, inventory

pytestmark = pytest.mark.root

TRIAL_DURATION_S = 3.0
# Per-netns sysctls only: the namespace hosts cannot (and must not) change the machine's
# global ones such as net.core.rmem_max.
SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 33554432", "net.ipv4.tcp_wmem": "4096 16384 33554432"}


def allowed_controls() -> list[str]:
    """Already allowed, so provisioning writes nothing global (the allowed list belongs to the
    root namespace, which the namespace hosts may not write)."""
    return Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()


def artifacts(tmp: Path, **changes: Any) -> dict[str, Any]:
    """What provisioning installs: a snapshot of the built agents (a rebuild while the test
    runs must not change what it compares against)."""
    snapshot = tmp / "agents"
    snapshot.mkdir(exist_ok=True)
    for binary in ("ccbench-agent", "ccbench-link"):
        shutil.copy2(get_settings().agents_dir / binary, snapshot / binary)
    return {
        "agent_binary": str(snapshot / "ccbench-agent"),
        "link_binary": str(snapshot / "ccbench-link"),
        "congestion_controls": allowed_controls(),
        "sysctls": SYSCTLS,
        **changes,
    }


def ssh_masters(net: int) -> list[str]:
    """Sockets some process (an ssh ControlPersist master) still holds towards the harness's
    subnet; masters rename themselves, so look at their connections, not their names."""
    out = subprocess.run(
        ["ss", "-Htnp", "dst", f"10.77.{net}.0/24"], capture_output=True, text=True
    ).stdout
    return [line for line in out.splitlines() if "users:" in line]


@pytest.fixture
def hosts() -> Iterator[SshHosts]:
    before = HostState.capture()
    with SshHosts(2) as harness:
        tmp = harness.tmp
        yield harness
    net = harness.net
    deadline = time.monotonic() + 5
    while ssh_masters(net) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ssh_masters(net) == []
    assert tmp is not None and not tmp.exists()
    # Other test runs may share this machine: everything this harness creates (namespaces,
    # links, install paths and so agent command lines) carries the ccbh prefix.
    leftovers = HostState.capture().leftovers_since(before)
    assert [problem for problem in leftovers if PREFIX in problem] == []


def agent_processes(prefix: str) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-f", f"^{prefix}/bin/"], capture_output=True, text=True)
    return out.stdout.splitlines()


def tcp_trial(
    src: str, dst: str, address: str, cc: str, duration_s: float, *, check_cc: bool = True
) -> dict[str, Any]:
    """One kernel TCP flow from host src to host dst listening on address (host:port)."""
    port = address.rsplit(":", 1)[1]
    return {
        "receivers": [{"host": dst, "name": "flow-0.recv", "files": ["flow-0.recv.jsonl"],
                       "args": ["recv", "--listen", f"0.0.0.0:{port}", "--out",
                                "flow-0.recv.jsonl"]}],
        "senders": [{"host": src, "name": "flow-0.send", "files": ["flow-0.send.jsonl"],
                     "cc": cc if check_cc else "", "duration_s": duration_s,
                     "args": ["send", "--cc", cc, "--dst", address, "--duration-s",
                              str(duration_s), "--out", "flow-0.send.jsonl"]}],
    }  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_probe_reports_this_kernel(hosts: SshHosts) -> None:
    log: list[str] = []
    facts = ansible.probe(hosts.as_dicts(), on_log=log.append)
    assert set(facts) == {"h1", "h2"}
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    for name, host in facts.items():
        assert host["kernel"] == platform.release() == os.uname().release, name
        assert host["btf"] is Path("/sys/kernel/btf/vmlinux").exists() is True
        assert {"reno", "cubic"} <= set(host["congestion_controls"]["available"])
        assert host["congestion_controls"]["available"] == available
        assert host["congestion_controls"]["allowed"] == allowed_controls()
        assert {"pfifo", "htb"} <= set(host["qdiscs"])
        assert host["netem"] is ("netem" in host["qdiscs"])
        assert isinstance(host["clock"]["synchronized"], bool)
        assert host["agent_versions"] == {"ccbench-agent": None, "ccbench-link": None}
    # One log line per task and host.
    assert any(
        line.startswith("ok") and "h1 | Probe | Read the host's capabilities" in line
        for line in log
    )


def test_provision_twice_changes_nothing_the_second_time(hosts: SshHosts, tmp_path: Path) -> None:
    wanted = artifacts(tmp_path)
    started = time.monotonic()
    first = ansible.provision(hosts.as_dicts(), wanted)
    first_s = time.monotonic() - started
    assert first.changed() > 0
    started = time.monotonic()
    second = ansible.provision(hosts.as_dicts(), wanted)
    second_s = time.monotonic() - started
    assert second.changed() == 0, second.stats
    print(f"provision 2 hosts: first {first_s:.2f} s, again {second_s:.2f} s")

    built = Path(wanted["agent_binary"]).read_bytes()
    for name in ("h1", "h2"):
        installed = hosts[name].prefix / "bin" / "ccbench-agent"
        assert installed.read_bytes() == built
        assert os.access(installed, os.X_OK)
        rmem = hosts.exec(name, "sysctl", "-n", "net.ipv4.tcp_rmem").stdout.split()
        assert rmem == SYSCTLS["net.ipv4.tcp_rmem"].split()
    version = subprocess.run(
        [wanted["agent_binary"], "--version"], capture_output=True, text=True
    ).stdout.strip()
    facts = ansible.probe(hosts.as_dicts())
    assert facts["h1"]["agent_versions"]["ccbench-agent"] == version


def test_missing_controller_fails_before_anything_runs(hosts: SshHosts, tmp_path: Path) -> None:
    wanted = artifacts(tmp_path, congestion_controls=["reno", "ccbnone"])
    with pytest.raises(errors.CapabilityMissing) as caught:
        ansible.provision(hosts.as_dicts(), wanted)
    assert caught.value.host in ("h1", "h2")
    assert set(caught.value.hosts) == {"h1", "h2"}
    assert "congestion control ccbnone is not available on" in str(caught.value)


def test_trial_between_two_hosts(hosts: SshHosts, tmp_path: Path) -> None:
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5001", "reno", TRIAL_DURATION_S)
    trial["paths"] = [{"host": "h1", "name": "flow-0", "address": hosts["h2"].address}]
    log: list[str] = []
    started = time.monotonic()
    result = ansible.run_trial(hosts.as_dicts(), trial, tmp_path, on_log=log.append)
    wall = time.monotonic() - started
    print(f"trial: wall {wall:.2f} s, overhead {wall - TRIAL_DURATION_S:.2f} s")

    assert [f.name for f in result.files] == ["flow-0.recv.jsonl", "flow-0.send.jsonl"]
    path = result.reports["h1"]["paths"]["flow-0"]
    assert 0 < path["ping_rtt_s"]["min"] < 0.01
    assert path["path_mtu"] == {"dev": "eth0", "mtu": 1500, "verified": True}
    # Both hosts read the same machine's clock: the offset is below the 1 ms resolution.
    assert abs(path["clock"]["offset_s"]) <= 0.002, path["clock"]
    assert result.agents == {
        "h1": {"flow-0.send": {"rc": 0, "stderr": ""}},
        "h2": {"flow-0.recv": {"rc": 0, "stderr": ""}},
    }
    sent = read_jsonl(tmp_path / "flow-0.send.jsonl")
    summary = [line for line in sent if line["type"] == "summary"]
    assert len(summary) == 1 and summary[0]["cc"] == "reno"
    assert abs(summary[0]["start_ts"] - result.start_at) < 0.1
    assert abs(summary[0]["end_ts"] - summary[0]["start_ts"] - TRIAL_DURATION_S) < 0.2
    assert sum(1 for line in sent if line["type"] == "tcp_info") > 100
    received = read_jsonl(tmp_path / "flow-0.recv.jsonl")
    closes = [line for line in received if line["type"] == "close"]
    assert len(closes) == 1 and closes[0]["peer"].startswith(hosts["h1"].address + ":")
    # The receiver got what the sender saw acknowledged (up to the bytes in flight at the end).
    assert (
        abs(closes[0]["total_bytes"] - summary[0]["bytes_acked"]) < 0.01 * closes[0]["total_bytes"]
    )
    # Started after the receivers listened, at the common start.
    assert closes[0]["first_byte_ts"] >= result.start_at - 0.01
    # Nothing left on the hosts: no agent, no trial directory.
    for name in ("h1", "h2"):
        assert agent_processes(str(hosts[name].prefix)) == []
        assert list((hosts[name].prefix / "runs").iterdir()) == []
    assert any("changed     h1 | Trial | Start the senders" in line for line in log)


def test_missing_controller_fails_the_trial_before_anything_starts(
    hosts: SshHosts, tmp_path: Path
) -> None:
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    log: list[str] = []
    trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5001", "ccbnone", 3)
    with pytest.raises(errors.CapabilityMissing) as caught:
        ansible.run_trial(hosts.as_dicts(), trial, tmp_path / "out", on_log=log.append)
    assert caught.value.host == "h1" and caught.value.hosts == ["h1"]
    assert "congestion control ccbnone is not available in kernel" in str(caught.value)
    assert not any("Start the receivers" in line and "changed" in line for line in log)
    for name in ("h1", "h2"):
        assert agent_processes(str(hosts[name].prefix)) == []


def test_failing_sender_is_named_with_its_error(hosts: SshHosts, tmp_path: Path) -> None:
    """A sender that fails on the host (here its controller, not checked beforehand) fails
    the trial with the agent's own error, naming host and agent; the receiver is stopped."""
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5001", "ccbnone", 3, check_cc=False)
    started = time.monotonic()
    with pytest.raises(errors.TaskFailed) as caught:
        ansible.run_trial(hosts.as_dicts(), trial, tmp_path / "out")
    assert time.monotonic() - started < 15
    assert caught.value.host == "h1" and caught.value.hosts == ["h1"]
    # Reported by the start or the wait step, whichever sees the exit first.
    assert re.search(r"agent flow-0\.send exited (at start )?with code 2", str(caught.value))
    assert "congestion control 'ccbnone' is not available" in str(caught.value)
    for name in ("h1", "h2"):
        assert agent_processes(str(hosts[name].prefix)) == []
        assert list((hosts[name].prefix / "runs").iterdir()) == []


def test_trial_timeout_is_reported_and_cleaned_up(hosts: SshHosts, tmp_path: Path) -> None:
    """A trial whose play is killed (time limit) is cleaned up from outside: its agents and
    directory are gone, while another trial on the same hosts at the same time goes on."""
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    other = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5002", "cubic", 15)
    with ThreadPoolExecutor(max_workers=1) as pool:
        concurrent = pool.submit(ansible.run_trial, hosts.as_dicts(), other, tmp_path / "other")
        # The trial to kill starts once the other's sender runs (on a busy host its play may
        # take longer than the 6 s limit to get there), so the kill and the cleanup from
        # outside (6 s later) happen while the other's 15 s flow runs ...
        deadline = time.monotonic() + 60
        while len(agent_processes(str(hosts["h1"].prefix))) != 1:
            assert not concurrent.done(), concurrent.result()
            assert time.monotonic() < deadline, "the other trial's sender never started"
            time.sleep(0.1)
        trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5001", "reno", 30)
        with pytest.raises(errors.PlaybookTimeout) as caught:
            ansible.run_trial(hosts.as_dicts(), trial, tmp_path / "out", timeout_s=6)
        assert "trial.yml did not finish within 6 s on hosts h1, h2" in str(caught.value)
        # ... and leave it running: it ends by itself, with its whole 15 s sent (below).
        result = concurrent.result()
    assert result.agents == {
        "h1": {"flow-0.send": {"rc": 0, "stderr": ""}},
        "h2": {"flow-0.recv": {"rc": 0, "stderr": ""}},
    }
    summary = read_jsonl(tmp_path / "other" / "flow-0.send.jsonl")[-1]
    assert summary["type"] == "summary" and summary["end_ts"] - summary["start_ts"] > 14.8
    for name in ("h1", "h2"):
        assert agent_processes(str(hosts[name].prefix)) == []
        assert list((hosts[name].prefix / "runs").iterdir()) == []


def test_unreachable_host_is_named_and_the_others_are_left_clean(
    hosts: SshHosts, tmp_path: Path
) -> None:
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    hosts.stop_sshd("h2")
    with pytest.raises(errors.HostUnreachable) as caught:
        ansible.probe(hosts.as_dicts())
    assert caught.value.host == "h2" and caught.value.hosts == ["h2"]
    assert caught.value.reason == "connection refused", str(caught.value)
    assert "host h2 is unreachable" in str(caught.value)

    # h1 receives and starts listening; h2 should send but cannot be reached: the trial
    # fails naming h2, and h1's receiver does not keep running.
    trial = tcp_trial("h2", "h1", f"{hosts['h1'].address}:5001", "reno", TRIAL_DURATION_S)
    log: list[str] = []
    with pytest.raises(errors.HostUnreachable) as caught:
        ansible.run_trial(hosts.as_dicts(), trial, tmp_path, on_log=log.append)
    assert caught.value.host == "h2"
    assert any("ok          h1 | Trial | Check the agents" in line for line in log)
    assert agent_processes(str(hosts["h1"].prefix)) == []
    assert list((hosts["h1"].prefix / "runs").glob("*")) == []
    ansible.cleanup([hosts["h1"].as_dict()])


def test_wrong_host_key_is_refused(hosts: SshHosts, tmp_path: Path) -> None:
    """Host keys are checked: h1 presenting a key other than the pinned one is unreachable."""
    h1, h2 = hosts["h1"], hosts["h2"]
    h2_key = next(
        line
        for line in h1.known_hosts.read_text().splitlines()
        if line.startswith(h2.address + " ")
    )
    wrong = tmp_path / "known_hosts"
    wrong.write_text(h2_key.replace(h2.address, h1.address, 1) + "\n")
    with pytest.raises(errors.HostUnreachable) as caught:
        ansible.probe([{**h1.as_dict(), "known_hosts_path": str(wrong)}])
    assert caught.value.host == "h1"
    assert caught.value.reason == "host key verification failed"


def test_cleanup_stops_leftover_agents_and_uninstalls(hosts: SshHosts, tmp_path: Path) -> None:
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path))
    h1 = hosts["h1"]
    # An agent a lost trial left behind, started the way the playbook starts agents.
    leftover = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            h1.namespace,
            str(h1.prefix / "bin" / "ccbench-agent"),
            "recv",
            "--listen",
            f"{h1.address}:5002",
            "--out",
            "/dev/null",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        while not agent_processes(str(h1.prefix)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert agent_processes(str(h1.prefix))
        result = ansible.cleanup(hosts.as_dicts(), uninstall=True)
        assert leftover.wait(timeout=5) == -9
        assert result.stats["h1"]["changed"] >= 1
        assert not h1.prefix.exists() and not hosts["h2"].prefix.exists()
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


needs_bpf = pytest.mark.skipif(
    shutil.which("bpftool") is None or shutil.which("clang-14") is None,
    reason="needs bpftool and clang-14 (scripts/install.sh installs them)",
)


def bpf_sources(tmp: Path) -> Path:
    """A snapshot of agents/kernel's sources (a change while the test runs must not matter)."""
    snapshot = tmp / "kernel"
    shutil.copytree(bpf.KERNEL_DIR / "bpf", snapshot / "bpf")
    shutil.copy2(bpf.KERNEL_DIR / "Makefile", snapshot / "Makefile")
    return snapshot


def bpf_trial(
    hosts: SshHosts, key: str, port: int, duration_s: float, sources: Path
) -> dict[str, Any]:
    """One flow from h1 to h2 with a BPF bfa controller registered on h1 for the trial."""
    name = bpf.controller_name(key, 0, "bfa")
    params = {"sigma_on": 0.02, "sigma_off": -0.02, "alpha_srv": 0.75}
    trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:{port}", name, duration_s,
                      check_cc=False)  # fmt: skip
    trial["controllers"] = [{"host": "h1", "name": name, "algorithm": "bfa",
                             "symbols": bpf.symbol_values("bfa", params)}]  # fmt: skip
    trial["bpf_source_sha256"] = bpf_host.source_digest(sources)
    return trial


def controllers_named(prefix: str) -> list[str]:
    """The kernel's BPF controllers (live or pending) whose name starts with prefix."""
    return sorted(f"{m.name} {m.state}" for m in bpf_host.ops_maps() if m.name.startswith(prefix))


def ledgers(host: Any) -> list[Path]:
    return sorted((host.prefix / "lib" / "bpf" / "registered").glob("*"))


@needs_bpf
def test_bpf_controllers_are_built_on_the_host_registered_and_removed(
    hosts: SshHosts, tmp_path: Path
) -> None:
    """Provisioning builds the BPF objects on the sender's host against its kernel (once: a
    second provisioning changes nothing); a trial registers its controller there under the
    run's name with the run's tunables, the flow uses it, and the play unregisters it. Sources
    other than the host's build fail the preflight as "not provisioned"."""
    sources = bpf_sources(tmp_path)
    wanted = artifacts(tmp_path, bpf_source_dir=str(sources), bpf_hosts=["h1"])
    log: list[str] = []
    started = time.monotonic()
    ansible.provision(hosts.as_dicts(), wanted, on_log=log.append)
    print(f"provision with the BPF build on h1: {time.monotonic() - started:.2f} s")
    assert any("changed     h1 | Provision | Build the BPF controllers" in line for line in log)
    assert any("skipped     h2 | Provision | Build the BPF controllers" in line for line in log)
    build = hosts["h1"].prefix / "lib" / "bpf" / "build"
    stamp = json.loads((build / "stamp.json").read_text())
    assert stamp["source_sha256"] == bpf_host.source_digest(bpf.KERNEL_DIR)
    assert stamp["btf_sha256"] == bpf_host.btf_digest()
    assert {p.name for p in build.glob("*.bpf.o")} == {
        p.name.replace(".c", ".o") for p in (sources / "bpf").glob("*.bpf.c")
    }
    assert not (hosts["h2"].prefix / "lib" / "bpf" / "build").exists()
    again = ansible.provision(hosts.as_dicts(), wanted)
    assert again.changed() == 0, again.stats

    key = f"ansible-{hosts.tag}"
    trial = bpf_trial(hosts, key, 5001, TRIAL_DURATION_S, sources)
    [controller] = trial["controllers"]
    result = ansible.run_trial(hosts.as_dicts(), trial, tmp_path / "out", trial_id=f"t-{hosts.tag}")
    # The agent read the controller back from its socket (getsockopt TCP_CONGESTION).
    summary = read_jsonl(tmp_path / "out" / "flow-0.send.jsonl")[-1]
    assert summary["type"] == "summary" and summary["cc"] == controller["name"]
    assert summary["bytes_acked"] > 1e6
    registered = result.reports["h1"]["bpf_controllers"]
    assert list(registered) == [controller["name"]]
    assert registered[controller["name"]]["algorithm"] == "bfa"
    assert result.reports["h1"]["bpf_teardown"] == {controller["name"]: "removed"}
    assert "bpf_controllers" not in result.reports["h2"]
    assert controllers_named(f"cb{bpf.run_tag(key)}") == []
    assert ledgers(hosts["h1"]) == []
    assert list((hosts["h1"].prefix / "runs").iterdir()) == []

    # Objects built from other sources (the worker's ccbench changed): provision first.
    stale = {**bpf_trial(hosts, f"{key}-stale", 5002, 1, sources), "bpf_source_sha256": "0" * 64}
    with pytest.raises(errors.NotProvisioned, match="built from other sources"):
        ansible.run_trial(hosts.as_dicts(), stale, tmp_path / "stale")
    assert controllers_named(f"cb{bpf.run_tag(f'{key}-stale')}") == []


@needs_bpf
def test_bpf_controllers_are_removed_after_a_failure_and_a_killed_play(
    hosts: SshHosts, tmp_path: Path
) -> None:
    """A trial that fails after registering (its sender finds no receiver) still unregisters
    its controller in the play's `always`; a play killed mid-run (time limit) is cleaned up
    from outside, by the trial's ledger on the host."""
    sources = bpf_sources(tmp_path)
    ansible.provision(hosts.as_dicts(), artifacts(tmp_path, bpf_source_dir=str(sources),
                                                  bpf_hosts=["h1"]))  # fmt: skip
    key = f"ansible-{hosts.tag}"
    failing = bpf_trial(hosts, f"{key}-fail", 5001, TRIAL_DURATION_S, sources)
    failing["receivers"] = []  # nobody listens: the sender's connect is refused
    log: list[str] = []
    with pytest.raises(errors.TaskFailed) as caught:
        ansible.run_trial(hosts.as_dicts(), failing, tmp_path / "fail", on_log=log.append)
    assert caught.value.host == "h1" and "flow-0.send" in str(caught.value)
    assert any("changed     h1 | Trial | Register the trial's BPF" in line for line in log)
    assert any("changed     h1 | Trial | Unregister the trial's BPF" in line for line in log)
    assert controllers_named(f"cb{bpf.run_tag(f'{key}-fail')}") == []
    assert ledgers(hosts["h1"]) == []

    killed = bpf_trial(hosts, f"{key}-kill", 5003, 30, sources)
    name = killed["controllers"][0]["name"]
    log = []
    with pytest.raises(errors.PlaybookTimeout):
        ansible.run_trial(hosts.as_dicts(), killed, tmp_path / "kill", timeout_s=8,
                          trial_id=f"k-{hosts.tag}", on_log=log.append)  # fmt: skip
    assert any("changed     h1 | Trial | Register the trial's BPF" in line for line in log)
    assert any("h1 | Cleanup | Unregister the BPF controllers" in line for line in log), log
    assert controllers_named(name) == []
    assert ledgers(hosts["h1"]) == []
    assert agent_processes(str(hosts["h1"].prefix)) == []


def test_bad_descriptions_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(errors.HostSpecError, match="field 'address' is required"):
        inventory.parse_hosts([{"name": "h1"}])
    with pytest.raises(errors.HostSpecError, match="host names must be unique"):
        inventory.parse_hosts([{"name": "a", "address": "x"}, {"name": "a", "address": "y"}])
    with pytest.raises(errors.HostSpecError, match="unknown field"):
        inventory.parse_hosts([{"name": "a", "address": "x", "adress": "y"}])
    hosts = [{"name": "a", "address": "10.0.0.1"}]
    with pytest.raises(errors.HostSpecError, match=r"senders\[0\]: host 'b' is not among"):
        ansible.run_trial(
            hosts,
            {"senders": [{"host": "b", "name": "f", "args": ["send"], "duration_s": 1}]},
            tmp_path,
        )
    with pytest.raises(errors.HostSpecError, match="field 'agent_binary'"):
        ansible.provision(hosts, {"agent_binary": str(tmp_path / "missing")})
    with pytest.raises(errors.HostSpecError, match="field 'bpf_source_dir'"):
        ansible.provision(hosts, {"bpf_source_dir": str(tmp_path)})
    sender = {"host": "a", "name": "f", "args": ["send"], "duration_s": 1}
    controller = {"host": "a", "name": "cb0a1b2c0_bfa", "algorithm": "bfa", "symbols": {}}
    for bad, message in (
        ({**controller, "host": "b"}, r"controllers\[0\]: field 'host'"),
        ({**controller, "name": "bfa"}, r"controllers\[0\]: field 'name' is not a ccbench"),
        ({**controller, "algorithm": "x;y"}, r"controllers\[0\]: field 'algorithm'"),
    ):
        with pytest.raises(errors.HostSpecError, match=message):
            ansible.run_trial(hosts, {"senders": [sender], "controllers": [bad],
                                      "bpf_source_sha256": "0" * 64}, tmp_path)  # fmt: skip
    with pytest.raises(errors.HostSpecError, match="'bpf_source_sha256' is required"):
        ansible.run_trial(hosts, {"senders": [sender], "controllers": [controller]}, tmp_path)
