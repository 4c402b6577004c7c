#!/usr/bin/python3
"""Build and run one run's network (a chain of routers; the dumbbell has one link) inside its
sandbox. Runs under the system Python (which has
Debian's Mininet) as PID 1 of fresh network, PID and mount namespaces:

    unshare --net --pid --mount --fork --kill-child=SIGKILL --mount-proc \\
        /usr/bin/python3 workers/testbeds/mininet/sandbox.py <run_dir>/plan.json

Everything it creates (Mininet hosts, veths, qdiscs, iptables rules, agent processes) lives in
namespaces that die with it, so teardown is the sandbox exiting; Mininet's own cleanup (which
kills processes and deletes links host-wide) is never called.

Stdout carries JSON-line events only (docs/contracts.md); log text goes to sandbox.log."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO_ROOT))

from ccbench import rundir  # noqa: E402
from workers.plan import (  # noqa: E402
    START_FROM_STDIN_ARGS,
    FlowPlan,
    Plan,
    access_link_args,
    delay_line_args,
    emulator_args,
    qmon_args,
    receiver_args,
    sender_args,
    start_line,
    tcp_buffer_max_bytes,
    trace_file_text,
)
from workers.testbeds.mininet.probe import probe_host  # noqa: E402
from workers.testbeds.mininet.topology import Chain, chain, htb_burst_bytes  # noqa: E402

PORT = 5001
READY_TIMEOUT_S = 10.0
# Senders connect first, say so, and start sending together this long after the last one
# did (the time to hand each its start line and for it to wake).
START_MARGIN_S = 0.02
SENDER_GRACE_S = 15.0
# Retransmission timeouts in a row after which the kernel drops a socket its application has
# closed (tcp_orphan_retries; the kernel's 0 means 8, about two minutes). When the sandbox is
# killed mid-run (its worker died), the senders' sockets are orphaned into a network without
# its emulator, and each keeps the namespaces and its BPF controller alive (the controller
# stays pending, workers/bpf.py) until the kernel gives up: 3 ends that after 15 RTOs. An
# orphan that gets ACKs is not affected (the count restarts), so neither is a run.
ORPHAN_RETRIES = 3


class SandboxError(Exception):
    """A failure with a message meant for the user."""


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_busy_fraction(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """Share of the host's CPU time that was busy between two cpu_times() readings."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 4) if total > 0 else None


def first_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The first line a process prints on stdout, or "" if it prints none (or exits) within
    timeout_s. Agents print their ready line whole, so readline does not block after select."""
    if proc.stdout is None:
        return ""
    readable, _, _ = select.select([proc.stdout], [], [], timeout_s)
    return proc.stdout.readline() if readable else ""


class NodeSetup(NamedTuple):
    """What one node is configured with: `ip` commands (one `ip -batch`), then the others."""

    ip: list[str]
    commands: list[tuple[list[str], bool]]  # (argv, check)


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


class Sandbox:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.run_dir = Path(plan.run_dir)
        self.agents = Path(plan.agents_dir)
        self.log = (self.run_dir / rundir.SANDBOX_LOG).open("a")
        self.commands: list[dict[str, Any]] = []
        self.provenance: dict[str, Any] = {"plan": json.loads(plan.to_json())}
        self.topo: Chain = chain(len(plan.links), [(f.entry, f.exit) for f in plan.flows])
        self.background: list[tuple[str, subprocess.Popen[str]]] = []
        self.net: Any = None
        self.lock = threading.Lock()  # nodes are configured in parallel (configure)
        self.steps: dict[str, float] = {}  # seconds per set-up step, for provenance

    def say(self, text: str) -> None:
        with self.lock:
            self.log.write(f"{time.time():.6f} {text}\n")
            self.log.flush()

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time a set-up or tear-down step (provenance `sandbox_steps_s`)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.steps[name] = round(time.monotonic() - started, 4)

    # --- commands ---------------------------------------------------------------------------

    def node(self, name: str) -> Any:
        return self.net[name]

    def run(self, node: str, *cmd: str, check: bool = True) -> str:
        """Run a command in a node's namespace; record it (with its exit code) in provenance."""
        proc = self.node(node).popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True
        )
        out, err = proc.communicate(timeout=30)
        with self.lock:
            self.commands.append({"node": node, "cmd": " ".join(cmd), "rc": proc.returncode})
        self.say(f"[{node}] {' '.join(cmd)} -> {proc.returncode} {err.strip()}")
        if check and proc.returncode != 0:
            raise SandboxError(f"on {node}: `{' '.join(cmd)}` failed: {err.strip() or out.strip()}")
        return str(out)

    def run_ip_batch(self, node: str, lines: list[str]) -> None:
        """`ip` commands of one node in one `ip -batch` process (it stops at the first that
        fails, naming its line); each is recorded with the batch's exit code."""
        proc = self.node(node).popen(
            ["ip", "-batch", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        out, err = proc.communicate("".join(f"{line}\n" for line in lines), timeout=30)
        with self.lock:
            self.commands.extend(
                {"node": node, "cmd": f"ip {line}", "rc": proc.returncode, "batch": "ip -batch"}
                for line in lines
            )
        commands = "; ".join(f"ip {line}" for line in lines)  # as one would type each
        self.say(f"[{node}] ip -batch: {commands} -> {proc.returncode} {err.strip()}")
        if proc.returncode != 0:
            raise SandboxError(f"on {node}: `ip -batch` failed: {err.strip() or out.strip()}")

    def configure(self, setups: dict[str, NodeSetup], then: Callable[[str], None]) -> None:
        """Configure the nodes in parallel (they are independent namespaces): each node's
        `ip` batch, its other commands, then `then(node)`, in order; the first failure is
        raised once all have finished."""

        def one(node: str, setup: NodeSetup) -> None:
            if setup.ip:
                self.run_ip_batch(node, setup.ip)
            for argv, check in setup.commands:
                self.run(node, *argv, check=check)
            then(node)

        with ThreadPoolExecutor(max_workers=max(1, len(setups))) as pool:
            futures = [pool.submit(one, node, setup) for node, setup in setups.items()]
        for future in futures:
            future.result()

    def start(self, node: str, name: str, *cmd: str, ready: str | None = None) -> Any:
        """Start a long-running agent in a node; wait for its ready line if given."""
        proc = self.popen(node, *cmd)
        self.commands.append({"node": node, "cmd": " ".join(cmd), "rc": None})
        self.background.append((name, proc))
        if ready is not None:
            self.wait_ready(node, name, proc, ready)
        return proc

    def wait_ready(self, node: str, name: str, proc: Any, ready: str) -> None:
        """Wait for an agent's ready line (READY_TIMEOUT_S at most); fail naming the agent."""
        line = first_line(proc, READY_TIMEOUT_S)
        if ready not in line:
            proc.kill()
            proc.wait()
            err = (proc.stderr.read() if proc.stderr else "").strip()
            reason = (
                err
                or line.strip()
                or f"no ready line within {READY_TIMEOUT_S:.0f} s (exit code {proc.returncode})"
            )
            raise SandboxError(f"{name} on {node} did not start: {reason}")

    def popen(self, node: str, *cmd: str, stdin: int | None = None) -> Any:
        return self.node(node).popen(
            list(cmd),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )

    # --- phases -----------------------------------------------------------------------------

    def probe(self) -> None:
        capabilities = probe_host(in_private_netns=True)
        self.provenance["kernel"] = capabilities["kernel"]
        self.provenance["capabilities"] = capabilities
        # BPF controllers the worker registered for this run, with the values written in.
        self.provenance["bpf_controllers"] = [asdict(c) for c in self.plan.controllers]
        wanted = {f.algorithm for f in self.plan.flows if f.agent == "kernel"}
        missing = sorted(wanted - set(capabilities["congestion_controls"]))
        if missing:
            raise SandboxError(
                f"congestion control {', '.join(missing)} is not available on this host "
                f"(available: {' '.join(capabilities['congestion_controls'])})"
            )
        link_mechanism = self.plan.link_mechanism
        if link_mechanism == "auto":
            link_mechanism = "emulator"
        self.provenance["link_mechanism"] = link_mechanism
        if link_mechanism == "emulator":
            if not capabilities["nfqueue"]:
                raise SandboxError("the link emulator needs NFQUEUE, which this host lacks")
            self.provenance["delay_mechanism"] = "emulator"
            self.provenance["emulator_mode"] = self.plan.emulator_mode
        else:
            mechanism = self.plan.delay_mechanism
            if mechanism == "auto":
                mechanism = "netem" if capabilities["netem"] else "nfqueue"
            if mechanism == "netem" and not capabilities["netem"]:
                raise SandboxError(
                    "the spec asks for netem delay but this kernel has no netem "
                    "(sch_netem); use delay_mechanism auto or nfqueue"
                )
            self.provenance["delay_mechanism"] = mechanism
        versions = {}
        for binary in ("ccbench-agent", "ccbench-link"):
            path = self.agents / binary
            if not path.exists():
                raise SandboxError(f"{path} is missing: build the agents (make install)")
            out = subprocess.run([str(path), "--version"], capture_output=True, text=True)
            versions[binary] = out.stdout.strip()
        self.provenance["agent_versions"] = versions

    def build(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import VERSION as MININET_VERSION
        from mininet.net import Mininet
        from mininet.node import Host

        setLogLevel("error")
        self.provenance["mininet_version"] = MININET_VERSION
        with self.step("network"):
            net = Mininet(
                topo=None, controller=None, build=False, autoSetMacs=False, waitConnected=False
            )
            for name in self.topo.hosts:
                net.addHost(name, cls=Host, ip=None)
            for link in self.topo.wires:
                net.addLink(
                    link.a.node, link.b.node, cls=Link, intfName1=link.a.name, intfName2=link.b.name
                )
        self.net = net
        setups = {name: NodeSetup([], []) for name in self.topo.hosts}
        one_segment_senders = {
            self.endpoints(flow)[0][0] for flow in self.plan.flows if flow.one_segment_per_send
        }
        for link in self.topo.wires:
            for end in (link.a, link.b):
                setup = setups[end.node]
                setup.ip.append(f"addr add {end.address} dev {end.name}")
                setup.ip.append(f"link set {end.name} up")
                # Without offloads a drop loses one packet, not a 64 KB super-packet. The
                # emulator's aggregate mode wants the aggregates (and accounts for them).
                offloads_off = ["ethtool", "-K", end.name, "tso", "off", "gso", "off", "gro", "off"]
                if self.plan.emulator_mode == "packet":
                    setup.commands.append((offloads_off, False))
                # Each skb one segment, so a pacing controller's every segment waits for the
                # pacer (TCP builds multi-segment skbs even with offloads off, and the kernel
                # now and then sizes them past the controller's min_tso_segs: trains of 7-10
                # packets in CI). TCP reads the cap when it connects, after this set-up.
                if end.node in one_segment_senders:
                    setup.ip.append(f"link set {end.name} gso_max_segs 1")
        self.provenance["offloads"] = "off" if self.plan.emulator_mode == "packet" else "on"
        for route in self.topo.routes:
            setups[route.node].ip.append(f"route add {route.destination} via {route.via}")
        self.initial_windows(setups)
        for router in self.topo.routers:
            setups[router].commands.append((["sysctl", "-qw", "net.ipv4.ip_forward=1"], True))
        end_hosts = {*self.topo.senders, *self.topo.receivers}
        with self.step("configure"):
            self.configure(setups, lambda n: self.size_tcp_buffers(n) if n in end_hosts else None)
        self.provenance["tcp_buffer_max_bytes"] = tcp_buffer_max_bytes(self.plan)

    def initial_windows(self, setups: dict[str, NodeSetup]) -> None:
        """Each kernel flow's initial congestion window: its sender's route's initcwnd (set
        even at Linux's own 10, so the run's commands show it). Userspace flows get theirs
        from their agent's flag."""
        for flow in self.plan.flows:
            if flow.agent != "kernel":
                continue
            host = self.endpoints(flow)[0][0]
            [via] = [
                r.via for r in self.topo.routes if r.node == host and r.destination == "default"
            ]
            setups[host].ip.append(f"route change default via {via} initcwnd {flow.initial_window}")

    def size_tcp_buffers(self, host: str) -> None:
        """Let an end host's TCP buffers grow to what the path can hold (plan.py:
        tcp_buffer_max_bytes); the minimum and initial sizes stay the kernel's. The host's
        ORPHAN_RETRIES too, in the same write."""
        limit = tcp_buffer_max_bytes(self.plan)
        keys = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
        current = self.run(host, "sysctl", "-n", *keys).splitlines()
        if len(current) != len(keys):
            raise SandboxError(f"on {host}: `sysctl -n {' '.join(keys)}` said {current}")
        values = []
        for key, line in zip(keys, current, strict=True):
            low, initial, _ = line.split()
            values.append(f"{key}={low} {initial} {limit}")
        self.run(host, "sysctl", "-qw", *values, f"net.ipv4.tcp_orphan_retries={ORPHAN_RETRIES}")

    def shape(self) -> None:
        if self.provenance["link_mechanism"] == "emulator":
            self.emulate()
        else:
            self.shape_with_tc()

    def emulate(self) -> None:
        """ccbench-link for both directions of every link j, on the router at its left end:
        forward (towards the next router) gets rate, buffer, queue discipline, loss, delay and
        jitter, with a per-packet log; reverse gets the delay, and the same rate and buffer when
        reverse-path flows cross the link (the link is then symmetric)."""
        binary = str(self.agents / "ccbench-link")
        emulators = {}
        for j, b in enumerate(self.plan.links):
            router, dev = self.topo.link_router(j), self.topo.link_interface(j)
            if b.trace_ms:
                (self.run_dir / rundir.link_trace(j)).write_text(trace_file_text(b))
            symmetric = any(
                f.direction == "reverse" and f.entry <= j < f.exit for f in self.plan.flows
            )
            # Access links run on the routers too (emulator_args: arrival_on_read).
            delay_lines = any(f.access_link for f in self.plan.flows)
            out = str(self.run_dir)
            forward = [
                binary,
                *emulator_args(
                    b, j, 2 * j, self.plan.seed, forward=True,
                    arrival_on_read=delay_lines, out_dir=out, mode=self.plan.emulator_mode,
                ),
            ]  # fmt: skip
            reverse = [
                binary,
                *emulator_args(
                    b, j, 2 * j + 1, self.plan.seed, forward=False, symmetric=symmetric,
                    arrival_on_read=delay_lines, out_dir=out, mode=self.plan.emulator_mode,
                ),
            ]  # fmt: skip
            self.start(router, f"ccbench-link {j} forward", *forward, ready='"ready"')
            self.start(router, f"ccbench-link {j} reverse", *reverse, ready='"ready"')
            for queue, match in ((2 * j, "-o"), (2 * j + 1, "-i")):
                self.run(router, "iptables", "-w", "-A", "FORWARD", match, dev, "-j", "NFQUEUE",
                         "--queue-num", str(queue))  # fmt: skip
            emulators[f"link {j}"] = {"router": router, "dev": dev,
                                      "mode": self.plan.emulator_mode,
                                      "forward": " ".join(forward[1:])}  # fmt: skip
        self.provenance["links"] = emulators
        self.access_links()

    def access_links(self) -> None:
        """Each flow's access link (access delay, send jitter) on the flow's entry router, one
        ccbench-link per direction: the sender's packets as they enter the router (mangle
        PREROUTING: delay and jitter) and, with an access delay, what leaves towards the sender
        (mangle POSTROUTING: delay). Different netfilter hooks from the links' FORWARD rules, so
        a packet passes both."""
        link = str(self.agents / "ccbench-link")
        out = str(self.run_dir)
        for flow in self.plan.flows:
            if not flow.access_link:
                continue
            i = flow.index + 1
            router = self.topo.entry_routers[flow.index]
            directions = [(True, "PREROUTING", "-i")]
            if flow.access_delay_s > 0:
                directions.append((False, "POSTROUTING", "-o"))
            for data, hook, match in directions:
                queue = 100 + 2 * i + (0 if data else 1)
                name = f"ccbench-link access {i} {'data' if data else 'ack'}"
                self.start(router, name, link,
                           *access_link_args(flow, queue, self.plan.seed, data=data, out_dir=out,
                                             mode=self.plan.emulator_mode),
                           ready='"ready"')  # fmt: skip
                self.run(router, "iptables", "-w", "-t", "mangle", "-A", hook, match,
                         self.topo.sender_interface(flow.index), "-j", "NFQUEUE",
                         "--queue-num", str(queue))  # fmt: skip

    def shape_with_tc(self) -> None:
        """The dumbbell's one link with tc: htb + pfifo/bfifo on r1, delay on r2."""
        if len(self.plan.links) != 1:
            raise SandboxError("link_mechanism tc emulates the dumbbell only")
        b = self.plan.bottleneck
        dev = self.topo.link_interface(0)
        rate = f"{int(b.rate_bps)}bit"
        burst = str(htb_burst_bytes(b.rate_bps))
        self.run(
            "r1", "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"
        )
        self.run(
            "r1",
            "tc",
            "class",
            "add",
            "dev",
            dev,
            "parent",
            "1:",
            "classid",
            "1:1",
            "htb",
            "rate",
            rate,
            "ceil",
            rate,
            "burst",
            burst,
            "cburst",
            burst,
        )
        if b.buffer_pkts is not None:
            leaf = ["pfifo", "limit", str(b.buffer_pkts)]
        else:
            leaf = ["bfifo", "limit", str(b.buffer_bytes)]
        self.run("r1", "tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *leaf)
        shown = self.run("r1", "tc", "qdisc", "show", "dev", dev)
        if f"qdisc {leaf[0]} 10:" not in shown or "qdisc htb 1:" not in shown:
            raise SandboxError(f"the bottleneck qdiscs are not in place on {dev}: {shown}")
        self.provenance["bottleneck"] = {"dev": dev, "qdisc": shown.strip(), "burst_bytes": burst}
        self.delay()

    def delay(self) -> None:
        delay_us = int(round(self.plan.bottleneck.delay_s * 1e6))
        if delay_us == 0:
            return
        mechanism = self.provenance["delay_mechanism"]
        towards_r1 = self.topo.far_interface(0)
        if mechanism == "netem":
            # Delay on r2's egress, away from the bottleneck queue; netem's limit is its
            # delay-line capacity, never the experiment's buffer.
            receiver_side = [self.topo.receiver_interface(i) for i in range(len(self.plan.flows))]
            for dev in [towards_r1, *receiver_side]:
                self.run(
                    "r2",
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "root",
                    "netem",
                    "delay",
                    f"{delay_us}us",
                    "limit",
                    "1000000",
                )
            return
        link = str(self.agents / "ccbench-link")
        for queue, direction, match in ((0, "data", "-i"), (1, "ack", "-o")):
            self.start("r2", f"ccbench-link {direction}", link,
                       *delay_line_args(self.plan.bottleneck.delay_s, queue, direction,
                                        str(self.run_dir)),
                       ready='"ready"')  # fmt: skip
            self.run(
                "r2",
                "iptables",
                "-w",
                "-A",
                "FORWARD",
                match,
                towards_r1,
                "-j",
                "NFQUEUE",
                "--queue-num",
                str(queue),
            )

    def endpoints(self, flow: FlowPlan) -> tuple[tuple[str, str], tuple[str, str]]:
        """((sender host, its address), (receiver host, its address)) of a flow: s_i -> d_i,
        or d_i -> s_i for reverse-path traffic."""
        i = flow.index
        left = (self.topo.senders[i], self.topo.sender_addresses[i])
        right = (self.topo.receivers[i], self.topo.receiver_addresses[i])
        return (right, left) if flow.direction == "reverse" else (left, right)

    def start_base_rtt(self) -> Any:
        """Ping from the first sender to its receiver through the empty bottleneck (while the
        senders connect: a handshake queues nothing): the base RTT as the network really has
        it, recorded beside the configured one by record_base_rtt. Five echoes 2 ms apart
        (root may ping that fast): 8 ms plus a round trip."""
        return self.popen("s1", *self.ping_command())

    def ping_command(self) -> list[str]:
        return ["ping", "-c", "5", "-i", "0.002", "-q", "-W", "2", self.topo.receiver_addresses[0]]

    def record_base_rtt(self, ping: Any) -> None:
        out, err = ping.communicate(timeout=30)
        command = " ".join(self.ping_command())
        self.commands.append({"node": "s1", "cmd": command, "rc": ping.returncode})
        self.say(f"[s1] {command} -> {ping.returncode} {err.strip()}")
        for line in out.splitlines():
            if "min/avg/max" in line:
                low, avg, high = (float(v) / 1e3 for v in line.split("=")[1].split("/")[:3])
                self.provenance["ping_rtt_s"] = {"min": low, "avg": avg, "max": high}

    def traffic(self) -> None:
        plan = self.plan
        with self.step("agents"):
            senders = self.start_agents()
        t0 = time.time() + START_MARGIN_S
        self.provenance["start_ts"] = t0
        for flow, proc in senders:
            proc.stdin.write(start_line(t0 + flow.start_s))
            proc.stdin.close()
        cpu_before = cpu_times()
        emit("phase", phase="running")
        deadline = time.monotonic() + START_MARGIN_S + plan.duration_s + SENDER_GRACE_S
        while running := [p for _, p in senders if p.poll() is None]:
            if time.monotonic() > deadline:
                raise SandboxError(f"senders still running {SENDER_GRACE_S:.0f} s after the end")
            # Wake as soon as a sender exits (collection starts at once), else every 0.2 s.
            with contextlib.suppress(subprocess.TimeoutExpired):
                running[0].wait(timeout=0.2)
            self.check_background()
            elapsed = min(plan.duration_s, max(0.0, time.time() - t0))
            if int(elapsed) != getattr(self, "_last_progress", -1):
                self._last_progress = int(elapsed)
                emit("progress", elapsed_s=round(elapsed, 1), duration_s=plan.duration_s)
        self.provenance["host_cpu_busy"] = cpu_busy_fraction(cpu_before, cpu_times())
        emit("phase", phase="collecting")
        for flow, proc in senders:
            err = proc.stderr.read() if proc.stderr else ""
            if proc.returncode != 0:
                message = err.strip()
                with contextlib.suppress(ValueError, KeyError, IndexError):
                    message = json.loads(message.splitlines()[-1])["error"]
                raise SandboxError(f"flow {flow.index} ({flow.algorithm}) failed: {message}")

    def start_agents(self) -> list[tuple[FlowPlan, Any]]:
        """The receivers (listening), the queue monitor, and the senders, each connected and
        waiting for its start line; the base RTT measured meanwhile."""
        plan = self.plan
        agent = str(self.agents / "ccbench-agent")
        out = str(self.run_dir)
        receivers = []
        for flow in plan.flows:  # started together, then each waited for
            receiver, address = self.endpoints(flow)[1]
            name = f"receiver {flow.index}"
            args = receiver_args(flow, f"{address}:{PORT}", plan.interval_ms, out)
            receivers.append((receiver, name, self.start(receiver, name, agent, *args)))
        for receiver, name, proc in receivers:
            self.wait_ready(receiver, name, proc, '"listening"')
        if self.provenance["link_mechanism"] == "tc":
            self.start("r1", "qmon", agent,
                       *qmon_args(self.topo.link_interface(0), plan.interval_ms, out))  # fmt: skip
        # Each sender connects, says so and waits for its start time on stdin; the run starts
        # START_MARGIN_S after the last one is connected and the base RTT is measured.
        ping = self.start_base_rtt()
        senders = []
        for flow in plan.flows:
            sender = self.endpoints(flow)[0][0]
            address = self.endpoints(flow)[1][1]
            argv = [agent, *sender_args(flow, f"{address}:{PORT}", plan.interval_ms, plan.seed,
                                        out), *START_FROM_STDIN_ARGS]  # fmt: skip
            self.commands.append({"node": sender, "cmd": " ".join(argv), "rc": None})
            senders.append((flow, self.popen(sender, *argv, stdin=subprocess.PIPE)))
        for flow, proc in senders:
            sender = self.endpoints(flow)[0][0]
            self.wait_ready(sender, f"flow {flow.index} ({flow.algorithm})", proc, '"connected"')
        self.record_base_rtt(ping)
        return senders

    def check_background(self) -> None:
        """Fail the run as soon as an emulator, delay line or monitor dies: measuring on would
        only produce a run without its network."""
        for name, proc in self.background:
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise SandboxError(
                    f"{name} exited with {proc.returncode} during the run: {err.strip()}"
                )

    def collect(self) -> None:
        for _, proc in self.background:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.background:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise SandboxError(f"{name} did not stop within 5 s") from None
            if proc.returncode not in (0, -signal.SIGTERM):
                err = proc.stderr.read() if proc.stderr else ""
                raise SandboxError(f"{name} exited with {proc.returncode}: {err.strip()}")
        # Counters of every emulator and delay line (link-<j>-data/ack, link-access-<i>-data/ack,
        # delay-data/ack), without the configuration each repeats.
        counters = {}
        stats = [p for pattern in rundir.EMULATOR_STATS_GLOBS for p in self.run_dir.glob(pattern)]
        for path in sorted(stats):
            stats = json.loads(path.read_text())
            stats.pop("config", None)
            counters[path.stem] = stats
        if counters:
            self.provenance["emulator_counters"] = counters

    def write_provenance(self) -> None:
        self.provenance["commands"] = self.commands
        self.provenance["sandbox_steps_s"] = self.steps
        self.provenance["seed"] = self.plan.seed
        (self.run_dir / rundir.PROVENANCE).write_text(json.dumps(self.provenance, indent=2))


def main(plan_path: str) -> int:
    os.umask(0o077)  # the run's files are owner-only, as the worker's
    plan = Plan.from_json(Path(plan_path).read_text())
    # Mount changes stay inside this sandbox's mount namespace.
    subprocess.run(["mount", "--make-rprivate", "/"], check=False)
    box = Sandbox(plan)
    # SIGTERM from outside: stop at once; the PID namespace takes everything with us.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    try:
        emit("phase", phase="provisioning")
        with box.step("probe"):
            box.probe()
        box.build()
        with box.step("shape"):
            box.shape()
        box.traffic()
        with box.step("collect"):
            box.collect()
        box.write_provenance()
    except Exception as exc:  # noqa: BLE001 - every failure becomes the run's error event
        box.say(f"error: {exc!r}")
        box.write_provenance()
        message = str(exc) if isinstance(exc, SandboxError) else f"{type(exc).__name__}: {exc}"
        emit("error", message=message)
        return 1
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
