"""Test harness: network-namespace "hosts", each running its own Debian sshd, reachable over
real SSH from the root namespace (where Ansible runs).

    with SshHosts(2) as hosts:          # h1, h2
        hosts.as_dicts()                # what the `hosts` testbed is called with
        hosts.stop_sshd("h2")           # an unreachable host
    with SshHosts(2, router=True) as hosts:   # h1, h2 and a router r1 between them

Layout (everything named ccbh<tag>..., addresses in 10.77.<net>.0/24 with a free <net>):

    root ns: ccbh<tag> 10.77.<net>.1 --veth-- [ns ccbh<tag>-sw: bridge br0]
                                                 |-- veth -- [ns ccbh<tag>-h1: eth0 10.77.<net>.11]
                                                 |-- veth -- [ns ccbh<tag>-h2: eth0 10.77.<net>.12]

With router=True there is also an experiment network, as in a lab whose management network is
separate: r1 forwards between a left segment (bridge brl, 10.78.<net>.0/24, the first half of
the hosts, eth1) and a right one (bridge brr, 10.79.<net>.0/24, the others), each host's
`data_address` is on its segment with a route to the other side via r1 (.254 on both); r1 is
reachable over SSH like the others, on the management bridge.

The bridges live in their own namespace so the root namespace gets only one veth and a connected
route, no bridge, forwarding or firewall change. Each host's sshd has its own host key
(pinned in a known_hosts file, so Ansible checks host keys as it does for real hosts), accepts
one throwaway client key for root (PermitRootLogin prohibit-password) and listens only on the
host's address. The hosts share the machine's filesystem: each gets its own install prefix
(<tmp>/<host>/opt) so two hosts never overwrite each other's files.

Teardown (also when setup fails half-way) kills every process in each namespace (sshd and its
session children, so Ansible's ControlPersist masters see their connection close), deletes the
namespaces and the root veth, and removes the temporary directory."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

PREFIX = "ccbh"
SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
SSH_PORT = 22
READY_TIMEOUT_S = 10.0


class HarnessError(Exception):
    """The harness could not build its hosts (the message says which step)."""


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise HarnessError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout}")
    return proc


def _free_subnet() -> int:
    """A third octet x such that no root-namespace address is in 10.77.x.0/24."""
    used = set()
    for line in _run("ip", "-o", "-4", "addr", "show").stdout.splitlines():
        for field in line.split():
            if field.startswith("10.77."):
                used.add(int(field.split(".")[2]))
    candidates = [x for x in range(1, 255) if x not in used]
    if not candidates:
        raise HarnessError("no free 10.77.x.0/24 subnet in the root namespace")
    return secrets.choice(candidates)


@dataclass
class SshHost:
    name: str
    namespace: str
    address: str
    port: int
    user: str
    private_key: Path
    known_hosts: Path
    prefix: Path
    directory: Path
    sshd: subprocess.Popen[bytes] | None = None
    data_address: str | None = None  # on the experiment network (router=True)

    def as_dict(self) -> dict[str, Any]:
        """The plain host description the `hosts` testbed takes."""
        return {
            "name": self.name,
            "address": self.address,
            "port": self.port,
            "user": self.user,
            "private_key_path": str(self.private_key),
            "known_hosts_path": str(self.known_hosts),
            "prefix": str(self.prefix),
        }

    def registration(self) -> dict[str, Any]:
        """The host as a team registers it through the API (POST /v1/hosts)."""
        public = (self.directory / "ssh_host_ed25519_key.pub").read_text().split()
        body: dict[str, Any] = {
            "name": self.name,
            "address": self.address,
            "port": self.port,
            "user": self.user,
            "private_key": self.private_key.read_text(),
            "host_key": f"{public[0]} {public[1]}",
            "install_prefix": str(self.prefix),
        }
        if self.data_address is not None:
            body["data_address"] = self.data_address
        return body


class SshHosts:
    """N namespace hosts h1..hN with sshd; a context manager that always tears down."""

    def __init__(self, count: int = 2, *, router: bool = False) -> None:
        if count < 1 or (router and count < 2):
            raise ValueError("count must be at least 1 (2 with a router)")
        self.count = count
        self.router = router
        self.tag = secrets.token_hex(3)
        self.base = f"{PREFIX}{self.tag}"
        self.switch_ns = f"{self.base}-sw"
        self.root_link = self.base  # 10 characters, under IFNAMSIZ
        self.hosts: dict[str, SshHost] = {}
        self.namespaces: list[str] = []
        self.tmp: Path | None = None
        self.net = 0

    # --- public -----------------------------------------------------------------------------

    def __enter__(self) -> SshHosts:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getitem__(self, name: str) -> SshHost:
        return self.hosts[name]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [host.as_dict() for host in self.hosts.values()]

    def exec(self, name: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        """Run a command inside a host's namespace (not over SSH)."""
        return _run("ip", "netns", "exec", self.hosts[name].namespace, *cmd, check=False)

    def stop_sshd(self, name: str) -> None:
        """Make a host unreachable: kill its sshd and every session it serves, so no
        connection (nor a ControlPersist master) to it keeps working."""
        host = self.hosts[name]
        _kill_namespace(host.namespace)
        if host.sshd is not None:
            host.sshd.wait()
            host.sshd = None

    def close(self) -> None:
        """Tear everything down; safe to call more than once and after a partial build."""
        for host in self.hosts.values():
            if host.sshd is not None and host.sshd.poll() is None:
                host.sshd.kill()
        for namespace in reversed(self.namespaces):
            _kill_namespace(namespace)
            _run("ip", "netns", "del", namespace, check=False)
        for host in self.hosts.values():
            if host.sshd is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    host.sshd.wait(timeout=5)
                host.sshd = None
        self.namespaces.clear()
        # The root end usually vanishes with its peer's namespace; delete it if not.
        if _run("ip", "link", "show", self.root_link, check=False).returncode == 0:
            _run("ip", "link", "del", self.root_link, check=False)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    # --- build ------------------------------------------------------------------------------

    def _build(self) -> None:
        if not Path(SSHD).exists():
            raise HarnessError(f"{SSHD} is missing: install Debian's openssh-server")
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.base}-"))
        os.chmod(self.tmp, 0o700)
        # sshd's privilege-separation directory (normally made by its systemd unit).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        client_key = self.tmp / "client_key"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.base, "-f", str(client_key))
        authorized = self.tmp / "authorized_keys"
        shutil.copy(client_key.with_suffix(".pub"), authorized)
        known_hosts = self.tmp / "known_hosts"

        self.net = _free_subnet()
        gateway = f"10.77.{self.net}.1"
        self._add_namespace(self.switch_ns)
        _run("ip", "-n", self.switch_ns, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.switch_ns, "link", "set", "br0", "up")
        _run(
            "ip",
            "link",
            "add",
            self.root_link,
            "type",
            "veth",
            "peer",
            "name",
            "uplink",
            "netns",
            self.switch_ns,
        )
        _run("ip", "-n", self.switch_ns, "link", "set", "uplink", "master", "br0", "up")
        _run("ip", "addr", "add", f"{gateway}/24", "dev", self.root_link)
        _run("ip", "link", "set", self.root_link, "up")

        lines = []
        names = [f"h{i}" for i in range(1, self.count + 1)] + (["r1"] if self.router else [])
        for index, name in enumerate(names, start=1):
            host = self._add_host(index, name, client_key, known_hosts, authorized)
            public = (host.directory / "ssh_host_ed25519_key.pub").read_text().split()
            lines.append(f"{host.address} {public[0]} {public[1]}\n")
        if self.router:
            self._add_experiment_network()
        known_hosts.write_text("".join(lines))
        for host in self.hosts.values():
            self._wait_ready(host)

    def _add_namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self.namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def _add_experiment_network(self) -> None:
        """Left and right segments joined by r1 (see the module's docstring)."""
        sw = self.switch_ns
        left_count = (self.count + 1) // 2
        sides = {"brl": f"10.78.{self.net}", "brr": f"10.79.{self.net}"}
        for bridge in sides:
            _run("ip", "-n", sw, "link", "add", bridge, "type", "bridge")
            _run("ip", "-n", sw, "link", "set", bridge, "up")
        router = self.hosts["r1"]
        for dev, (bridge, subnet) in zip(("eth1", "eth2"), sides.items(), strict=True):
            self._plug(router, dev, bridge, f"{subnet}.254")
        _run("ip", "netns", "exec", router.namespace, "sysctl", "-q", "-w",
             "net.ipv4.ip_forward=1")  # fmt: skip
        for index in range(1, self.count + 1):
            host = self.hosts[f"h{index}"]
            bridge = "brl" if index <= left_count else "brr"
            subnet, other = sides[bridge], sides["brr" if bridge == "brl" else "brl"]
            host.data_address = f"{subnet}.{10 + index}"
            self._plug(host, "eth1", bridge, host.data_address)
            _run("ip", "-n", host.namespace, "route", "add", f"{other}.0/24", "via",
                 f"{subnet}.254")  # fmt: skip

    def _plug(self, host: SshHost, dev: str, bridge: str, address: str) -> None:
        peer = f"{host.name}{dev}"  # the bridge's end, in the switch namespace
        _run("ip", "-n", self.switch_ns, "link", "add", peer, "type", "veth", "peer", "name",
             dev, "netns", host.namespace)  # fmt: skip
        _run("ip", "-n", self.switch_ns, "link", "set", peer, "master", bridge, "up")
        _run("ip", "-n", host.namespace, "addr", "add", f"{address}/24", "dev", dev)
        _run("ip", "-n", host.namespace, "link", "set", dev, "up")

    def _add_host(
        self, index: int, name: str, client_key: Path, known_hosts: Path, authorized: Path
    ) -> SshHost:
        assert self.tmp is not None
        namespace = f"{self.base}-{name}"
        address = f"10.77.{self.net}.{10 + index}"
        self._add_namespace(namespace)
        _run(
            "ip",
            "-n",
            self.switch_ns,
            "link",
            "add",
            name,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            namespace,
        )
        _run("ip", "-n", self.switch_ns, "link", "set", name, "master", "br0", "up")
        _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        _run("ip", "-n", namespace, "link", "set", "eth0", "up")
        _run("ip", "-n", namespace, "route", "add", "default", "via", f"10.77.{self.net}.1")

        directory = self.tmp / name
        directory.mkdir(mode=0o700)
        host_key = directory / "ssh_host_ed25519_key"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(host_key))
        config = directory / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"ListenAddress {address}:{SSH_PORT}",
                    f"HostKey {host_key}",
                    f"PidFile {directory / 'sshd.pid'}",
                    f"AuthorizedKeysFile {authorized}",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    # The key files live in a private temp dir under /tmp (sticky, world-writable).
                    "StrictModes no",
                    "UseDNS no",
                    "MaxSessions 50",
                    "MaxStartups 50",
                    f"Subsystem sftp {SFTP_SERVER}",
                    "",
                ]
            )
        )
        log = (directory / "sshd.log").open("wb")
        sshd = subprocess.Popen(
            ["ip", "netns", "exec", namespace, SSHD, "-D", "-e", "-f", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        host = SshHost(
            name=name,
            namespace=namespace,
            address=address,
            port=SSH_PORT,
            user="root",
            private_key=client_key,
            known_hosts=known_hosts,
            prefix=directory / "opt",
            directory=directory,
            sshd=sshd,
        )
        self.hosts[name] = host
        return host

    def _wait_ready(self, host: SshHost) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if host.sshd is not None and host.sshd.poll() is not None:
                break
            with socket.socket() as sock:
                sock.settimeout(0.5)
                if sock.connect_ex((host.address, host.port)) == 0:
                    return
            time.sleep(0.05)
        log = (host.directory / "sshd.log").read_text(errors="replace").strip()
        raise HarnessError(
            f"sshd of {host.name} ({host.address}:{host.port}) did not come up: {log[-1000:]}"
        )


def _namespace_pids(namespace: str) -> list[int]:
    out = _run("ip", "netns", "pids", namespace, check=False).stdout
    return [int(pid) for pid in out.split()]


def _kill_namespace(namespace: str) -> None:
    """SIGKILL every process in a namespace and wait until none is left (at most 5 s)."""
    deadline = time.monotonic() + 5
    while pids := _namespace_pids(namespace):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise HarnessError(f"processes {pids} in {namespace} survived SIGKILL")
        time.sleep(0.05)
