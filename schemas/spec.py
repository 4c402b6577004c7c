"""The experiment spec: one run's network, flows and measurement, validated and normalised to SI
units. Unknown fields are errors (a typo must not silently change an experiment)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from schemas.algorithms import USERSPACE_ONLY, Algorithm, Runtime, parameters_of, runtimes_of
from schemas.limits import DESCRIPTION_MAX, NAME_MAX, TAG_MAX, TAGS_MAX
from schemas.units import (
    BUFFER_MAX_PKTS,
    PACKET_BYTES,
    Buffer,
    BufferSize,
    Delay,
    Interval,
    JitterScale,
    Offset,
    Period,
    Rate,
    RunDuration,
    Size,
    Timer,
)

SCHEMA_VERSION = 1
# A flow's initial congestion window: Linux's default (RFC 6928), and the largest accepted (a
# Linux receiver first advertises 64 KB, 45 full-size segments).
INITIAL_WINDOW_PKTS = 10
INITIAL_WINDOW_MAX_PKTS = 40
# Bytes one delivery opportunity of a rate trace carries (Mahimahi's convention).
TRACE_OPPORTUNITY_BYTES = 1500


def trace_average_bps(trace_ms: list[int]) -> float:
    """Average rate of a Mahimahi trace: opportunities x 1500 bytes x 8 / period."""
    return len(trace_ms) * TRACE_OPPORTUNITY_BYTES * 8 / (trace_ms[-1] / 1000)


def _is_trace(trace: Any) -> bool:
    """A usable Mahimahi trace: whole milliseconds, not decreasing, ending after 0 ms."""
    if not isinstance(trace, list) or not trace:
        return False
    if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31 for t in trace):
        return False
    return all(a <= b for a, b in zip(trace, trace[1:], strict=False)) and trace[-1] > 0


class StrictModel(BaseModel):
    # Unknown fields are typos; infinities and NaN (YAML's .inf, .nan) are never a parameter.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


Name = Annotated[str, StringConstraints(min_length=1, max_length=NAME_MAX)]
TagText = Annotated[str, StringConstraints(min_length=1, max_length=TAG_MAX)]
Description = Annotated[str, StringConstraints(max_length=DESCRIPTION_MAX)]


HOST_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"  # as the host inventory's names
POOL_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"  # a worker pool's name (also in queue names)
DEFAULT_POOL = "default"


class Testbed(StrictModel):
    kind: Literal["mininet", "hosts"] = Field(
        "mininet",
        description="mininet: a local emulated network inside a per-run sandbox; hosts: the "
        "team's registered hosts over SSH (flows[].src and dst name them)",
    )
    router: str | None = Field(
        None,
        pattern=HOST_NAME_PATTERN,
        description="hosts only: a registered host that forwards between the senders and the "
        "receivers and emulates the dumbbell's bottleneck there with ccbench-link; without "
        "it the flows cross the real network (topology kind path)",
    )
    pool: str = Field(
        DEFAULT_POOL,
        pattern=POOL_PATTERN,
        description="the pool of workers that runs it (a site or a group of machines: each "
        "worker serves one, CCBENCH_WORKER_POOL)",
    )

    @model_validator(mode="after")
    def _router_on_hosts(self) -> Testbed:
        if self.router is not None and self.kind != "hosts":
            raise ValueError("router: applies to the hosts testbed")
        return self


class Red(StrictModel):
    """RED (Floyd & Jacobson 1993), thresholds on the average queue in packets."""

    min_th: float = Field(5.0, ge=0, le=BUFFER_MAX_PKTS)
    max_th: float = Field(15.0, gt=0, le=BUFFER_MAX_PKTS)
    max_p: float = Field(0.1, gt=0, le=1)
    w_q: float = Field(0.002, gt=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Red:
        if self.min_th >= self.max_th:
            raise ValueError("red.min_th must be below red.max_th")
        return self


class Bottleneck(StrictModel):
    rate: Rate = Field(
        description="link rate; with rate_trace_ms it may be left out (the trace's average)"
    )
    rate_trace_ms: list[Annotated[int, Field(ge=0, lt=2**31)]] | None = Field(
        None,
        max_length=1_000_000,
        description="trace-driven rate, as Mahimahi traces: one millisecond timestamp per "
        "1500-byte delivery opportunity, repeating with the last timestamp as period "
        "(emulator only)",
    )
    delay: Delay = Field(description="one-way propagation delay; base RTT = 2 x delay")
    buffer: BufferSize = Field(
        default=Buffer(1.0, "bdp"), description="buffer at the bottleneck queue"
    )
    queue: Literal["droptail", "red"] = Field(
        "droptail", description="queue discipline; red needs link_mechanism emulator"
    )
    red: Red = Field(default_factory=Red, description="RED parameters when queue is red")
    loss: float = Field(
        0.0, ge=0, lt=1, description="random loss probability per packet (emulator only)"
    )
    jitter: Delay = Field(
        0.0,
        description="extra one-way delay, uniform in [0, jitter], never reordering (emulator only)",
    )
    link_mechanism: Literal["auto", "emulator", "tc"] = Field(
        "auto",
        description="emulator: ccbench-link does rate, buffer, queue discipline, delay and "
        "logs every packet; tc: htb + pfifo/bfifo with delay per delay_mechanism. auto picks "
        "emulator; the run records what it used",
    )
    delay_mechanism: Literal["auto", "netem", "nfqueue"] = Field(
        "auto",
        description="with link_mechanism tc: netem where the kernel has it, else an NFQUEUE "
        "delay line (auto picks)",
    )
    emulator_mode: Literal["auto", "packet", "aggregate"] = Field(
        "auto",
        description="with link_mechanism emulator, for every emulator of the run: packet: one "
        "verdict per packet (offloads off); aggregate: one per GSO/GRO aggregate, accounted as "
        "the MTU-sized packets it stands for (offloads on; loss, RED and jitter act per "
        "aggregate), for links faster than 1 Gbit/s. auto: aggregate when a link is faster "
        "than 1 Gbit/s (mininet testbed), else packet; the run records what it used",
    )

    @model_validator(mode="before")
    @classmethod
    def _rate_from_trace(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("rate_trace_ms"):
            return data
        trace = data["rate_trace_ms"]
        if not _is_trace(trace) or "rate" in data:
            return data  # the field's own validation names a problem; the after-check the rest
        return {**data, "rate": f"{trace_average_bps(trace)!r}bit"}

    @model_validator(mode="after")
    def _mechanism_supports_options(self) -> Bottleneck:
        if self.rate_trace_ms:
            if not _is_trace(self.rate_trace_ms):
                raise ValueError("rate_trace_ms must not decrease and must end after 0 ms")
            average = trace_average_bps(self.rate_trace_ms)
            if abs(self.rate / average - 1) > 1e-6:
                raise ValueError(
                    f"rate {self.rate:g} bit/s differs from rate_trace_ms's average "
                    f"{average:g} bit/s: leave rate out with a trace"
                )
        packets, _ = self.buffer_limit()
        if packets is not None and packets > BUFFER_MAX_PKTS:
            raise ValueError(
                f"buffer {self.buffer} is {packets} packets at this rate and delay: at most "
                f"{BUFFER_MAX_PKTS} packets"
            )
        if self.link_mechanism == "tc":
            needs_emulator = [
                name
                for name, used in (
                    ("queue: red", self.queue == "red"),
                    ("loss", self.loss > 0),
                    ("jitter", self.jitter > 0),
                    ("rate_trace_ms", bool(self.rate_trace_ms)),
                )
                if used
            ]
            if needs_emulator:
                raise ValueError(
                    f"{', '.join(needs_emulator)} need link_mechanism emulator (or auto)"
                )
        elif self.delay_mechanism != "auto":
            raise ValueError("delay_mechanism applies to link_mechanism tc only")
        if self.link_mechanism == "tc" and self.emulator_mode != "auto":
            raise ValueError("emulator_mode applies to link_mechanism emulator (or auto)")
        return self

    @property
    def base_rtt_s(self) -> float:
        return 2 * self.delay

    @property
    def bdp_bytes(self) -> float:
        return self.rate * self.base_rtt_s / 8

    def buffer_limit(self) -> tuple[int | None, int | None]:
        """(packets, bytes): exactly one is set."""
        packets = self.buffer.packets(self.bdp_bytes, PACKET_BYTES)
        if packets is not None:
            return packets, None
        return None, int(self.buffer.value)


class Dumbbell(StrictModel):
    """N senders - r1 - bottleneck - r2 - N receivers."""

    kind: Literal["dumbbell"] = "dumbbell"
    bottleneck: Bottleneck


class Chain(StrictModel):
    """Routers r1 .. r(k+1) joined by k links, every one emulated; each flow enters and
    leaves at routers of its choice (flows[].path), so cross traffic can join at any hop: the
    multi-hop / parking-lot topology of seed 002 (R1-R4) and seed 001's two-bottleneck path
    (Fig. 13: 40 Mbit/s 1.5 ms queue 30, then 100 Mbit/s 10 ms queue 80). A link's `1bdp`
    buffer uses that link's own rate x 2 x delay."""

    kind: Literal["chain"]
    links: list[Bottleneck] = Field(min_length=1, max_length=8)
    bottleneck: int | None = Field(
        None, ge=0, description="the link the aggregate metrics describe (default: the slowest)"
    )

    @model_validator(mode="after")
    def _emulated(self) -> Chain:
        for j, link in enumerate(self.links):
            if link.link_mechanism == "tc":
                raise ValueError(f"links.{j}: a chain's links are emulated (link_mechanism tc "
                                 "is for the dumbbell)")  # fmt: skip
        if self.bottleneck is not None and self.bottleneck >= len(self.links):
            raise ValueError(f"bottleneck {self.bottleneck} is not a link index")
        return self


class RealPath(StrictModel):
    """The real network between the hosts (hosts testbed without a router): nothing is
    emulated, so no rate, delay or buffer is applied; the run records the path's measured base
    RTT and MTU instead."""

    kind: Literal["path"]
    rate: Rate | None = Field(
        None, description="the path's nominal capacity; only used to report utilization"
    )


Topology = Annotated[Dumbbell | Chain | RealPath, Field(discriminator="kind")]


class BulkTraffic(StrictModel):
    """Always more data: the seeds' long-lived FTP-like flows."""

    model: Literal["bulk"] = "bulk"


class FixedTraffic(StrictModel):
    model: Literal["fixed"]
    size: Size = Field(description="bytes to transfer; the flow ends once they are delivered")


class OnOffTraffic(StrictModel):
    """Pareto-distributed ON and OFF periods, sending at `rate` while ON (seed 004 §III-C.4:
    shape 1.2, 1 s on, 2 s off, 12 kbit/s, the defaults)."""

    model: Literal["on_off"]
    shape: float = Field(1.2, gt=1, le=10, description="Pareto shape of both periods (> 1)")
    on_mean: Period = Field(1.0, description="mean ON period")
    off_mean: Period = Field(2.0, description="mean OFF period")
    rate: Rate = Field(12_000.0, description="sending rate while ON")


class WebTraffic(StrictModel):
    """Web-like transfers: Pareto sizes, exponential inter-arrival times (seed 001 §IV-B names
    the distributions, not their constants; the defaults are ours)."""

    model: Literal["web"]
    mean_size: Size = Field(100_000, description="mean transfer size")
    shape: float = Field(1.2, gt=1, le=10, description="Pareto shape of the sizes (> 1)")
    mean_interarrival: Period = Field(1.0, description="mean time between transfers")


class CbrTraffic(StrictModel):
    """Constant bit rate. With `agent: userspace` it is unresponsive UDP background traffic
    (no congestion control, no retransmission: the flow's algorithm is not used, results name
    it `cbr-udp`); with kernel TCP the application writes at the rate and TCP's controller
    still governs the sending."""

    model: Literal["cbr"]
    rate: Rate


Traffic = Annotated[
    BulkTraffic | FixedTraffic | OnOffTraffic | WebTraffic | CbrTraffic,
    Field(discriminator="model"),
]


class UniformJitter(StrictModel):
    """A delay drawn uniformly from [0, max] for each packet."""

    distribution: Literal["uniform"]
    max: JitterScale = Field(description="the largest delay")


class ExponentialJitter(StrictModel):
    """A delay drawn from an exponential distribution with this mean for each packet."""

    distribution: Literal["exponential"]
    mean: JitterScale = Field(description="the mean delay")


SendJitter = Annotated[UniformJitter | ExponentialJitter, Field(discriminator="distribution")]


class TransportOptions(StrictModel):
    """Options of ccbench's userspace transport (`agent: userspace` only)."""

    mss: int = Field(1448, ge=200, le=1472, description="payload bytes per packet")
    min_rto: Timer = Field(0.2, description="lower bound of the retransmission timeout")
    rto_granularity: Timer = Field(
        0.001,
        description="clock granularity G of RFC 6298's RTO (coarse, e.g. 500ms, as TCP-BFA's "
        "seed 000 assumes, while RTT samples stay fine)",
    )
    delayed_acks: bool = Field(False, description="ACK every second packet (or after 40 ms)")
    window_growth: Literal["per_packet", "per_ack"] = Field(
        "per_packet",
        description="per_packet: the window grows by the packets each ACK acknowledges "
        "(RFC 3465, as Linux); per_ack: by one per ACK that advances the cumulative point, as "
        "ns-2's TCP in the seeds' simulations (with delayed ACKs slow start grows 1.5x a round "
        "trip and congestion avoidance half a packet)",
    )
    receive_window: int | None = Field(
        None,
        ge=1,
        description="the receiver's advertised window in packets: at most this many "
        "outstanding above the cumulative ACK, and the controller's window grows no further "
        "(ns-2's `window_`; seed 003 caps windows at 100); none: unlimited",
    )


class Flow(StrictModel):
    algorithm: Algorithm
    agent: Literal["kernel", "userspace"] = Field(
        "kernel",
        description="kernel: a kernel TCP flow; userspace: ccbench's UDP transport with its "
        "userspace controller (agents/ccbench-cc)",
    )
    runtime: Literal["builtin", "bpf"] = Field(
        "builtin",
        description="kernel flows: builtin, a congestion controller the host kernel provides; "
        "bpf, ccbench's BPF struct_ops controller (agents/kernel/bpf), loaded for the run (on "
        "the hosts testbed: built on the sender's host against its kernel and registered there)",
    )
    params: dict[str, float] = Field(
        default_factory=dict,
        description="the algorithm's tunables (e.g. bfa: sigma_on, sigma_off in seconds, "
        "alpha_srv); unspecified ones take the seed's values",
    )
    traffic: Traffic = Field(default_factory=BulkTraffic, description="the application's data")
    transport: TransportOptions | None = Field(
        None, description="userspace transport options (agent: userspace)"
    )
    start: Offset = Field(0.0, description="start time relative to the run's start")
    duration: Period | None = Field(
        None, description="how long the flow sends; default: until the end of the run"
    )
    role: Literal["candidate", "reference"] | None = Field(
        None,
        description="for TCP-friendliness: candidate flows are compared with reference (TCP) "
        "flows (friendliness_ratio F, equivalence_ratio E, fc_ratio among candidates; seed 004)",
    )
    path: tuple[int, int] | None = Field(
        None,
        description="chain only: (entry router, exit router), 0-based; default: the whole chain",
    )
    direction: Literal["forward", "reverse"] = Field(
        "forward",
        description="reverse: data flows from the receiver side to the sender side, sharing "
        "the reverse queue with the forward flows' ACKs (seed 001 section IV-C); the link is "
        "then symmetric",
    )
    access_delay: Delay = Field(
        0.0,
        description="one-way delay of this flow's access link (sender - r1), for flows with "
        "different RTTs: the flow's base RTT is 2 x (bottleneck delay + access_delay)",
    )
    initial_window: int = Field(
        INITIAL_WINDOW_PKTS,
        ge=1,
        le=INITIAL_WINDOW_MAX_PKTS,
        description="packets the congestion window starts with, for kernel and userspace flows "
        "alike: 10 is Linux's (RFC 6928); the seeds' simulations start at 1. Kernel flows get "
        "it as their route's initcwnd (mininet testbed; on hosts only the kernel's own, 10)",
    )
    send_jitter: SendJitter | None = Field(
        None,
        description="a small random delay before each packet the sender sends, drawn anew for "
        "every packet, that never reorders them (a packet leaves no earlier than the one before "
        "it): seed 004 section III-A adds one to TCP and TFRC flows alike to break phase "
        "effects. Applied on the flow's access link by the emulator, for kernel and userspace "
        "flows alike; the flow's ACKs are not delayed (mininet testbed only)",
    )
    src: str | None = Field(
        None, pattern=HOST_NAME_PATTERN, description="hosts testbed: the sending host's name"
    )
    dst: str | None = Field(
        None, pattern=HOST_NAME_PATTERN, description="hosts testbed: the receiving host's name"
    )

    @model_validator(mode="after")
    def _runtime_exists(self) -> Flow:
        wanted = self.runtime_kind
        runtimes = runtimes_of(self.algorithm)
        if self.agent == "userspace":
            # The stored (normalised) spec carries the default builtin: only bpf is an error.
            if self.runtime != "builtin":
                raise ValueError("runtime: applies to kernel flows; a userspace flow has none")
        elif self.transport is not None:
            raise ValueError("transport: options of the userspace transport (agent: userspace)")
        if self.send_jitter is not None and self.direction == "reverse":
            raise ValueError(
                "send_jitter: applies to forward flows in this version (a reverse flow's sender "
                "is on the receivers' side)"
            )
        if wanted not in runtimes:
            if self.algorithm in USERSPACE_ONLY:
                raise ValueError(
                    f"algorithm {self.algorithm.value!r} is userspace-only: "
                    f"{USERSPACE_ONLY[self.algorithm]}; set agent: userspace"
                )
            offered = sorted(a.value for a in Algorithm if wanted in runtimes_of(a))
            hint = "; set runtime: bpf" if Runtime.kernel_bpf in runtimes else ""
            raise ValueError(
                f"algorithm {self.algorithm.value!r} has no {wanted.value} runtime in this "
                f"version of ccbench ({wanted.value}: {', '.join(offered)}){hint}"
            )
        if self.params and wanted == Runtime.kernel_builtin:
            raise ValueError(
                "params: tunables apply to ccbench's own controllers (runtime: bpf, or "
                "agent: userspace)"
            )
        known = {p.name: p for p in parameters_of(self.algorithm, wanted)}
        for name, value in self.params.items():
            if name not in known:
                raise ValueError(
                    f"params.{name}: not a parameter of {self.algorithm.value} (parameters: "
                    f"{', '.join(known) or 'none'})"
                )
            p = known[name]
            if p.integer and value != int(value):
                raise ValueError(f"params.{name}: {value} is not a whole number ({p.description})")
            if not p.minimum <= value <= p.maximum:
                raise ValueError(
                    f"params.{name}: {value} is outside [{p.minimum}, {p.maximum}] "
                    f"({p.description})"
                )
        return self

    @property
    def unresponsive(self) -> bool:
        """Constant-rate UDP without congestion control (userspace agent, CBR traffic)."""
        return self.agent == "userspace" and self.traffic.model == "cbr"

    @property
    def label(self) -> str:
        """The flow's name in results and legends: its algorithm id, or `cbr-udp`."""
        return "cbr-udp" if self.unresponsive else self.algorithm.value

    @property
    def runtime_kind(self) -> Runtime:
        if self.agent == "userspace":
            return Runtime.userspace
        return Runtime.kernel_bpf if self.runtime == "bpf" else Runtime.kernel_builtin

    def parameter_values(self) -> dict[str, float]:
        """Every tunable of the algorithm: the spec's value, else the seed's default."""
        return {
            p.name: self.params.get(p.name, p.default)
            for p in parameters_of(self.algorithm, self.runtime_kind)
        }


class Measurement(StrictModel):
    skip_start: Offset = Field(
        0.0, description="metrics ignore the first skip_start seconds (e.g. slow start)"
    )
    interval: Period = Field(
        1.0,
        description="bin for per-interval metrics: fairness over time and convergence time",
    )
    convergence_band: float = Field(
        0.2, gt=0, lt=1, description="convergence: every flow within its fair share x (1 ± band)"
    )
    require_checks: bool = Field(
        False,
        description="fail the run (keeping its results) when a check of the applied network "
        "or of the emulator's fidelity fails",
    )


class ExperimentSpec(StrictModel):
    """One run's complete description."""

    schema_version: Literal[1] = 1
    kind: Literal["experiment"] = "experiment"
    name: Name
    description: Description = ""
    tags: list[TagText] = Field(default_factory=list, max_length=TAGS_MAX)
    testbed: Testbed = Field(default_factory=Testbed)
    topology: Topology
    flows: list[Flow] = Field(min_length=1, max_length=64)
    duration: RunDuration = Field(description="length of the run")
    sampling_interval: Interval = Field(0.01, description="tcp_info and queue sampling period")
    measurement: Measurement = Field(default_factory=Measurement)
    seed: int | None = Field(
        None, ge=0, lt=2**31, description="random seed; chosen and recorded when omitted"
    )

    @model_validator(mode="after")
    def _consistent(self) -> ExperimentSpec:
        if self.measurement.skip_start >= self.duration:
            raise ValueError("measurement.skip_start must be shorter than duration")
        for i, flow in enumerate(self.flows):
            end = flow.start + (flow.duration if flow.duration is not None else 0)
            if flow.start >= self.duration or end > self.duration + 1e-9:
                raise ValueError(f"flows.{i} must start and end within the run's duration")
        if self.testbed.kind == "hosts":
            self._check_hosts_testbed()
        else:
            for i, flow in enumerate(self.flows):
                if flow.src is not None or flow.dst is not None:
                    raise ValueError(f"flows.{i}: src and dst name hosts of the hosts testbed")
            if isinstance(self.topology, RealPath):
                raise ValueError("topology kind path is the hosts testbed's real network")
        if isinstance(self.topology, RealPath):
            return self
        bottleneck = self.bottleneck
        for i, flow in enumerate(self.flows):
            if flow.path is not None:
                entry, leave = flow.path
                if not 0 <= entry < leave <= len(self.links):
                    raise ValueError(
                        f"flows.{i}.path {list(flow.path)} is not a path of this topology "
                        f"(routers 0..{len(self.links)}, entry before exit)"
                    )
        if bottleneck.link_mechanism == "tc" and any(
            f.access_delay > 0 or f.send_jitter is not None or f.direction == "reverse"
            for f in self.flows
        ):
            raise ValueError(
                "flows[].access_delay, flows[].send_jitter and reverse flows need "
                "link_mechanism emulator (or auto)"
            )
        if all(f.direction == "reverse" for f in self.flows):
            raise ValueError("at least one flow must go forward through the bottleneck")
        return self

    def _check_hosts_testbed(self) -> None:
        """Real hosts: each flow names its hosts; what the local emulation adds per flow
        (access delays, paths along a chain, reverse flows) is the real network's business."""
        router = self.testbed.router
        for i, flow in enumerate(self.flows):
            if flow.src is None or flow.dst is None:
                raise ValueError(f"flows.{i}: the hosts testbed needs src and dst (host names)")
            if flow.src == flow.dst:
                raise ValueError(f"flows.{i}: src and dst are the same host {flow.src!r}")
            if router in (flow.src, flow.dst):
                raise ValueError(f"flows.{i}: the router {router!r} forwards, it cannot be an end")
            for name, used in (
                ("access_delay", flow.access_delay > 0),
                ("send_jitter", flow.send_jitter is not None),
                ("initial_window", flow.initial_window != INITIAL_WINDOW_PKTS),
                ("path", flow.path is not None),
                ("direction", flow.direction != "forward"),
            ):
                if used:
                    raise ValueError(
                        f"flows.{i}.{name}: not on the hosts testbed (a reverse flow is a flow "
                        "with src and dst swapped)"
                    )
        if router is None:
            if not isinstance(self.topology, RealPath):
                raise ValueError(
                    "topology: without testbed.router nothing is emulated between the hosts: "
                    "use topology kind path, or name a router host to emulate the bottleneck"
                )
        elif not isinstance(self.topology, Dumbbell):
            raise ValueError("topology: a router host emulates one bottleneck (kind dumbbell)")
        elif self.topology.bottleneck.link_mechanism == "tc":
            raise ValueError("topology.bottleneck.link_mechanism: the router host runs the "
                             "emulator (auto or emulator)")  # fmt: skip
        elif self.topology.bottleneck.emulator_mode == "aggregate":
            raise ValueError("topology.bottleneck.emulator_mode: the router host emulates per "
                             "packet (auto or packet)")  # fmt: skip

    @property
    def host_names(self) -> list[str]:
        """Hosts testbed: every host the run uses, senders and receivers first, then the router."""
        names: list[str] = []
        for flow in self.flows:
            for name in (flow.src, flow.dst):
                if name is not None and name not in names:
                    names.append(name)
        if self.testbed.router is not None:
            names.append(self.testbed.router)
        return names

    @property
    def links(self) -> list[Bottleneck]:
        """The router-router links in order (one for the dumbbell, none on a real path)."""
        if isinstance(self.topology, Chain):
            return list(self.topology.links)
        if isinstance(self.topology, RealPath):
            return []
        return [self.topology.bottleneck]

    @property
    def bottleneck_index(self) -> int:
        if isinstance(self.topology, Chain):
            if self.topology.bottleneck is not None:
                return self.topology.bottleneck
            rates = [link.rate for link in self.topology.links]
            return rates.index(min(rates))
        return 0

    @property
    def bottleneck(self) -> Bottleneck:
        """The link the aggregate metrics describe (none on a real path)."""
        if isinstance(self.topology, RealPath):
            raise ValueError("a real path (topology kind path) has no emulated bottleneck")
        return self.links[self.bottleneck_index]

    def flow_path(self, index: int) -> tuple[int, int]:
        path = self.flows[index].path
        return path if path is not None else (0, len(self.links))

    def base_rtt_s(self, index: int) -> float:
        """Flow `index`'s propagation RTT: 2 x (the delays of the links on its path + its
        access delay)."""
        entry, leave = self.flow_path(index)
        path_delay = sum(link.delay for link in self.links[entry:leave])
        return 2 * (path_delay + self.flows[index].access_delay)

    def flow_duration(self, index: int) -> float:
        flow = self.flows[index]
        return flow.duration if flow.duration is not None else self.duration - flow.start
