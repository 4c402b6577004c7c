"""Commands that act on this machine rather than through the API: the embedded stack, the
production processes, database migrations, teams and tokens, the reaper, the host probe."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from ccbench.errors import CCBenchError
from ccbench.settings import Settings, get_settings
from cli import stack
from cli.client import ClientError, cli_config_path
from cli.tokens import expiry


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


def cmd_up(args: argparse.Namespace) -> int:
    settings = get_settings()
    if settings.database_url or settings.broker_url:
        print(
            "note: CCBENCH_DATABASE_URL/CCBENCH_BROKER_URL are set; `up` uses them", file=sys.stderr
        )
    _prepare_embedded(settings)
    stack.stop(settings)  # a stale detached stack from an earlier `up`
    processes = stack.start(settings)
    try:
        stack.wait_ready(settings, processes)
    except (RuntimeError, TimeoutError) as exc:
        stack.stop(settings)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"ccbench embedded stack ready: API http://{settings.api_host}:{settings.api_port} "
        f"(docs at /docs), worker running; state in {settings.state_dir}\n"
        f"result pages: http://{settings.api_host}:{settings.api_port}/ui/ "
        f"(log in with the token in {cli_config_path(settings)})"
    )
    if args.detach:
        return 0
    print("Ctrl-C stops it.")
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop(settings)
    return 0


def cmd_down(_args: argparse.Namespace) -> int:
    stopped = stack.stop(get_settings())
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def cmd_api(args: argparse.Namespace) -> int:
    settings = get_settings()
    if args.host:
        settings.api_host = args.host
    if args.port:
        settings.api_port = args.port
    os.execv(sys.executable, stack.api_command(settings))


def cmd_worker(_args: argparse.Namespace) -> int:
    from ccbench.workerpool import worker_id

    if os.geteuid() != 0:
        print("warning: workers build network namespaces and need root", file=sys.stderr)
    worker = worker_id(get_settings())
    os.execve(sys.executable, stack.worker_command(worker),
              dict(os.environ, CCBENCH_WORKER_ID=worker))  # fmt: skip


def cmd_scheduler(_args: argparse.Namespace) -> int:
    os.execv(sys.executable, stack.scheduler_command())


def cmd_db_upgrade(_args: argparse.Namespace) -> int:
    from ccbench.db.migrate import upgrade

    settings = get_settings()
    upgrade(settings.effective_database_url)
    print(f"database at head: {_redact(settings.effective_database_url)}")
    return 0


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def cmd_create_team(args: argparse.Namespace) -> int:
    from ccbench import teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            team = teams.create_team(session, args.name)
            print(f"team {team.name} created (id {team.id})")
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    return 0


def cmd_create_token(args: argparse.Namespace) -> int:
    from ccbench import teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            team = teams.get_team_by_name(session, args.team)
            token = teams.create_token(session, team, args.name, expiry(args.expires_in_days),
                                       teams.Scope(args.scope))  # fmt: skip
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    print(token)
    print(f"({args.scope} token for team {args.team}; it is shown only once)", file=sys.stderr)
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    """Migrate, then make sure the bootstrap team and token exist (deployments' first start)."""
    from ccbench import teams
    from ccbench.db.migrate import upgrade
    from ccbench.db.session import session_scope

    secret = os.environ.get("CCBENCH_BOOTSTRAP_TOKEN", "")
    if not secret:
        raise ClientError("set CCBENCH_BOOTSTRAP_TOKEN to the admin token to create")
    settings = get_settings()
    upgrade(settings.effective_database_url)
    try:
        with session_scope() as session:
            team = teams.ensure_bootstrap(session, args.team, secret)
            print(f"database at head; team {team.name} has the bootstrap token")
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    return 0


def cmd_secret_key(_args: argparse.Namespace) -> int:
    from ccbench.secrets import new_key

    print(new_key())
    return 0


def cmd_reap(_args: argparse.Namespace) -> int:
    from ccbench.reaper import reap_stale_runs

    reaped = reap_stale_runs()
    for r in reaped:
        print(f"{r.run_id}: {r.action} ({r.detail})")
    print(f"{len(reaped)} run(s) reaped")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """The worker's own probe (`python -m workers.probe`), run as a program: the CLI starts the
    worker app's entry points, it does not import them."""
    done = subprocess.run(
        stack.probe_command(json_output=args.json), capture_output=True, text=True, check=False
    )
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode
