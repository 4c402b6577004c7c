"""`ccbench tokens ...`: the team's API tokens, over the REST API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from ccbench.access import Scope
from cli.client import client
from cli.ids import resolve
from cli.render import console, short, status_text, table, when

app = typer.Typer(name="tokens", help="The team's API tokens.")

ExpiresInDays = Annotated[
    float | None,
    typer.Option(metavar="DAYS", min=0, help="the token stops working then (default: never)"),
]
SCOPE_HELP = (
    "read: reads; write: also submits and changes the team's experiments and hosts; admin: "
    "also manages tokens and shares"
)


def expiry(days: float | None) -> datetime | None:
    """The time `days` from now, or None for a token that does not expire."""
    return None if days is None else datetime.now(UTC) + timedelta(days=days)


@app.command("list")
def list_tokens() -> None:
    """The team's tokens (never their secrets)."""
    grid = table("id", "name", "scope", "state", "created", "expires")
    for token in client().get("/v1/tokens"):
        state = "revoked" if token["revoked_at"] else "active"
        grid.add_row(
            short(token["id"]),
            token["name"],
            token["scope"],
            status_text(state),
            when(token["created_at"]),
            when(token["expires_at"]) if token["expires_at"] else "never",
        )
    console().print(grid)


@app.command()
def create(
    name: Annotated[str, typer.Argument(help="what the token is for")],
    expires_in_days: ExpiresInDays = None,
    scope: Annotated[Scope, typer.Option(help=SCOPE_HELP)] = Scope.read,
) -> None:
    """A new token; its secret is printed once."""
    expires = expiry(expires_in_days)
    created = client().post(
        "/v1/tokens",
        json={
            "name": name,
            "scope": scope.value,
            "expires_at": expires.isoformat() if expires else None,
        },
    )
    console().print(created["token"])
    console(stderr=True).print(
        f"({created['scope']} token {created['id']}, expires "
        f"{when(created['expires_at']) if created['expires_at'] else 'never'}"
        "; it is shown only once)"
    )


@app.command()
def revoke(
    token: Annotated[
        str, typer.Argument(help="the token's id, or a unique prefix of it (`tokens list`)")
    ],
) -> None:
    """Revoke a token: refused from now on."""
    token_id = resolve("token", token)
    client().request("DELETE", f"/v1/tokens/{token_id}")
    console().print(f"token {token_id} revoked")
