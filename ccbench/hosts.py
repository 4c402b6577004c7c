"""What a worker needs to reach a team's registered hosts (the `hosts` testbed): addresses,
users, pinned host keys and decrypted private keys. Never stored elsewhere or returned by the
API; the inventory itself (create, list, groups) is the API's hosts domain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ccbench import secrets
from ccbench.db.models import Host
from ccbench.db.session import session_scope
from ccbench.errors import NotFound


@dataclass(frozen=True)
class HostAccess:
    """One host as a worker reaches it."""

    name: str
    address: str
    port: int
    user: str
    labels: dict[str, str]
    private_key: str | None  # decrypted; the worker writes it to a 0600 file for the run
    credential_ref: str | None
    data_address: str | None = None
    host_key: str | None = None
    install_prefix: str | None = None

    @property
    def flow_address(self) -> str:
        """Where flows to the host are sent: its experiment-network address, else its SSH one."""
        return self.data_address or self.address


def access_for(session: Session, team_id: str, names: Sequence[str]) -> list[HostAccess]:
    """The named hosts of a team, with their decrypted keys, in the order given; NotFound names
    the hosts that are not in the team's inventory."""
    hosts = {
        h.name: h
        for h in session.scalars(
            select(Host).where(Host.team_id == team_id, Host.name.in_(list(names)))
        ).all()
    }
    missing = [n for n in names if n not in hosts]
    if missing:
        raise NotFound(f"host not in the team's inventory: {', '.join(missing)}")
    return [
        HostAccess(
            name=h.name,
            address=h.address,
            port=h.port,
            user=h.user,
            labels=dict(h.labels),
            private_key=secrets.decrypt(h.private_key_encrypted)
            if h.private_key_encrypted
            else None,
            credential_ref=h.credential_ref,
            data_address=h.data_address,
            host_key=h.host_key,
            install_prefix=h.install_prefix,
        )
        for h in (hosts[n] for n in names)
    ]


def load_access(team_id: str, names: Sequence[str]) -> list[HostAccess]:
    """access_for in a session of its own (workers)."""
    with session_scope() as session:
        return access_for(session, team_id, names)
