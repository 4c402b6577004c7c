"""REST endpoints of the host inventory (the `hosts` testbed): hosts and host groups, by name,
scoped to the caller's team. No endpoint returns a secret."""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from api.auth import CurrentTeam, WritingTeam
from api.deps import DbSession
from api.errors import AUTHENTICATED, CONFLICT, FORBIDDEN, NOT_FOUND
from api.hosts import service
from api.hosts.schemas import GroupCreate, GroupOut, GroupUpdate, HostCreate, HostOut, HostUpdate
from ccbench.errors import ValidationFailed

router = APIRouter(prefix="/v1", tags=["hosts"], responses=AUTHENTICATED)


def _label_filters(label: list[str]) -> dict[str, str]:
    filters = {}
    for item in label:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValidationFailed.field("label", f"{item!r} is not key=value")
        filters[key] = value
    return filters


@router.post(
    "/hosts",
    status_code=status.HTTP_201_CREATED,
    response_model=HostOut,
    responses={**CONFLICT, **FORBIDDEN},
)
def create_host(body: HostCreate, session: DbSession, team: WritingTeam) -> HostOut:
    host = service.create_host(session, team, body)
    session.commit()
    return host


@router.get("/hosts", response_model=list[HostOut], responses=NOT_FOUND)
def list_hosts(
    session: DbSession,
    team: CurrentTeam,
    label: Annotated[list[str], Query(description="key=value; repeat to require several")] = [],  # noqa: B006
    group: Annotated[str | None, Query(description="only members of this group")] = None,
) -> list[HostOut]:
    return service.list_hosts(session, team, labels=_label_filters(label), group=group)


@router.get("/hosts/{name}", response_model=HostOut, responses=NOT_FOUND)
def get_host(name: str, session: DbSession, team: CurrentTeam) -> HostOut:
    host = service.get_host(session, team, name)
    return service.to_out(host, service.group_names_of(session, [host.id])[host.id])


@router.patch("/hosts/{name}", response_model=HostOut, responses={**NOT_FOUND, **FORBIDDEN})
def update_host(name: str, body: HostUpdate, session: DbSession, team: WritingTeam) -> HostOut:
    host = service.update_host(session, team, name, body)
    session.commit()
    return host


@router.delete(
    "/hosts/{name}", status_code=status.HTTP_204_NO_CONTENT, responses={**NOT_FOUND, **FORBIDDEN}
)
def delete_host(name: str, session: DbSession, team: WritingTeam) -> Response:
    service.delete_host(session, team, name)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/host-groups",
    status_code=status.HTTP_201_CREATED,
    response_model=GroupOut,
    responses={**CONFLICT, **FORBIDDEN},
)
def create_group(body: GroupCreate, session: DbSession, team: WritingTeam) -> GroupOut:
    group = service.create_group(session, team, body)
    session.commit()
    return group


@router.get("/host-groups", response_model=list[GroupOut])
def list_groups(session: DbSession, team: CurrentTeam) -> list[GroupOut]:
    return service.list_groups(session, team)


@router.get("/host-groups/{name}", response_model=GroupOut, responses=NOT_FOUND)
def get_group(name: str, session: DbSession, team: CurrentTeam) -> GroupOut:
    return service.group_out(service.get_group(session, team, name))


@router.patch("/host-groups/{name}", response_model=GroupOut, responses={**NOT_FOUND, **FORBIDDEN})
def update_group(name: str, body: GroupUpdate, session: DbSession, team: WritingTeam) -> GroupOut:
    group = service.update_group(session, team, name, body)
    session.commit()
    return group


@router.delete(
    "/host-groups/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**NOT_FOUND, **FORBIDDEN},
)
def delete_group(name: str, session: DbSession, team: WritingTeam) -> Response:
    service.delete_group(session, team, name)
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
