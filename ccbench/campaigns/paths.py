"""The paths a campaign occurrence measures (sender -> receiver hosts of the team's inventory),
and the submission that measures one path: the campaign's experiment with the path's hosts in
every flow that leaves them out."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from ccbench.db.models import Host, HostGroup, HostGroupMember
from ccbench.errors import ValidationFailed
from schemas import Submission, errors_of
from schemas.campaign import CampaignSpec, HostSelection

Path = tuple[str, str]
SUBMISSION: TypeAdapter[Any] = TypeAdapter(Submission)


def label(path: Path) -> str:
    return f"{path[0]}->{path[1]}"


def resolve(session: Session, team_id: str, hosts: HostSelection) -> list[Path]:
    """The selection's paths, now (a group or labels are read at each occurrence); a host
    that is not in the inventory is refused naming the field."""
    if hosts.pairs is not None:
        names = {n for pair in hosts.pairs for n in pair}
        known = set(session.scalars(select(Host.name).where(Host.team_id == team_id,
                                                             Host.name.in_(names))))  # fmt: skip
        unknown = sorted(names - known)
        if unknown:
            raise ValidationFailed.field(
                "hosts.pairs", f"not in the team's inventory: {', '.join(unknown)}"
            )
        return [(src, dst) for src, dst in hosts.pairs]
    query = select(Host).where(Host.team_id == team_id).order_by(Host.name)
    if hosts.group is not None:
        group = session.scalar(
            select(HostGroup).where(HostGroup.team_id == team_id, HostGroup.name == hosts.group)
        )
        if group is None:
            raise ValidationFailed.field("hosts.group", f"no such host group: {hosts.group}")
        members = select(HostGroupMember.host_id).where(HostGroupMember.group_id == group.id)
        query = query.where(Host.id.in_(members))
    selected = [
        h.name
        for h in session.scalars(query)
        if all(h.labels.get(k) == v for k, v in (hosts.labels or {}).items())
    ]
    paths = [(src, dst) for src in selected for dst in selected if src != dst]
    if not paths:
        where = "hosts.group" if hosts.group is not None else "hosts.labels"
        raise ValidationFailed.field(where, f"selects {len(selected)} host(s): no path")
    return paths


def submission_for(spec: CampaignSpec, path: Path) -> Any:
    """The campaign's experiment measuring one path, validated (a Submission)."""
    document = copy.deepcopy(spec.experiment)
    base = document["base"] if document.get("kind") == "matrix" else document
    for flow in base.get("flows") or []:
        if isinstance(flow, dict):
            flow.setdefault("src", path[0])
            flow.setdefault("dst", path[1])
    document["name"] = f"{spec.name} {label(path)}"[:100]
    document["tags"] = sorted({*document.get("tags", []), *spec.tags})
    try:
        return SUBMISSION.validate_python(document)
    except ValidationError as exc:
        errors = [{"field": f"experiment.{e['loc']}".rstrip("."), "reason": e["msg"]}
                  for e in errors_of(exc)]  # fmt: skip
        raise ValidationFailed.of(errors, "invalid campaign experiment") from exc
