"""One id per congestion-control algorithm, everywhere (schema, agents, reports), and the
runtimes that implement it *in this version of ccbench*.

A runtime missing from an entry is absent, not silently substituted: a spec that asks for it is
refused at submission, naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Algorithm(StrEnum):
    reno = "reno"
    newreno = "newreno"
    tahoe = "tahoe"
    cubic = "cubic"
    bbr = "bbr"
    bfa = "bfa"  # seed 000: TCP-BFA
    aaimd = "aaimd"  # seed 001: adaptive AIMD / adaptive backoff
    vegas = "vegas"  # seed 002
    dual = "dual"  # seed 002
    arb = "arb"  # seed 002: receiver-side one-way delay
    westwood = "westwood"  # seed 003
    paced_newreno = "paced_newreno"  # seed 003
    paced_westwood = "paced_westwood"  # seed 003
    alpha_paced_westwood = "alpha_paced_westwood"  # seed 003
    tfrc = "tfrc"  # seed 004: rate-based over UDP


class Runtime(StrEnum):
    kernel_builtin = "kernel/builtin"  # a controller the Linux kernel has (built in or a module)
    kernel_bpf = "kernel/bpf"  # a BPF struct_ops controller shipped by ccbench
    userspace = "userspace"  # the ccbench userspace transport


# Kernel name of each built-in controller. Whether a given host has it (module loaded or
# loadable) is probed at run time; the sender fails clearly when it is missing.
KERNEL_BUILTIN_NAMES: dict[Algorithm, str] = {
    Algorithm.reno: "reno",
    Algorithm.cubic: "cubic",
    Algorithm.bbr: "bbr",
    Algorithm.vegas: "vegas",
    Algorithm.westwood: "westwood",
}


@dataclass(frozen=True)
class Parameter:
    """A tunable of an algorithm, as the spec writes it (`flows[i].params.<name>`).

    BPF controllers hold it as the integer `bpf_symbol` = round(value x bpf_scale), a
    `const volatile` global their object declares (the loader writes it before registering)."""

    name: str
    default: float
    minimum: float
    maximum: float
    description: str
    bpf_symbol: str | None  # None: the algorithm has no BPF version
    bpf_scale: float
    integer: bool = False  # a count or a choice: fractional values are refused

    def bpf_value(self, value: float) -> int:
        """The integer the BPF object holds for `value`: round(value x bpf_scale)."""
        return round(value * self.bpf_scale)


# Westwood's bandwidth share estimate (seed 003 §III-A names a low-pass filter over the ACK
# rate without constants; these are Linux Westwood+'s).
_WESTWOOD_BSE = (
    Parameter("bse_gain", 0.875, 0.0, 1.0,
              "weight of the old estimate in each of BSE's two cascaded low-pass filters",
              "bse_gain_x256", 256),
    Parameter("bse_sample_min", 0.05, 0.001, 10,
              "s: shortest BSE sampling window, max(SRTT, this)", "bse_sample_min_us", 1e6),
)  # fmt: skip

# The seeds' tunables, with the seeds' values as defaults.
PARAMETERS: dict[Algorithm, tuple[Parameter, ...]] = {
    Algorithm.reno: (),
    Algorithm.bfa: (
        Parameter("sigma_on", 0.010, 0.0, 1.0,
                  "s: the BFA flag is set when the signed RTT variance exceeds it (seed 000 §3)",
                  "sigma_on_us", 1e6),
        Parameter("sigma_off", -0.010, -1.0, 0.0,
                  "s: the BFA flag is cleared when the signed RTT variance falls to it",
                  "sigma_off_us", 1e6),
        Parameter("alpha_srv", 0.5, 0.0, 255 / 256,
                  "gain of the signed RTT variance filter (1/2 in seed 000; 3/4 in its Fig. 21)",
                  "alpha_srv_x256", 256),
    ),
    Algorithm.vegas: (
        Parameter("alpha", 1, 0, 100,
                  "packets: below this Diff the window grows by one per RTT (seed 002: 1)",
                  "alpha_pkts", 1, integer=True),
        Parameter("beta", 3, 0, 100,
                  "packets: above this Diff the window shrinks by one per RTT (seed 002: 3)",
                  "beta_pkts", 1, integer=True),
        Parameter("gamma", 1, 0, 100,
                  "packets: slow start ends when Diff exceeds it", "gamma_pkts", 1, integer=True),
    ),
    Algorithm.aaimd: (
        Parameter("beta_max", 0.8, 0.5, 255 / 256,
                  "upper clamp of the backoff factor beta = RTTmin/RTTmax (seed 001 §III: 0.8)",
                  "beta_max_x256", 256),
        Parameter("rtt_max_fade", 0.875, 0.0, 1.0,
                  "fading memory a of RTTmax at each congestion event (seed 001 eq. 9: 7/8)",
                  "rtt_max_fade_x256", 256),
        Parameter("variant", 0, 0, 1,
                  "0: beta from the RTT ratio (eq. 4); 1: from the throughput ratio before and "
                  "after the event (seed 001 §V, eq. 10)", "variant", 1, integer=True),
    ),
    Algorithm.dual: (
        Parameter("a", 0.5, 0.0, 1.0,
                  "weight of Dmax in the delay threshold (1-a) Dmin + a Dmax (seed 002: 1/2)",
                  "a_x256", 256),
        Parameter("ss_every_other", 1, 0, 1,
                  "1: slow start doubles every other RTT, as the seed's TCP/Dual; 0: Reno's",
                  "ss_every_other", 1, integer=True),
    ),
    Algorithm.westwood: _WESTWOOD_BSE,
    Algorithm.paced_newreno: (),
    Algorithm.paced_westwood: _WESTWOOD_BSE,
    Algorithm.alpha_paced_westwood: (
        *_WESTWOOD_BSE,
        Parameter("alpha", 2.0, 0.125, 16,
                  "slow start is paced at alpha x BSE (seed 003 §III-C.2, eq. 4; 2 in Fig. 6)",
                  "alpha_x256", 256),
    ),
}  # fmt: skip

# Tunables of the userspace-only algorithms (ccbench-cc; no BPF symbol).
USERSPACE_PARAMETERS: dict[Algorithm, tuple[Parameter, ...]] = {
    Algorithm.arb: (
        Parameter("measurement_interval", 0.1, 0.001, 10,
                  "s: least sender-clock time between two delay probes (seed 002, RTP's minimum)",
                  None, 1),
        Parameter("increase_threshold", 1, 0, 1e6,
                  "packets: a queue estimate at or below it gives RATEINCREASE (seed 002: 1)",
                  None, 1),
        Parameter("decrease_threshold", 10, 0, 1e6,
                  "packets: a queue estimate above it gives RATEDECREASE (seed 002: 10)", None, 1),
        Parameter("noise_threshold", 40, 0, 1e9,
                  "packets: an estimate above it is noise, the command is RESTRAIN (seed 002: 40)",
                  None, 1),
    ),
    Algorithm.tfrc: (
        Parameter("strategy", 1, 1, 3,
                  "round length: 1 fixed m (S1), 2 k x RTT (S2), 3 s3_constant + uniform random "
                  "(S3) (seed 004 §III-C.1)", None, 1, integer=True),
        Parameter("m", 3.0, 0.01, 600, "s: S1 round length (seed 004 §IV: 3 s)", None, 1),
        Parameter("k", 10, 0.1, 1000, "S2: rounds last k x SRTT (seed 004: 10-60)", None, 1),
        Parameter("s3_constant", 1.5, 0.01, 600, "s: S3 constant part", None, 1),
        Parameter("s3_random", 3.0, 0, 600, "s: S3 width of the uniform random part", None, 1),
        Parameter("r0", 40, 0.01, 1e7, "packets/s: initial rate (seed 004: about 40)", None, 1),
        Parameter("w_max", 100, 1, 1e6, "packets: the receiver window W_max of the formula",
                  None, 1),
        Parameter("rto_min", 1.0, 0.001, 60, "s: lower bound of the base timeout B", None, 1),
    ),
}  # fmt: skip

# Algorithms that cannot be kernel TCP controllers, and why: they run only in ccbench's
# userspace transport (issue 5).
USERSPACE_ONLY: dict[Algorithm, str] = {
    Algorithm.arb: "ARB needs the receiver to measure one-way delay changes (seed 002)",
    Algorithm.tfrc: "TFRC is a rate-based protocol over UDP with receiver feedback (seed 004)",
}

# Algorithms ccbench ships as BPF struct_ops controllers (agents/kernel/bpf/<id>.bpf.c).
BPF_ALGORITHMS: frozenset[Algorithm] = frozenset(PARAMETERS)

# BPF controllers that pace every segment (seed 003 §II-A.1: pacing exists to avoid bursts).
# Emulated senders of these send each segment as its own skb (workers/planning.py:
# one_segment_per_send): the kernel's TSO sizing otherwise now and then ignores their
# min_tso_segs op and sends one skb of many segments back to back (westwood_common.h).
PACED_EACH_SEGMENT: frozenset[Algorithm] = frozenset(
    {Algorithm.paced_newreno, Algorithm.paced_westwood, Algorithm.alpha_paced_westwood}
)

# Algorithms of ccbench's userspace controller crate (agents/ccbench-cc/src/<id>.rs): every
# seed algorithm and the TCP variants they are compared with, not cubic or bbr.
USERSPACE_ALGORITHMS: frozenset[Algorithm] = frozenset(Algorithm) - {Algorithm.cubic, Algorithm.bbr}

IMPLEMENTED_RUNTIMES: dict[Algorithm, frozenset[Runtime]] = {
    algorithm: frozenset(
        ({Runtime.kernel_builtin} if algorithm in KERNEL_BUILTIN_NAMES else set())
        | ({Runtime.kernel_bpf} if algorithm in BPF_ALGORITHMS else set())
        | ({Runtime.userspace} if algorithm in USERSPACE_ALGORITHMS else set())
    )
    for algorithm in Algorithm
}


def runtimes_of(algorithm: Algorithm) -> frozenset[Runtime]:
    return IMPLEMENTED_RUNTIMES[algorithm]


def parameters_of(algorithm: Algorithm, runtime: Runtime) -> tuple[Parameter, ...]:
    """The tunables a flow of `algorithm` on `runtime` accepts: the same names in BPF and in
    userspace; built-in kernel controllers take none."""
    if runtime == Runtime.kernel_bpf:
        return PARAMETERS.get(algorithm, ())
    if runtime == Runtime.userspace:
        return PARAMETERS.get(algorithm, ()) + USERSPACE_PARAMETERS.get(algorithm, ())
    return ()
