"""Packing runs on one host: a run starts only when its predicted CPU cost fits beside the runs
already running there, and never more.

**Why a ledger and not Celery alone.** A worker runs up to `settings.worker_concurrency` runs
at once (Celery's prefork pool, one run per pool process; the dispatcher sends it a message per
slot plus `dispatch_prefetch`, and `acks_late` with a prefetch multiplier of 1 keeps the rest
in the database). Celery only counts tasks, and runs differ by orders of magnitude in what
they cost (a 1 Mbit/s Reno flow against a 20 Mbit/s userspace pair), and several workers of an
installation may share one host's CPUs. So each run, before it is claimed, takes its predicted
cost from a per-host budget kept in a small ledger file (`settings.pack_ledger`, default
`<state_dir>/packing.json`, changed under an flock like the BPF ledger, workers/bpf_ledger.py)
and waits, still `queued`, until it fits. A custom consumer would have to re-implement
Celery's acknowledgement, time limits and pool supervision; a dispatcher-side budget would
know workers, not hosts, and not what a run costs while it is only in the broker.

The rules (`Ledger.try_admit`): runs start in the order they asked (the oldest live waiter
first, so a costly run is never starved by cheap ones); the costs of the runs holding the
budget plus the newcomer's stay within it (a run that alone exceeds the budget runs alone);
an `exclusive` run (a re-run after its load checks failed) starts only on an empty host and
nothing starts beside it. Entries of processes that died are dropped on every read, so a
killed pool process never holds budget. Each holder keeps the set of runs that held the budget
beside it at any moment ("runs beside it", recorded on the run).

**The cost model** (`predicted_cost_cores`): the CPU cores a run keeps busy on average, from
`RUN_COSTS`, measured by `make bench-runcost`, x the spec's configured rates."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ccbench.settings import Settings
from schemas import ExperimentSpec
from workers.bpf_ledger import Ledger

FlowKind = Literal["kernel", "bpf", "userspace"]

# Bytes per packet the model assumes at the bottleneck (full-size segments).
PACKET_BYTES = 1500


@dataclass(frozen=True)
class RunCosts:
    """CPU a run costs its host, by the kind of its flows. Measured by `make bench-runcost`
    (bench/runcost.py) on the 2-core development VM, 2026-11-24 14:58 UTC (load average
    0.3-0.6, nothing else running), with the emulator that spins before each release: 8 s
    dumbbell runs of two flows at 5 and 20 Mbit/s and of 12 flows at 5 Mbit/s, every CPU
    second of the run's process tree; a line through the two rates, the 12-flow run for the
    per-flow part; the medians of 2 such sets per kind. README, "Packing runs on a host", has
    the spread."""

    # CPU seconds of one run whatever its traffic: the sandbox's Python, namespaces, links,
    # pings, the agents' start and stop (and bpftool for BPF controllers).
    fixed_cpu_s: dict[FlowKind, float]
    # CPU cores each flow keeps busy whatever its rate: its agents' report timers and, for the
    # userspace transport, its ticks and the spin before each departure. Small per flow, but
    # a run of 50 flows at 1.5 Mbit/s costs mostly this.
    flow_cores: dict[FlowKind, float]
    # CPU per data packet through the bottleneck of its emulator processes (both directions:
    # the data packet and its ACKs, whose number depends on the flows' ACK policy, with the
    # forwarding an accept verdict runs in them).
    emulator_us_per_packet: dict[FlowKind, float]
    # CPU per data packet of the flows' end hosts beyond the emulator: the sending and
    # receiving agents and their kernel TCP (or userspace transport) work.
    agent_us_per_packet: dict[FlowKind, float]


RUN_COSTS = RunCosts(
    fixed_cpu_s={"kernel": 0.49, "bpf": 0.57, "userspace": 0.29},
    flow_cores={"kernel": 0.019, "bpf": 0.0175, "userspace": 0.0485},
    emulator_us_per_packet={"kernel": 94.0, "bpf": 96.0, "userspace": 122.0},
    agent_us_per_packet={"kernel": 17.0, "bpf": 9.6, "userspace": 49.0},
)


def flow_kind(agent: str, runtime: str) -> FlowKind:
    if agent == "userspace":
        return "userspace"
    return "bpf" if runtime == "bpf" else "kernel"


def predicted_cost_cores(spec: ExperimentSpec, costs: RunCosts = RUN_COSTS) -> float:
    """The CPU cores the run keeps busy on average over its duration: its fixed CPU spread over
    the duration, plus each flow's own, plus, at each emulated link's configured rate in
    full-size packets, the emulator's CPU per packet, plus at the bottleneck's rate the flows'
    agents' CPU per packet (the flows share the bottleneck; per packet the mean over their
    kinds). A run on real hosts (the hosts testbed) costs this host only its fixed part
    (Ansible)."""
    kinds = [flow_kind(f.agent, f.runtime) for f in spec.flows]
    fixed = max(costs.fixed_cpu_s[k] for k in kinds)
    cores = fixed / max(spec.duration, 1.0)
    if spec.testbed.kind != "mininet" or not spec.links:
        return cores
    cores += sum(costs.flow_cores[k] for k in kinds)
    emulator_us = sum(costs.emulator_us_per_packet[k] for k in kinds) / len(kinds)
    agent_us = sum(costs.agent_us_per_packet[k] for k in kinds) / len(kinds)
    emulator_pps = sum(link.rate / (8 * PACKET_BYTES) for link in spec.links)
    bottleneck_pps = spec.bottleneck.rate / (8 * PACKET_BYTES)
    return cores + (emulator_pps * emulator_us + bottleneck_pps * agent_us) / 1e6


def budget_cores(settings: Settings) -> float:
    """The host's CPU budget for runs: settings.pack_cpu_share of its CPUs."""
    return settings.pack_cpu_share * (os.cpu_count() or 1)


@dataclass
class Admission:
    """A run's hold on the budget, from `Ledger.admit` until `release`."""

    ledger: PackingLedger
    run_id: str
    cost_cores: float
    budget_cores: float
    exclusive: bool
    asked_at: float  # Unix s
    admitted_at: float

    def beside(self) -> list[str]:
        """The runs that have held the budget beside this one so far."""
        with self.ledger.file.open() as entries:
            held = entries.get("holders", {}).get(_key(self.run_id), {})
            return sorted(held.get("beside", []))

    def release_and_record(self) -> dict[str, Any]:
        """Release the budget and say what the run's provenance records of its packing: the
        runs beside it are those that held the budget while it did, up to this release (one
        ledger change, so a run admitted later is never beside it, nor missed)."""
        with self.ledger.file.open() as entries:
            held = entries.get("holders", {}).pop(_key(self.run_id), {})
            beside = sorted(held.get("beside", []))
            released_at = time.time()
        return {
            "cost_cores": round(self.cost_cores, 4),
            "budget_cores": round(self.budget_cores, 4),
            "exclusive": self.exclusive,
            "waited_s": round(self.admitted_at - self.asked_at, 3),
            "admitted_at": self.admitted_at,
            "released_at": released_at,
            "runs_beside": len(beside),
            "beside": beside,
        }

    def release(self) -> None:
        with self.ledger.file.open() as entries:
            entries.get("holders", {}).pop(_key(self.run_id), None)


class PackingLedger:
    """The budget's holders and waiters on this host, keyed `<run id>@<pid>`:
    `{"holders": {key: {run, cost, pid, since, exclusive, beside}}, "waiting": {key: {run,
    cost, pid, since, exclusive}}}` (`beside`: the run ids that held the budget beside it)."""

    def __init__(self, path: Path) -> None:
        self.file = Ledger(path, lock_name=path.name + ".lock")

    def try_admit(
        self, run_id: str, cost: float, budget: float, exclusive: bool, asked_at: float
    ) -> bool:
        """One attempt: True when the run now holds its cost (it stays a waiter otherwise).
        Entries are keyed by run and process: a duplicate message of a run (a redelivery) in
        another pool process has its own entry, and releasing it leaves the other's alone."""
        key = _key(run_id)
        with self.file.open() as entries:
            holders: dict[str, Any] = entries.setdefault("holders", {})
            waiting: dict[str, Any] = entries.setdefault("waiting", {})
            for table in (holders, waiting):
                for dead in [k for k, v in table.items() if not _alive(int(v["pid"]))]:
                    del table[dead]
            me = {"run": run_id, "cost": cost, "pid": os.getpid(), "since": asked_at,
                  "exclusive": exclusive}  # fmt: skip
            waiting.setdefault(key, me)
            first = min(waiting, key=lambda k: (waiting[k]["since"], k))
            held = sum(float(h["cost"]) for h in holders.values())
            fits = not holders or (
                not exclusive
                and not any(h["exclusive"] for h in holders.values())
                and held + cost <= budget + 1e-9
            )
            if first != key or not fits:
                return False
            del waiting[key]
            for other in holders.values():
                other["beside"] = sorted({*other["beside"], run_id})
            beside = sorted({h["run"] for h in holders.values()})
            holders[key] = {**me, "since": time.time(), "beside": beside}
            return True

    def give_up(self, run_id: str) -> None:
        with self.file.open() as entries:
            entries.get("waiting", {}).pop(_key(run_id), None)

    def admit(
        self,
        run_id: str,
        cost: float,
        budget: float,
        *,
        exclusive: bool,
        wait_s: float,
        poll_s: float = 0.2,
        still_wanted: Callable[[], bool] = lambda: True,
        ask_every_s: float = 1.0,
    ) -> Admission | None:
        """Wait (at most `wait_s`) until the run fits; None if it did not in time, or as soon as
        `still_wanted` (asked every `ask_every_s`) says the run is no longer to be run, so that
        a cancelled run does not keep its place ahead of the runs behind it."""
        asked_at = time.time()
        deadline = time.monotonic() + wait_s
        next_ask = time.monotonic() + ask_every_s
        try:
            while not self.try_admit(run_id, cost, budget, exclusive, asked_at):
                now = time.monotonic()
                wanted = True
                if now >= next_ask:
                    next_ask = now + ask_every_s
                    wanted = still_wanted()
                if not wanted or now >= deadline:
                    self.give_up(run_id)  # not wanted any more, or no room in time
                    return None
                time.sleep(poll_s)
        except BaseException:  # nobody waits behind a run that stopped asking
            self.give_up(run_id)
            raise
        return Admission(self, run_id, cost, budget, exclusive, asked_at, time.time())


def _key(run_id: str) -> str:
    return f"{run_id}@{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@lru_cache
def ledger_at(path: Path) -> PackingLedger:
    """The process's one ledger object for `path` (one lock owner per file and process)."""
    return PackingLedger(path)


def host_ledger(settings: Settings) -> PackingLedger:
    return ledger_at(settings.pack_ledger or settings.state_dir / "packing.json")


@contextlib.contextmanager
def holding(admission: Admission) -> Iterator[Admission]:
    try:
        yield admission
    finally:
        admission.release()
