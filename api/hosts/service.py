"""The host inventory of a team: hosts reached over SSH and groups of them. Everything is
scoped to the team of the request. Private keys are checked (parseable, no passphrase),
encrypted with the settings' secret key, and only their fingerprint is ever shown."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from cryptography.exceptions import UnsupportedAlgorithm as UnsupportedAlgorithmError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization.ssh import SSHPrivateKeyTypes
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from api.hosts.schemas import GroupCreate, GroupOut, GroupUpdate, HostCreate, HostOut, HostUpdate
from ccbench import secrets
from ccbench.db.models import Host, HostGroup, HostGroupMember, Team
from ccbench.errors import Conflict, NotFound, ValidationFailed


def key_fingerprint(private_key: str) -> str:
    """SHA256 fingerprint of the key's public half, as `ssh-keygen -lf` prints it. Raises
    ValidationFailed naming `private_key` when the key is unusable for unattended SSH."""
    data = private_key.strip().encode() + b"\n"
    key: PrivateKeyTypes | SSHPrivateKeyTypes
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # the key is encrypted
        raise ValidationFailed.field(
            "private_key", "the key has a passphrase; SSH runs unattended"
        ) from exc
    except (ValueError, UnsupportedAlgorithmError) as exc:
        raise ValidationFailed.field("private_key", f"not a private key ({exc})") from exc
    try:
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    except ValueError as exc:  # e.g. a DH or X25519 key: not usable for SSH
        raise ValidationFailed.field("private_key", f"not an SSH key type ({exc})") from exc
    blob = base64.b64decode(public.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def to_out(host: Host, groups: list[str]) -> HostOut:
    auth = (
        "private_key"
        if host.private_key_encrypted
        else "credential_ref"
        if host.credential_ref
        else "worker_default"
    )
    return HostOut(
        id=host.id,
        name=host.name,
        address=host.address,
        port=host.port,
        user=host.user,
        labels=host.labels,
        auth=auth,
        key_fingerprint=host.key_fingerprint,
        credential_ref=host.credential_ref,
        data_address=host.data_address,
        host_key=host.host_key,
        install_prefix=host.install_prefix,
        groups=groups,
        created_at=host.created_at,
        updated_at=host.updated_at,
    )


def group_names_of(session: Session, host_ids: Sequence[str]) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {host_id: [] for host_id in host_ids}
    rows = session.execute(
        select(HostGroupMember.host_id, HostGroup.name)
        .join(HostGroup, HostGroup.id == HostGroupMember.group_id)
        .where(HostGroupMember.host_id.in_(host_ids))
        .order_by(HostGroup.name)
    ).all()
    for host_id, group in rows:
        names[host_id].append(group)
    return names


def get_host(session: Session, team: Team, name: str) -> Host:
    host = session.scalar(select(Host).where(Host.team_id == team.id, Host.name == name))
    if host is None:
        raise NotFound(f"host {name!r} not found")
    return host


def get_group(session: Session, team: Team, name: str) -> HostGroup:
    group = session.scalar(
        select(HostGroup).where(HostGroup.team_id == team.id, HostGroup.name == name)
    )
    if group is None:
        raise NotFound(f"host group {name!r} not found")
    return group


def _groups_named(session: Session, team: Team, names: list[str], field: str) -> list[HostGroup]:
    groups = session.scalars(
        select(HostGroup).where(HostGroup.team_id == team.id, HostGroup.name.in_(names))
    ).all()
    missing = sorted(set(names) - {g.name for g in groups})
    if missing:
        raise ValidationFailed.field(field, f"no such host group: {', '.join(missing)}")
    return list(groups)


def _hosts_named(session: Session, team: Team, names: list[str], field: str) -> list[Host]:
    hosts = session.scalars(select(Host).where(Host.team_id == team.id, Host.name.in_(names))).all()
    missing = sorted(set(names) - {h.name for h in hosts})
    if missing:
        raise ValidationFailed.field(field, f"no such host: {', '.join(missing)}")
    return list(hosts)


def _set_private_key(host: Host, private_key: str | None) -> None:
    if private_key is None:
        host.private_key_encrypted = None
        host.key_fingerprint = None
        return
    host.key_fingerprint = key_fingerprint(private_key)
    host.private_key_encrypted = secrets.encrypt(private_key.strip() + "\n")
    host.credential_ref = None


def create_host(session: Session, team: Team, body: HostCreate) -> HostOut:
    if session.scalar(select(Host).where(Host.team_id == team.id, Host.name == body.name)):
        raise Conflict(f"host {body.name!r} already exists")
    groups = _groups_named(session, team, body.groups, "groups")
    host = Host(
        team_id=team.id,
        name=body.name,
        address=body.address,
        port=body.port,
        user=body.user,
        labels=body.labels,
        credential_ref=body.credential_ref,
        data_address=body.data_address,
        host_key=body.host_key,
        install_prefix=body.install_prefix,
    )
    if body.private_key is not None:
        _set_private_key(host, body.private_key.get_secret_value())
    session.add(host)
    session.flush()
    for group in groups:
        session.add(HostGroupMember(group_id=group.id, host_id=host.id))
    session.flush()
    return to_out(host, sorted(g.name for g in groups))


def update_host(session: Session, team: Team, name: str, body: HostUpdate) -> HostOut:
    host = get_host(session, team, name)
    given = body.model_fields_set
    for field in ("address", "port", "user", "labels"):
        if field in given:
            value = getattr(body, field)
            if value is None:
                raise ValidationFailed.field(field, "cannot be null")
            setattr(host, field, value)
    for field in ("data_address", "host_key", "install_prefix"):  # null removes the value
        if field in given:
            setattr(host, field, getattr(body, field))
    if "private_key" in given:
        _set_private_key(host, body.private_key.get_secret_value() if body.private_key else None)
    if "credential_ref" in given:
        host.credential_ref = body.credential_ref
        if body.credential_ref is not None:
            _set_private_key(host, None)
    if "groups" in given and body.groups is not None:
        groups = _groups_named(session, team, body.groups, "groups")
        session.execute(delete(HostGroupMember).where(HostGroupMember.host_id == host.id))
        for group in groups:
            session.add(HostGroupMember(group_id=group.id, host_id=host.id))
    session.flush()
    session.refresh(host)
    return to_out(host, group_names_of(session, [host.id])[host.id])


def delete_host(session: Session, team: Team, name: str) -> None:
    session.delete(get_host(session, team, name))
    session.flush()


def list_hosts(
    session: Session, team: Team, *, labels: dict[str, str], group: str | None
) -> list[HostOut]:
    query = select(Host).where(Host.team_id == team.id).order_by(Host.name)
    if group is not None:
        query = query.where(
            Host.id.in_(
                select(HostGroupMember.host_id).where(
                    HostGroupMember.group_id == get_group(session, team, group).id
                )
            )
        )
    # Label filters in Python: portable across PostgreSQL (JSONB) and SQLite (JSON).
    hosts = [
        h
        for h in session.scalars(query).all()
        if all(h.labels.get(k) == v for k, v in labels.items())
    ]
    groups = group_names_of(session, [h.id for h in hosts])
    return [to_out(h, groups[h.id]) for h in hosts]


def group_out(group: HostGroup) -> GroupOut:
    return GroupOut(
        id=group.id,
        name=group.name,
        labels=group.labels,
        hosts=[h.name for h in group.hosts],
        created_at=group.created_at,
    )


def create_group(session: Session, team: Team, body: GroupCreate) -> GroupOut:
    if session.scalar(
        select(HostGroup).where(HostGroup.team_id == team.id, HostGroup.name == body.name)
    ):
        raise Conflict(f"host group {body.name!r} already exists")
    hosts = _hosts_named(session, team, body.hosts, "hosts")
    group = HostGroup(team_id=team.id, name=body.name, labels=body.labels)
    session.add(group)
    session.flush()
    for host in hosts:
        session.add(HostGroupMember(group_id=group.id, host_id=host.id))
    session.flush()
    session.refresh(group)
    return group_out(group)


def list_groups(session: Session, team: Team) -> list[GroupOut]:
    groups = session.scalars(
        select(HostGroup).where(HostGroup.team_id == team.id).order_by(HostGroup.name)
    ).all()
    return [group_out(g) for g in groups]


def update_group(session: Session, team: Team, name: str, body: GroupUpdate) -> GroupOut:
    group = get_group(session, team, name)
    if body.labels is not None:
        group.labels = body.labels
    if body.hosts is not None:
        hosts = _hosts_named(session, team, body.hosts, "hosts")
        session.execute(delete(HostGroupMember).where(HostGroupMember.group_id == group.id))
        for host in hosts:
            session.add(HostGroupMember(group_id=group.id, host_id=host.id))
    session.flush()
    session.refresh(group)
    return group_out(group)


def delete_group(session: Session, team: Team, name: str) -> None:
    session.delete(get_group(session, team, name))
    session.flush()
