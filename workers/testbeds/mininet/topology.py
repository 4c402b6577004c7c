"""The dumbbell as pure data: nodes, links, addresses, routes, and where the bottleneck queue
and the delay go. The sandbox turns it into a Mininet network; nothing here touches the host.

    s_1 ..                                        .. d_1
           \\                                     /
            r1 --(bottleneck: r1-eth0 -> r2)-- r2
           /                                     \\
    s_N ..                                        .. d_N

Addresses: sender s_i 10.1.i.1/24 (router side 10.1.i.254), r1 10.0.0.1/30 - r2 10.0.0.2/30,
receiver d_i 10.2.i.1/24 (router side 10.2.i.254); i = flow index + 1.

The bottleneck queue (htb rate + pfifo/bfifo buffer) sits on r1's interface towards r2, in the
data direction. The one-way delay is applied on r2 in both directions (data towards the
receivers, ACKs towards r1), away from the bottleneck queue: with netem, as r2's egress
qdiscs; without netem, as two NFQUEUE delay lines in r2's FORWARD chain. Base RTT = 2 x delay.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FLOWS = 64


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
class Dumbbell:
    flows: int
    senders: list[str]
    receivers: list[str]
    routers: list[str]
    links: list[LinkSpec]
    routes: list[Route]
    bottleneck_interface: str  # on r1, towards r2 (data direction)
    delay_interface: str  # on r2, towards r1: data enters r2 here, ACKs leave here
    receiver_side_interfaces: list[str]  # on r2, towards the receivers
    receiver_addresses: list[str]
    sender_addresses: list[str]

    @property
    def hosts(self) -> list[str]:
        return [*self.senders, *self.routers, *self.receivers]


def dumbbell(flows: int) -> Dumbbell:
    if not 1 <= flows <= MAX_FLOWS:
        raise ValueError(f"a dumbbell has 1..{MAX_FLOWS} flows, not {flows}")
    senders = [f"s{i}" for i in range(1, flows + 1)]
    receivers = [f"d{i}" for i in range(1, flows + 1)]
    links = [
        LinkSpec(
            Interface("r1", "r1-eth0", "10.0.0.1/30"), Interface("r2", "r2-eth0", "10.0.0.2/30")
        )
    ]
    routes: list[Route] = [
        Route("r1", "10.2.0.0/16", "10.0.0.2"),
        Route("r2", "10.1.0.0/16", "10.0.0.1"),
    ]
    for i in range(1, flows + 1):
        links.append(
            LinkSpec(
                Interface(f"s{i}", f"s{i}-eth0", f"10.1.{i}.1/24"),
                Interface("r1", f"r1-eth{i}", f"10.1.{i}.254/24"),
            )
        )
        links.append(
            LinkSpec(
                Interface(f"d{i}", f"d{i}-eth0", f"10.2.{i}.1/24"),
                Interface("r2", f"r2-eth{i}", f"10.2.{i}.254/24"),
            )
        )
        routes.append(Route(f"s{i}", "default", f"10.1.{i}.254"))
        routes.append(Route(f"d{i}", "default", f"10.2.{i}.254"))
    return Dumbbell(
        flows=flows,
        senders=senders,
        receivers=receivers,
        routers=["r1", "r2"],
        links=links,
        routes=routes,
        bottleneck_interface="r1-eth0",
        delay_interface="r2-eth0",
        receiver_side_interfaces=[f"r2-eth{i}" for i in range(1, flows + 1)],
        receiver_addresses=[f"10.2.{i}.1" for i in range(1, flows + 1)],
        sender_addresses=[f"10.1.{i}.1" for i in range(1, flows + 1)],
    )


def htb_burst_bytes(rate_bps: float, mtu_bytes: int = 1514) -> int:
    """Token bucket size: at least 10 MTU and 1 ms of tokens (DESIGN.md: below that, tbf/htb
    lose rate at 10-100 Mbit/s)."""
    return int(max(10 * mtu_bytes, rate_bps * 1e-3 / 8))
