"""`ccbench admin ...`: teams and tokens straight in the database (CCBENCH_DATABASE_URL), for
whoever runs the deployment; the team's own tokens go through the API (`ccbench tokens`)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ccbench.access import Scope
from ccbench.errors import CCBenchError
from ccbench.settings import get_settings
from cli.client import ClientError
from cli.render import console
from cli.tokens import SCOPE_HELP, ExpiresInDays, expiry

app = typer.Typer(name="admin", help="Teams and API tokens, in the database directly.")


@app.command("create-team")
def create_team(name: Annotated[str, typer.Argument(help="the team's name")]) -> None:
    """Create a team."""
    from ccbench import teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            team = teams.create_team(session, name)
            console().print(f"team {team.name} created (id {team.id})")
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc


@app.command("create-token")
def create_token(
    team: Annotated[str, typer.Option(help="the team's name")],
    name: Annotated[str, typer.Option(help="what the token is for")] = "cli",
    expires_in_days: ExpiresInDays = None,
    scope: Annotated[Scope, typer.Option(help=SCOPE_HELP)] = Scope.admin,
) -> None:
    """Create an API token for a team; its secret is printed once."""
    from ccbench import teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            found = teams.get_team_by_name(session, team)
            token = teams.create_token(session, found, name, expiry(expires_in_days), scope)
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    console().print(token)
    console(stderr=True).print(f"({scope.value} token for team {team}; it is shown only once)")


@app.command()
def bootstrap(
    team: Annotated[
        str,
        typer.Option(envvar="CCBENCH_BOOTSTRAP_TEAM", help="the team's name"),
    ] = "admin",
) -> None:
    """Migrate, then create the team and its token CCBENCH_BOOTSTRAP_TOKEN if missing.

    A deployment's one-shot job; idempotent."""
    from ccbench import teams
    from ccbench.db.migrate import upgrade
    from ccbench.db.session import session_scope

    secret = os.environ.get("CCBENCH_BOOTSTRAP_TOKEN", "")
    if not secret:
        raise ClientError("set CCBENCH_BOOTSTRAP_TOKEN to the admin token to create")
    upgrade(get_settings().effective_database_url)
    try:
        with session_scope() as session:
            made = teams.ensure_bootstrap(session, team, secret)
            console().print(f"database at head; team {made.name} has the bootstrap token")
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc


@app.command("secret-key")
def secret_key() -> None:
    """Print a new key for CCBENCH_SECRET_KEY (encrypts the hosts' SSH keys)."""
    from ccbench.secrets import new_key

    console().print(new_key())
