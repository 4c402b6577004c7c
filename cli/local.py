"""Commands that act on this machine rather than through the API: the embedded stack, the
production processes (API, worker, scheduler), the reaper, the host probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Annotated

import typer

from ccbench.errors import CCBenchError
from ccbench.settings import Settings, get_settings
from cli.client import ClientError, cli_config_path
from cli.render import console

# `cli.stack` is imported by the commands that use it: its imports (the domain's jobs and
# worker registry) take about 0.4 s, which every other command and completion would pay.
PANEL = "This machine"
app = typer.Typer()


def _prepare_embedded(settings: Settings) -> None:
    """Migrate the database and make sure the CLI has a token for the local team."""
    from ccbench import teams
    from ccbench.db.migrate import upgrade
    from ccbench.db.session import session_scope

    settings.state_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.effective_database_url)
    path = cli_config_path(settings)
    if path.exists():
        return
    with session_scope() as session:
        try:
            team = teams.get_team_by_name(session, "local")
        except CCBenchError:  # not found: create it
            team = teams.create_team(session, "local")
        token = teams.create_token(session, team, "embedded-cli")
    path.write_text(
        json.dumps(
            {
                "api_url": f"http://{settings.api_host}:{settings.api_port}",
                "token": token,
            }
        )
    )
    path.chmod(0o600)


@app.command(rich_help_panel=PANEL)
def up(
    detach: Annotated[
        bool, typer.Option("--detach", help="return once ready; stop it with `ccbench down`")
    ] = False,
) -> None:
    """Start the embedded local stack.

    API and worker on 127.0.0.1, SQLite database and broker in the state directory."""
    from cli import stack

    settings = get_settings()
    err = console(stderr=True)
    if settings.database_url or settings.broker_url:
        err.print("note: CCBENCH_DATABASE_URL/CCBENCH_BROKER_URL are set; `up` uses them")
    _prepare_embedded(settings)
    stack.stop(settings)  # a stale detached stack from an earlier `up`
    processes = stack.start(settings)
    try:
        stack.wait_ready(settings, processes)
    except (RuntimeError, TimeoutError) as exc:
        stack.stop(settings)
        raise ClientError(str(exc)) from exc
    console().print(
        f"ccbench embedded stack ready: API http://{settings.api_host}:{settings.api_port} "
        f"(docs at /docs), worker running; state in {settings.state_dir}\n"
        f"result pages: http://{settings.api_host}:{settings.api_port}/ui/ "
        f"(log in with the token in {cli_config_path(settings)})"
    )
    if detach:
        return
    console().print("Ctrl-C stops it.")
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop(settings)


@app.command(rich_help_panel=PANEL)
def down() -> None:
    """Stop a detached embedded stack."""
    from cli import stack

    stopped = stack.stop(get_settings())
    console().print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


@app.command("api", rich_help_panel=PANEL)
def run_api(
    host: Annotated[
        str | None, typer.Option(help="address to listen on (default: CCBENCH_API_HOST)")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=1, max=65535, help="port to listen on (default: CCBENCH_API_PORT)"),
    ] = None,
) -> None:
    """Run the API server (the production shape)."""
    from cli import stack

    settings = get_settings()
    if host:
        settings.api_host = host
    if port:
        settings.api_port = port
    os.execv(sys.executable, stack.api_command(settings))


@app.command(rich_help_panel=PANEL)
def worker() -> None:
    """Run a worker (as root).

    CCBENCH_WORKER_POOL names its pool, CCBENCH_WORKER_ID its id (default: the host name and a
    random part kept in the state directory)."""
    from ccbench.workerpool import worker_id
    from cli import stack

    if os.geteuid() != 0:
        console(stderr=True).print("warning: workers build network namespaces and need root")
    worker = worker_id(get_settings())
    os.execve(
        sys.executable, stack.worker_command(worker), dict(os.environ, CCBENCH_WORKER_ID=worker)
    )


@app.command(rich_help_panel=PANEL)
def scheduler() -> None:
    """Run the scheduler: fire due campaign occurrences, dispatch queued runs, reap dead
    workers' runs (any number of schedulers may run; each occurrence fires once)."""
    from cli import stack

    os.execv(sys.executable, stack.scheduler_command())


@app.command(rich_help_panel=PANEL)
def reap() -> None:
    """Fail or requeue the runs whose worker died."""
    from ccbench.reaper import reap_stale_runs

    reaped = reap_stale_runs()
    out = console()
    for r in reaped:
        out.print(f"{r.run_id}: {r.action} ({r.detail})")
    out.print(f"{len(reaped)} run(s) reaped")


@app.command(rich_help_panel=PANEL)
def probe(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """What this host can run: congestion controls, netem, NFQUEUE, BPF struct_ops."""
    from cli import stack

    # The worker's own probe (`python -m workers.probe`), run as a program: the CLI starts the
    # worker app's entry points, it does not import them.
    done = subprocess.run(
        stack.probe_command(json_output=as_json), capture_output=True, text=True, check=False
    )
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode:
        raise typer.Exit(done.returncode)
