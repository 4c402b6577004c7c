"""`ccbench tokens ...`: the team's API tokens, over the REST API."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from cli.client import client


def expiry(days: float | None) -> datetime | None:
    """The time `days` from now, or None for a token that does not expire."""
    return None if days is None else datetime.now(UTC) + timedelta(days=days)


def _rfc3339(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def cmd_tokens_list(_args: argparse.Namespace) -> int:
    for token in client().get("/v1/tokens"):
        state = "revoked" if token["revoked_at"] else "active"
        expires = token["expires_at"] or "never"
        print(f"{token['id']}  {token['name']:<24} {token['scope']:<5} {state:<8} created "
              f"{token['created_at']}  expires {expires}")  # fmt: skip
    return 0


def cmd_tokens_create(args: argparse.Namespace) -> int:
    created = client().post(
        "/v1/tokens",
        json={"name": args.name, "scope": args.scope,
              "expires_at": _rfc3339(expiry(args.expires_in_days))},
    )  # fmt: skip
    print(created["token"])
    print(f"({created['scope']} token {created['id']}, expires "
          f"{created['expires_at'] or 'never'}; it is shown "
          "only once)", file=sys.stderr)  # fmt: skip
    return 0


def cmd_tokens_revoke(args: argparse.Namespace) -> int:
    client().request("DELETE", f"/v1/tokens/{args.id}")
    print(f"token {args.id} revoked")
    return 0
