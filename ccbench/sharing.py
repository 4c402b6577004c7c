"""Read-only sharing of a team's resources with other teams, or with everyone (public).

One small piece for every kind of resource: a grant names the resource by kind and id
(`experiment`, `campaign`), the team that owns it, and the team it is shared with (none: every
team). A resource's owner changes it; a team it is shared with only reads it, and anything
that changes or cancels it answers that it is read-only (ccbench.errors.Forbidden). A kind's
queries ask `readable(kind, team_id, owner_column, id_column)` for the rows a team may read,
and `accesses` how it reads each row it found."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from ccbench.access import Access
from ccbench.db.models import Grant, Team
from ccbench.errors import ValidationFailed


class ResourceKind(StrEnum):
    experiment = "experiment"
    campaign = "campaign"


@dataclass(frozen=True)
class Shares:
    """Who besides its owner may read a resource."""

    public: bool
    teams: list[str]  # team names, sorted


def _grants_to(kind: ResourceKind, team_id: str) -> ColumnElement[bool]:
    return (Grant.resource_kind == kind.value) & or_(
        Grant.grantee_team_id == team_id, Grant.grantee_team_id.is_(None)
    )


def readable(
    kind: ResourceKind,
    team_id: str,
    owner_column: InstrumentedAttribute[str],
    id_column: InstrumentedAttribute[str],
) -> ColumnElement[bool]:
    """A WHERE clause: the rows of `kind` that `team_id` owns or that are shared with it."""
    shared = select(Grant.resource_id).where(_grants_to(kind, team_id))
    return or_(owner_column == team_id, id_column.in_(shared))


def only(
    access: Access,
    kind: ResourceKind,
    team_id: str,
    owner_column: InstrumentedAttribute[str],
    id_column: InstrumentedAttribute[str],
) -> ColumnElement[bool]:
    """A WHERE clause: the rows `team_id` reads with exactly this access."""
    if access == Access.own:
        return owner_column == team_id
    grantee = Grant.grantee_team_id == team_id if access == Access.shared else None
    granted = select(Grant.resource_id).where(
        Grant.resource_kind == kind.value,
        grantee if grantee is not None else Grant.grantee_team_id.is_(None),
    )
    not_own = owner_column != team_id
    if access == Access.public:
        # Public and not also shared with the team by name (that one counts as shared).
        named = select(Grant.resource_id).where(
            Grant.resource_kind == kind.value, Grant.grantee_team_id == team_id
        )
        return not_own & id_column.in_(granted) & id_column.not_in(named)
    return not_own & id_column.in_(granted)


def accesses(
    session: Session, kind: ResourceKind, team_id: str, owners: dict[str, str]
) -> dict[str, Access]:
    """How `team_id` reads each resource (id -> owner team id); unreadable ones are left out."""
    out = {i: Access.own for i, owner in owners.items() if owner == team_id}
    others = [i for i in owners if i not in out]
    if not others:
        return out
    rows = session.execute(
        select(Grant.resource_id, Grant.grantee_team_id).where(
            _grants_to(kind, team_id), Grant.resource_id.in_(others)
        )
    ).all()
    for resource_id, grantee in rows:
        if grantee is not None:
            out[resource_id] = Access.shared
        else:
            out.setdefault(resource_id, Access.public)
    return out


def shares_of(session: Session, kind: ResourceKind, resource_id: str) -> Shares:
    rows = session.execute(
        select(Grant.grantee_team_id, Team.name)
        .outerjoin(Team, Team.id == Grant.grantee_team_id)
        .where(Grant.resource_kind == kind.value, Grant.resource_id == resource_id)
    ).all()
    return Shares(
        public=any(grantee is None for grantee, _ in rows),
        teams=sorted(name for grantee, name in rows if grantee is not None),
    )


def set_shares(
    session: Session,
    kind: ResourceKind,
    resource_id: str,
    owner: Team,
    *,
    public: bool,
    teams: Sequence[str],
) -> Shares:
    """Share the owner's resource with exactly these teams (by name), and publicly or not;
    grants not named any more are removed. The caller has checked that `owner` owns it."""
    wanted = sorted(set(teams))
    found = {t.name: t for t in session.scalars(select(Team).where(Team.name.in_(wanted)))}
    errors = []
    for i, name in enumerate(teams):
        if name not in found:
            errors.append({"field": f"teams.{i}", "reason": f"no team named {name!r}"})
        elif name == owner.name:
            errors.append({"field": f"teams.{i}", "reason": "the owning team: it always reads it"})
    if errors:
        raise ValidationFailed.of(errors, "invalid shares")
    grantees: set[str | None] = {found[name].id for name in wanted}
    if public:
        grantees.add(None)
    existing = {
        g.grantee_team_id: g
        for g in session.scalars(
            select(Grant).where(Grant.resource_kind == kind.value, Grant.resource_id == resource_id)
        )
    }
    for grantee, grant in existing.items():
        if grantee not in grantees:
            session.delete(grant)
    for grantee in grantees - set(existing):
        session.add(Grant(resource_kind=kind.value, resource_id=resource_id,
                          owner_team_id=owner.id, grantee_team_id=grantee))  # fmt: skip
    session.flush()
    return shares_of(session, kind, resource_id)
