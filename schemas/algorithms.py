"""One id per congestion-control algorithm, everywhere (schema, agents, reports), and the
runtimes that implement it *in this version of ccbench*.

A runtime missing from an entry is absent, not silently substituted: a spec that asks for it is
refused at submission, naming the field."""

from __future__ import annotations

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

IMPLEMENTED_RUNTIMES: dict[Algorithm, frozenset[Runtime]] = {
    algorithm: frozenset({Runtime.kernel_builtin})
    if algorithm in KERNEL_BUILTIN_NAMES
    else frozenset()
    for algorithm in Algorithm
}


def runtimes_of(algorithm: Algorithm) -> frozenset[Runtime]:
    return IMPLEMENTED_RUNTIMES[algorithm]
