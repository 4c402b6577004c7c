"""Ids as people type them: any unique prefix of an experiment's, a run's, a campaign's or a
token's id, resolved through the API (`?id_prefix=` of the listings: the team's own and what
other teams shared with it); an ambiguous prefix is refused naming the candidates. Also the
shell completion of ids."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from cli.client import ClientError, client
from cli.render import short, when
from schemas.limits import ID_LENGTH

Kind = Literal["experiment", "run", "token", "campaign"]
# Candidates an ambiguous prefix names (the total is given too).
CANDIDATES_SHOWN = 10
_HEX = re.compile(r"[0-9a-f]+")
_LISTING = {"experiment": "/v1/experiments", "run": "/v1/runs", "campaign": "/v1/campaigns"}


def _describe(kind: Kind, item: dict[str, Any]) -> str:
    if kind == "experiment":
        return f"{item['id']}  {item['name']}  {item['status']}  created {when(item['created_at'])}"
    if kind == "run":
        return (
            f"{item['id']}  run {item['order_index'] + 1} of experiment "
            f"{short(item['experiment_id'])}  {item['status']}"
        )
    if kind == "campaign":
        return (
            f"{item['id']}  {item['name']}  {item['state']}  team {item['team']}  "
            f"created {when(item['created_at'])}"
        )
    return f"{item['id']}  {item['name']}  created {when(item['created_at'])}"


def _checked(kind: Kind, given: str) -> str:
    text = given.strip().lower()
    if not text or len(text) > ID_LENGTH or not _HEX.fullmatch(text):
        raise ClientError(
            f"{given!r} is not {'an' if kind == 'experiment' else 'a'} {kind} id: ids are "
            f"{ID_LENGTH} hex digits, of which any unique prefix will do"
        )
    return text


def _unique(kind: Kind, prefix: str, matches: list[dict[str, Any]], total: int) -> str:
    if total == 1:
        return str(matches[0]["id"])
    if total == 0:
        whose = "of your team" if kind == "token" else "of your team or shared with it"
        raise ClientError(f"no {kind} {whose} has an id starting with {prefix}")
    lines = "".join(f"\n  {_describe(kind, item)}" for item in matches[:CANDIDATES_SHOWN])
    more = f"\n  ... and {total - CANDIDATES_SHOWN} more" if total > CANDIDATES_SHOWN else ""
    raise ClientError(
        f"{prefix} is ambiguous: the ids of {total} {kind}s start with it:{lines}{more}\n"
        "give more of the id"
    )


def resolve(kind: Kind, given: str) -> str:
    """The full id of the one experiment, run or campaign the team may read, or of its one
    token, whose id starts with `given`."""
    prefix = _checked(kind, given)
    api = client()
    if kind == "token":  # the team's tokens are few: the API lists them all
        tokens = [t for t in api.get("/v1/tokens") if str(t["id"]).startswith(prefix)]
        return _unique(kind, prefix, tokens, len(tokens))
    page = api.get(_LISTING[kind], params={"id_prefix": prefix, "page_size": CANDIDATES_SHOWN})
    return _unique(kind, prefix, page["items"], page["total"])


def completion(
    kind: Literal["experiment", "run", "campaign"],
) -> Callable[[str], list[tuple[str, str]]]:
    """Shell completion of the ids of `kind` that start with what is typed, each with what it
    is; nothing when the API cannot be asked (completion must never fail loudly)."""

    def complete(incomplete: str) -> list[tuple[str, str]]:
        try:
            page = client().get(
                _LISTING[kind], params={"id_prefix": incomplete.lower(), "page_size": 50}
            )
        except ClientError:
            return []
        return [(item["id"], _describe(kind, item).split("  ", 1)[1]) for item in page["items"]]

    return complete
