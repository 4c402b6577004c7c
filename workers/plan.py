"""The run contract every testbed shares: the plan of one run (everything resolved to plain SI
numbers, so a testbed needs no knowledge of the spec) and every agent and emulator command line
built from it. The local sandbox reads the plan as `<run_dir>/plan.json`; the hosts testbed
turns it into an Ansible trial. Either way a flow gets the same flags, so it behaves the same
on both; file names come from ccbench.rundir, under `out_dir` (the sandbox gives the run
directory, so every process's command line names its run; on hosts the agents run in the trial
directory and the names stay relative).

Standard library only: the Mininet sandbox imports it under the system Python."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ccbench import rundir

PLAN_VERSION = 2
TESTBEDS = ("mininet", "hosts")
DELAY_MECHANISMS = ("auto", "netem", "nfqueue")
LINK_MECHANISMS = ("auto", "emulator", "tc")
# ccbench-link's --mode: a verdict per packet, or per GSO/GRO aggregate (agents/ccbench-link).
EMULATOR_MODES = ("packet", "aggregate")
# emulator_mode auto: links faster than this are emulated per aggregate. Per packet, the 2-CPU
# VM delivers ~0.9 of 1 Gbit/s and far less above (README: Benchmarks, bench-link).
AGGREGATE_ABOVE_BPS = 1e9
# The IP MTU of the sandbox's links (veth default): ccbench-link --mtu in aggregate mode.
LINK_MTU_BYTES = 1500


# --- units: the agents take integers in their own units -----------------------------------


def number(value: float) -> str:
    """A flag value: whole numbers without a fraction, others exactly (repr)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def microseconds(seconds: float) -> str:
    return str(int(round(seconds * 1e6)))


def milliseconds(seconds: float) -> str:
    return number(seconds * 1000)


def interval_ms(seconds: float) -> int:
    """A sampling interval in whole milliseconds, at least 1."""
    return max(1, round(seconds * 1000))


# --- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkPlan:
    """One router-router link of the chain (the dumbbell has one)."""

    rate_bps: float
    delay_s: float  # one way; applied in both directions, so base RTT = 2 * delay_s
    buffer_pkts: int | None  # exactly one of buffer_pkts / buffer_bytes is set
    buffer_bytes: int | None
    queue: str = "droptail"  # droptail | red
    red: dict[str, float] = field(default_factory=dict)  # min_th, max_th, max_p, w_q
    loss: float = 0.0
    jitter_s: float = 0.0
    trace_ms: list[int] | None = None  # Mahimahi delivery opportunities instead of rate_bps


@dataclass(frozen=True)
class FlowPlan:
    index: int
    algorithm: str  # kernel controller name (TCP_CONGESTION), or the userspace algorithm id
    start_s: float
    duration_s: float
    access_delay_s: float = 0.0  # one way, on the sender's access link
    direction: str = "forward"  # forward: s_i -> d_i; reverse: d_i -> s_i (reverse path)
    entry: int = 0  # router index (0-based) where the flow's sender is attached
    exit: int = 1  # router index where its receiver is attached
    agent: str = "kernel"  # kernel: TCP (send/recv); userspace: ccbench's UDP transport
    params: dict[str, float] = field(default_factory=dict)  # userspace controller tunables
    # The spec's traffic model in SI units: {"model": "bulk"} or e.g. {"model": "on_off",
    # "shape": 1.2, "on_mean": 1.0, "off_mean": 2.0, "rate": 12000.0}.
    traffic: dict[str, Any] = field(default_factory=lambda: {"model": "bulk"})
    # Userspace flows: the transport options, every one given (schemas.TransportOptions).
    transport: dict[str, Any] = field(default_factory=dict)
    src: str | None = None  # hosts testbed: the sending and receiving hosts' names
    dst: str | None = None
    initial_window: int = 10  # packets the congestion window starts with (schemas.Flow)
    # A random delay before each of the sender's packets (schemas.SendJitter in SI units):
    # {"distribution": "uniform", "max": 0.002} or {"distribution": "exponential", "mean": 0.001}.
    send_jitter: dict[str, Any] | None = None
    # A kernel flow whose BPF controller paces every segment (schemas.PACED_EACH_SEGMENT): its
    # sender's interfaces get gso_max_segs 1 (emulated testbed), so each skb is one segment.
    one_segment_per_send: bool = False

    @property
    def access_link(self) -> bool:
        """The flow's access link is emulated: it has an access delay or a send jitter."""
        return self.access_delay_s > 0 or self.send_jitter is not None

    @property
    def send_jitter_bound_s(self) -> float:
        """A delay the send jitter rarely exceeds: its max, or 5 means (e^-5 < 1% of draws)."""
        if self.send_jitter is None:
            return 0.0
        if self.send_jitter["distribution"] == "uniform":
            return float(self.send_jitter["max"])
        return 5 * float(self.send_jitter["mean"])


@dataclass(frozen=True)
class ControllerPlan:
    """A BPF congestion controller registered for the run: by the worker on its own kernel
    (mininet, workers/bpf.py), or on the sender's host by the trial's play (hosts)."""

    name: str  # the per-run name flows select with TCP_CONGESTION
    algorithm: str  # ccbench algorithm id: agents/kernel/build/<algorithm>.bpf.o
    params: dict[str, float]  # as the spec gives them, defaults filled in
    symbols: dict[str, int]  # the object's .rodata tunables, as written into it
    host: str | None = None  # hosts testbed: the sender host that registers it


@dataclass(frozen=True)
class Plan:
    run_id: str
    run_dir: str
    agents_dir: str
    duration_s: float
    sampling_interval_s: float
    seed: int
    links: list[LinkPlan]  # none on a real path (hosts testbed without a router)
    flows: list[FlowPlan]
    testbed: str = "mininet"
    router: str | None = None  # hosts testbed: the host that emulates the bottleneck
    bottleneck_index: int = 0  # the link the aggregate metrics describe
    link_mechanism: str = "auto"
    delay_mechanism: str = "auto"
    emulator_mode: str = "packet"  # resolved: packet | aggregate (every emulator of the run)
    controllers: list[ControllerPlan] = field(default_factory=list)
    plan_version: int = PLAN_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bottleneck(self) -> LinkPlan:
        return self.links[self.bottleneck_index]

    @property
    def interval_ms(self) -> int:
        return interval_ms(self.sampling_interval_s)

    def __post_init__(self) -> None:
        if self.testbed not in TESTBEDS:
            raise ValueError(f"testbed must be one of {', '.join(TESTBEDS)}")
        for link in self.links:
            if (link.buffer_pkts is None) == (link.buffer_bytes is None):
                raise ValueError("exactly one of buffer_pkts and buffer_bytes must be set")
        if self.links and not 0 <= self.bottleneck_index < len(self.links):
            raise ValueError("bottleneck_index is not a link of the plan")
        if self.link_mechanism not in LINK_MECHANISMS:
            raise ValueError(f"link_mechanism must be one of {', '.join(LINK_MECHANISMS)}")
        if self.delay_mechanism not in DELAY_MECHANISMS:
            raise ValueError(f"delay_mechanism must be one of {', '.join(DELAY_MECHANISMS)}")
        if self.emulator_mode not in EMULATOR_MODES:
            raise ValueError(f"emulator_mode must be one of {', '.join(EMULATOR_MODES)}")
        if self.link_mechanism != "tc" and self.delay_mechanism != "auto":
            # The emulator delays packets itself; a demanded mechanism must not be ignored.
            raise ValueError("delay_mechanism applies to link_mechanism tc only")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        if raw.get("plan_version") != PLAN_VERSION:
            raise ValueError(f"plan_version {raw.get('plan_version')} is not {PLAN_VERSION}")
        raw["links"] = [LinkPlan(**link) for link in raw["links"]]
        raw["flows"] = [FlowPlan(**f) for f in raw["flows"]]
        raw["controllers"] = [ControllerPlan(**c) for c in raw.get("controllers", [])]
        return cls(**raw)

    def write(self, path: Path) -> None:
        path.write_text(self.to_json())


# --- the agents' command lines (docs/contracts.md) -------------------------------------------

# The agents' traffic-model flags (ccbench_common::traffic::TrafficArgs) for a spec model.
_TRAFFIC_FLAGS = {
    "fixed": {"size": "--size-bytes"},
    "on_off": {"shape": "--pareto-shape", "on_mean": "--on-mean-s", "off_mean": "--off-mean-s",
               "rate": "--rate-bps"},
    "web": {"mean_size": "--mean-size-bytes", "shape": "--pareto-shape",
            "mean_interarrival": "--mean-interarrival-s"},
    "cbr": {"rate": "--rate-bps"},
}  # fmt: skip
_TRAFFIC_NAMES = {"bulk": "bulk", "fixed": "fixed", "on_off": "onoff", "web": "web", "cbr": "cbr"}


def flow_seed(seed: int, flow: FlowPlan) -> int:
    """Each flow's own seed, derived from the run's: flows must not draw the same numbers."""
    return seed * 1000 + flow.index


def send_jitter_seed(seed: int, flow: FlowPlan) -> int:
    """The seed of a flow's send jitter (its access link's draws), apart from the flow's own
    seed and every other flow's."""
    return flow_seed(seed, flow) + 500


def traffic_args(traffic: dict[str, Any], seed: int) -> list[str]:
    """The agents' flags for a traffic model; none for bulk, their default."""
    model = traffic["model"]
    if model == "bulk":
        return []
    args = ["--traffic", _TRAFFIC_NAMES[model]]
    for key, flag in _TRAFFIC_FLAGS.get(model, {}).items():
        args += [flag, number(traffic[key])]
    if model in ("on_off", "web"):
        args += ["--traffic-seed", str(seed)]
    return args


def _under(out_dir: str, name: str) -> str:
    return f"{out_dir.rstrip('/')}/{name}" if out_dir else name


def receiver_args(flow: FlowPlan, listen: str, interval: int, out_dir: str = "") -> list[str]:
    """The receiver of one flow: `recv` (TCP) or `urecv` (userspace), writing its log."""
    sub = "urecv" if flow.agent == "userspace" else "recv"
    args = [sub, "--listen", listen, "--interval-ms", str(interval)]
    if flow.agent == "userspace" and flow.transport["delayed_acks"]:
        args.append("--delayed-acks")
    return [*args, "--out", _under(out_dir, rundir.receiver_log(flow.index))]


def sender_args(flow: FlowPlan, dst: str, interval: int, seed: int, out_dir: str = "") -> list[str]:
    """The sender of one flow with its controller and traffic model, writing its log; without
    its start time (the testbed sets a common start). A userspace flow with CBR traffic is
    unresponsive UDP (no controller)."""
    common = ["--dst", dst, "--duration-s", repr(flow.duration_s), "--interval-ms",
              str(interval), "--flow-id", str(flow.index)]  # fmt: skip
    out = ["--out", _under(out_dir, rundir.sender_log(flow.index))]
    own_seed = flow_seed(seed, flow)
    if flow.agent != "userspace":
        return ["send", "--cc", flow.algorithm, *common,
                *traffic_args(flow.traffic, own_seed), *out]  # fmt: skip
    if flow.traffic["model"] == "cbr":
        return ["usend", *common, "--cbr-rate-bps", number(flow.traffic["rate"]), *out]
    t = flow.transport
    return ["usend", "--cc", flow.algorithm, "--params", json.dumps(flow.params,
            sort_keys=True), *common, "--mss", str(t["mss"]),
            "--min-rto-ms", milliseconds(t["min_rto"]),
            "--rto-granularity-ms", milliseconds(t["rto_granularity"]),
            "--initial-window", str(flow.initial_window),
            *receive_window_args(t["receive_window"]),
            *(["--per-ack-growth"] if t["window_growth"] == "per_ack" else []),
            "--seed", str(own_seed),  # TFRC's S3 rounds: flows must not draw the same lengths
            *traffic_args(flow.traffic, own_seed), *out]  # fmt: skip


def receive_window_args(packets: int | None) -> list[str]:
    """usend's receive window flag: none when the spec leaves it unlimited."""
    return [] if packets is None else ["--receive-window", str(packets)]


def start_args(start_at: float) -> list[str]:
    """When a sender starts: a Unix time, so every sender of a run starts together."""
    return ["--start-at", f"{start_at:.6f}"]


# A sender that says when it is connected and then reads its start time (start_line) on
# stdin: senders on one machine start together as soon as all are connected.
START_FROM_STDIN_ARGS = ["--start-at-from-stdin"]


def start_line(start_at: float) -> str:
    """The line a sender started with START_FROM_STDIN_ARGS reads: its start, Unix time."""
    return f"{start_at:.6f}\n"


def qmon_args(dev: str, interval: int, out_dir: str = "") -> list[str]:
    """The queue monitor of the tc mechanism's bottleneck interface."""
    return ["qmon", "--dev", dev, "--interval-ms", str(interval),
            "--out", _under(out_dir, rundir.QDISC)]  # fmt: skip


def emulator_args(
    link: LinkPlan,
    j: int,
    queue_num: int,
    seed: int,
    *,
    forward: bool,
    symmetric: bool = False,
    arrival_on_read: bool = False,
    out_dir: str = "",
    mode: str = "packet",
) -> list[str]:
    """`ccbench-link run` flags for one direction of link j. Forward (data) gets rate, buffer,
    queue discipline, loss, delay and jitter, with a per-packet log; reverse (ACKs) gets the
    delay, and the same rate and buffer when `symmetric` (reverse-path flows cross it).
    `arrival_on_read`: time arrivals when read, not by their kernel timestamp — needed when
    another queue on the same router (an access delay line) may have held a packet first, as
    its kernel timestamp is then its receipt by the host. `mode`: the plan's emulator_mode."""
    delay = ["--delay-us", microseconds(link.delay_s), *mode_args(mode)]
    delay += ["--arrival-time", "read"] if arrival_on_read else []
    if not forward and not symmetric:
        return ["run", "--queue-num", str(queue_num), *delay,
                "--stats-out", _under(out_dir, rundir.link_stats(j, forward=False))]  # fmt: skip
    buffer = (
        ["--buffer-pkts", str(link.buffer_pkts)]
        if link.buffer_pkts is not None
        else ["--buffer-bytes", str(link.buffer_bytes)]
    )
    aqm = ["--aqm", link.queue]
    if link.queue == "red":
        for key in ("min_th", "max_th", "max_p", "w_q"):
            aqm += [f"--red-{key.replace('_', '-')}", str(link.red[key])]
    rate = ["--rate-bps", str(int(round(link.rate_bps)))]
    if forward and link.trace_ms:
        # The caller writes trace_file_text there.
        rate = ["--trace", _under(out_dir, rundir.link_trace(j))]
    extra = ["--jitter-us", microseconds(link.jitter_s)] if forward else []
    return ["run", "--queue-num", str(queue_num), *rate, *delay, *extra, *buffer, *aqm,
            "--loss", repr(link.loss), "--seed", str(seed + 2 * j + (0 if forward else 1)),
            "--log", _under(out_dir, rundir.link_packet_log(j, forward)),
            "--stats-out", _under(out_dir, rundir.link_stats(j, forward))]  # fmt: skip


def mode_args(mode: str) -> list[str]:
    """`ccbench-link` flags of an emulator mode (none for packet, its default)."""
    if mode == "aggregate":
        return ["--mode", "aggregate", "--mtu", str(LINK_MTU_BYTES)]
    return []


def jitter_args(jitter: dict[str, Any]) -> list[str]:
    """`ccbench-link` flags of a random per-packet delay: its scale (a uniform jitter's max, an
    exponential one's mean) and distribution."""
    distribution = jitter["distribution"]
    scale = jitter["max"] if distribution == "uniform" else jitter["mean"]
    return ["--jitter-us", microseconds(scale), "--jitter-dist", distribution]


def access_link_args(
    flow: FlowPlan,
    queue_num: int,
    seed: int,
    *,
    data: bool,
    out_dir: str = "",
    mode: str = "packet",
) -> list[str]:
    """One direction of a flow's access link (sender - entry router): the sender's packets get
    the access delay and the send jitter (with a per-packet log of it), what goes back to the
    sender the access delay. `seed`: the run's; `mode`: the plan's emulator_mode."""
    args = ["run", "--queue-num", str(queue_num), "--delay-us", microseconds(flow.access_delay_s),
            *mode_args(mode)]  # fmt: skip
    if data and flow.send_jitter is not None:
        args += [*jitter_args(flow.send_jitter), "--seed", str(send_jitter_seed(seed, flow)),
                 "--log", _under(out_dir, rundir.access_packet_log(flow.index))]  # fmt: skip
    return [*args, "--stats-out", _under(out_dir, rundir.access_link_stats(flow.index, data))]


def delay_line_args(delay_s: float, queue_num: int, direction: str, out_dir: str = "") -> list[str]:
    """The tc mechanism's NFQUEUE delay line for one direction (`data` or `ack`)."""
    return ["run", "--queue-num", str(queue_num), "--delay-us", microseconds(delay_s),
            "--stats-out", _under(out_dir, rundir.delay_line_stats(direction))]  # fmt: skip


def trace_file_text(link: LinkPlan) -> str:
    """The Mahimahi trace file of a trace-driven link (one ms timestamp per line)."""
    return "".join(f"{t}\n" for t in link.trace_ms or [])


# Linux's defaults in a fresh network namespace: tcp_rmem max 6 MiB, tcp_wmem max 4 MiB.
TCP_BUFFER_DEFAULT_MAX_BYTES = 6 << 20
TCP_BUFFER_CAP_BYTES = 1 << 30


def tcp_buffer_max_bytes(plan: Plan) -> int:
    """Socket buffer limit (tcp_rmem / tcp_wmem max) for the end hosts: 4x the most a flow can
    have in flight (fastest link's rate x the longest base RTT, plus every link's buffer).
    The kernel's defaults hold only ~3 MB of window (about half of a buffer is payload, the rest
    skb overhead), which caps one flow near 600 Mbit/s at 40 ms RTT whatever the link does;
    the seeds' flows are limited by congestion control, never by the receive window. Autotuning
    still grows buffers only as far as each flow needs."""
    one_way = sum(link.delay_s + link.jitter_s for link in plan.links)
    one_way += max(
        (flow.access_delay_s + flow.send_jitter_bound_s for flow in plan.flows), default=0.0
    )
    fastest = max((link.rate_bps for link in plan.links), default=0.0)
    queued = sum(
        link.buffer_bytes if link.buffer_bytes is not None else (link.buffer_pkts or 0) * 1500
        for link in plan.links
    )
    in_flight = fastest / 8 * 2 * one_way + queued
    return int(min(TCP_BUFFER_CAP_BYTES, max(TCP_BUFFER_DEFAULT_MAX_BYTES, 4 * in_flight)))
