"""Topologies as pure data: nodes, links, addresses, routes, and where each emulated link's
queues are. The sandbox turns them into a Mininet network; nothing here touches the host.

Every topology is a chain of routers r1 .. r(k+1) joined by k links (k = 1: the dumbbell;
k >= 2: a parking lot, e.g. seed 002's R1-R4 or seed 001's two-bottleneck path). Flow i
(1-based) has its own sender s_i attached to its entry router and receiver d_i attached to its
exit router, so cross traffic can enter and leave at any hop:

    s_1 -- r1 ==link 0== r2 ==link 1== r3 -- d_1
                         |              |
                        s_2 ---------- d_2        (flow 2 crosses link 1 only)

Addresses: link j between r(j+1) and r(j+2) is 10.0.j.1/30 - 10.0.j.2/30; s_i is 10.1.i.1/24
and d_i 10.2.i.1/24, each with its router at .254. Interfaces are named after both ends:
r1-r2 on r1 towards r2, r1-s1 on r1 towards s1, s1-eth0 on s1.

Link j is emulated on r(j+1) for both directions: packets leaving r(j+1) towards r(j+2)
(forward, the data direction) and packets arriving from r(j+2) (reverse: ACKs and
reverse-path traffic). Each router holds only the queues of the link to its right, so a packet
meets each link's queue exactly once. Base RTT of a flow = 2 x the sum of the one-way delays of
the links on its path (+ its access delay).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FLOWS = 64
MAX_LINKS = 8


@dataclass(frozen=True)
class Interface:
    node: str
    name: str
    address: str  # CIDR


@dataclass(frozen=True)
class LinkSpec:
    a: Interface
    b: Interface


@dataclass(frozen=True)
class Route:
    node: str
    destination: str  # CIDR or "default"
    via: str


@dataclass(frozen=True)
class Chain:
    links: int  # router-router links
    senders: list[str]
    receivers: list[str]
    routers: list[str]
    wires: list[LinkSpec]
    routes: list[Route]
    sender_addresses: list[str]
    receiver_addresses: list[str]
    entry_routers: list[str]  # per flow
    exit_routers: list[str]  # per flow

    @property
    def hosts(self) -> list[str]:
        return [*self.senders, *self.routers, *self.receivers]

    def link_router(self, j: int) -> str:
        """The router on which link j is emulated (its left end)."""
        return f"r{j + 1}"

    def link_interface(self, j: int) -> str:
        """Link j's interface on that router, towards the next router."""
        return f"r{j + 1}-r{j + 2}"

    def far_interface(self, j: int) -> str:
        """Link j's interface on its right-end router, towards the previous router."""
        return f"r{j + 2}-r{j + 1}"

    def sender_interface(self, i: int) -> str:
        """Flow i's access link on its entry router (0-based flow index)."""
        return f"{self.entry_routers[i]}-s{i + 1}"

    def receiver_interface(self, i: int) -> str:
        return f"{self.exit_routers[i]}-d{i + 1}"


def chain(links: int, paths: list[tuple[int, int]]) -> Chain:
    """A chain of `links` links; flow i enters at router paths[i][0] and leaves at router
    paths[i][1] (router indices 0 .. links, entry < exit)."""
    if not 1 <= links <= MAX_LINKS:
        raise ValueError(f"a chain has 1..{MAX_LINKS} links, not {links}")
    if not 1 <= len(paths) <= MAX_FLOWS:
        raise ValueError(f"a topology has 1..{MAX_FLOWS} flows, not {len(paths)}")
    for i, (entry, leave) in enumerate(paths):
        if not 0 <= entry < leave <= links:
            raise ValueError(f"flow {i}: path {entry}->{leave} is not a path of the chain")
    routers = [f"r{m}" for m in range(1, links + 2)]
    wires = [
        LinkSpec(
            Interface(f"r{j + 1}", f"r{j + 1}-r{j + 2}", f"10.0.{j}.1/30"),
            Interface(f"r{j + 2}", f"r{j + 2}-r{j + 1}", f"10.0.{j}.2/30"),
        )
        for j in range(links)
    ]
    senders, receivers, entries, exits = [], [], [], []
    attached: list[tuple[str, int]] = []  # (subnet, router index 0-based)
    for n, (entry, leave) in enumerate(paths, start=1):
        s, d = f"s{n}", f"d{n}"
        r_in, r_out = f"r{entry + 1}", f"r{leave + 1}"
        senders.append(s)
        receivers.append(d)
        entries.append(r_in)
        exits.append(r_out)
        wires.append(
            LinkSpec(
                Interface(s, f"{s}-eth0", f"10.1.{n}.1/24"),
                Interface(r_in, f"{r_in}-{s}", f"10.1.{n}.254/24"),
            )
        )
        wires.append(
            LinkSpec(
                Interface(d, f"{d}-eth0", f"10.2.{n}.1/24"),
                Interface(r_out, f"{r_out}-{d}", f"10.2.{n}.254/24"),
            )
        )
        attached += [(f"10.1.{n}.0/24", entry), (f"10.2.{n}.0/24", leave)]
    routes: list[Route] = []
    for n in range(1, len(paths) + 1):
        routes.append(Route(f"s{n}", "default", f"10.1.{n}.254"))
        routes.append(Route(f"d{n}", "default", f"10.2.{n}.254"))
    for m in range(links + 1):  # router index, 0-based
        for subnet, at in attached:
            if at > m:  # to the right: via the next router on link m
                routes.append(Route(f"r{m + 1}", subnet, f"10.0.{m}.2"))
            elif at < m:  # to the left: via the previous router on link m - 1
                routes.append(Route(f"r{m + 1}", subnet, f"10.0.{m - 1}.1"))
    return Chain(
        links=links,
        senders=senders,
        receivers=receivers,
        routers=routers,
        wires=wires,
        routes=routes,
        sender_addresses=[f"10.1.{n}.1" for n in range(1, len(paths) + 1)],
        receiver_addresses=[f"10.2.{n}.1" for n in range(1, len(paths) + 1)],
        entry_routers=entries,
        exit_routers=exits,
    )


def htb_burst_bytes(rate_bps: float, mtu_bytes: int = 1514) -> int:
    """Token bucket size: at least 10 MTU and 1 ms of tokens (measured: below that, tbf/htb
    lose rate at 10-100 Mbit/s)."""
    return int(max(10 * mtu_bytes, rate_bps * 1e-3 / 8))
