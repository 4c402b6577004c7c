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
        trial = tcp_trial("h1", "h2", f"{hosts['h2'].address}:5001", "reno", 30)
        with pytest.raises(errors.PlaybookTimeout) as caught:
            ansible.run_trial(hosts.as_dicts(), trial, tmp_path / "out", timeout_s=6)
        assert "trial.yml did not finish within 6 s on hosts h1, h2" in str(caught.value)
        # The killed trial's cleanup happened while the other trial's flow was running.
        assert len(agent_processes(str(hosts["h1"].prefix))) == 1, "the other sender is gone"
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
