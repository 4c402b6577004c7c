"""`ccbench`: run the stack, manage teams and tokens, submit experiments, read reports.

The command is a Typer app made of one module per concern: the modules of COMMANDS add
commands at the top level, those of GROUPS one group each (`ccbench NAME ...`, the module's
`app` carries the name). A new group is a module with its `app` and one line in GROUPS."""

from __future__ import annotations

from typing import Annotated

import typer

from ccbench.settings import private_files
from ccbench.version import CCBENCH_VERSION
from cli import admin, browse, campaigns, db, experiments, hosts, local, reproduce, tokens
from cli.client import ClientError
from cli.render import console
from schemas.matrix import reason_of

COMMANDS = (experiments.app, browse.app, reproduce.app, local.app)
GROUPS = (hosts.app, campaigns.app, tokens.app, admin.app, db.app)

app = typer.Typer(
    name="ccbench",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
for commands in COMMANDS:
    app.add_typer(commands)
for group in GROUPS:
    app.add_typer(group, no_args_is_help=True)


def _version(shown: bool) -> None:
    if shown:
        console().print(f"ccbench {CCBENCH_VERSION}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="print ccbench's version and exit"
        ),
    ] = False,
) -> None:
    """Congestion-control experiments: submit matrices, follow their runs, read reports.

    Clients talk to the API at CCBENCH_API_URL with the token CCBENCH_TOKEN, or to the
    embedded stack that `ccbench up` started. Any unique prefix of an id will do."""


def main(argv: list[str] | None = None) -> int:
    """Run `ccbench ARGV` (default: the process's arguments); the exit code. A user's error is
    printed once, as `error: ...`, without a traceback."""
    private_files()
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="ccbench", standalone_mode=False)
    except ClientError as exc:
        console(stderr=True).print(f"error: {exc}")
        return 1
    except typer.TyperException as exc:  # bad usage: the usage, where to get help, what is wrong
        if isinstance(exc, typer.BadParameter):
            exc.message = reason_of(exc.message)  # Typer checks values with pydantic
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            console(stderr=True).print(f"error: {exc.format_message()}")
        return exc.exit_code
    except typer.Abort:
        return 130
    return result if isinstance(result, int) else 0
