"""`ccbench db ...`: database maintenance."""

from __future__ import annotations

import typer

from ccbench.settings import get_settings
from cli.render import console

app = typer.Typer(name="db", help="Database maintenance.")


@app.command()
def upgrade() -> None:
    """Apply the migrations (the same ones on PostgreSQL and SQLite)."""
    from sqlalchemy.engine import make_url

    from ccbench.db.migrate import upgrade as to_head

    url = get_settings().effective_database_url
    to_head(url)
    console().print(f"database at head: {make_url(url).render_as_string(hide_password=True)}")
