"""`ccbench`: run the stack, manage teams and tokens, submit experiments, read reports."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ccbench.settings import private_files
from cli import experiments, hosts, local, tokens
from cli.client import ClientError
from schemas.metrics import metrics_of


def main(argv: list[str] | None = None) -> int:
    private_files()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ccbench", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="start the embedded local stack (API + worker, SQLite)")
    up.add_argument("--detach", action="store_true", help="return once ready; stop with `down`")
    up.set_defaults(func=local.cmd_up)
    sub.add_parser("down", help="stop a detached embedded stack").set_defaults(func=local.cmd_down)

    api = sub.add_parser("api", help="run the API server (production shape)")
    api.add_argument("--host")
    api.add_argument("--port", type=int)
    api.set_defaults(func=local.cmd_api)
    sub.add_parser(
        "worker",
        help="run a worker (as root): CCBENCH_WORKER_POOL names its pool, CCBENCH_WORKER_ID its "
        "id (default: the host name and a random part kept in the state directory)",
    ).set_defaults(func=local.cmd_worker)
    sub.add_parser(
        "scheduler", help="run the scheduler: dispatch queued runs, reap dead workers' runs"
    ).set_defaults(func=local.cmd_scheduler)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(required=True, metavar="ACTION")
    db_sub.add_parser("upgrade", help="apply migrations").set_defaults(func=local.cmd_db_upgrade)

    admin = sub.add_parser("admin", help="teams and API tokens")
    admin_sub = admin.add_subparsers(required=True, metavar="ACTION")
    team = admin_sub.add_parser("create-team", help="create a team")
    team.add_argument("name")
    team.set_defaults(func=local.cmd_create_team)
    token = admin_sub.add_parser("create-token", help="create an API token for a team")
    token.add_argument("--team", required=True)
    token.add_argument("--name", default="cli")
    token.add_argument(
        "--expires-in-days", type=float, metavar="DAYS", help="the token stops working then"
    )
    token.set_defaults(func=local.cmd_create_token)
    bootstrap = admin_sub.add_parser(
        "bootstrap",
        help="migrate, then create the team and the token CCBENCH_BOOTSTRAP_TOKEN if missing "
        "(a deployment's one-shot job; idempotent)",
    )
    bootstrap.add_argument(
        "--team", default=os.environ.get("CCBENCH_BOOTSTRAP_TEAM", "admin"),
        help="the team's name (default: CCBENCH_BOOTSTRAP_TEAM or admin)",
    )  # fmt: skip
    bootstrap.set_defaults(func=local.cmd_bootstrap)
    admin_sub.add_parser(
        "secret-key", help="print a new key for CCBENCH_SECRET_KEY (encrypts hosts' SSH keys)"
    ).set_defaults(func=local.cmd_secret_key)

    hosts_parser = sub.add_parser("hosts", help="the team's host inventory (the `hosts` testbed)")
    hosts_sub = hosts_parser.add_subparsers(required=True, metavar="ACTION")
    add = hosts_sub.add_parser("add", help="register a host reached over SSH")
    add.add_argument("name")
    add.add_argument("--address", required=True, help="host name or IP")
    add.add_argument("--port", type=int, default=22)
    add.add_argument("--user", default="root")
    credential = add.add_mutually_exclusive_group()
    credential.add_argument(
        "--key-file", type=Path, help="SSH private key (sent once, stored encrypted)"
    )
    credential.add_argument("--credential-ref", help="'file:/path' or 'env:NAME' on the workers")
    add.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    add.add_argument("--group", action="append", default=[], help="existing group to join")
    add.add_argument(
        "--data-address", help="address on the experiment network (default: --address)"
    )
    add.add_argument(
        "--host-key-file",
        type=Path,
        help="the host's SSH public key file, pinned (e.g. from ssh-keyscan)",
    )
    add.add_argument(
        "--install-prefix", help="agents' install directory on the host (default /opt/ccbench)"
    )
    add.set_defaults(func=hosts.cmd_hosts_add)
    listing = hosts_sub.add_parser("list", help="list hosts")
    listing.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    listing.add_argument("--group")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=hosts.cmd_hosts_list)
    remove = hosts_sub.add_parser("remove", help="remove a host")
    remove.add_argument("name")
    remove.set_defaults(func=hosts.cmd_hosts_remove)
    group = hosts_sub.add_parser("group", help="create or replace a group of hosts")
    group.add_argument("name")
    group.add_argument("members", nargs="*", help="host names")
    group.set_defaults(func=hosts.cmd_hosts_group)

    tokens_parser = sub.add_parser("tokens", help="the team's API tokens")
    tokens_sub = tokens_parser.add_subparsers(required=True, metavar="ACTION")
    tokens_sub.add_parser("list", help="list the team's tokens (never their secrets)").set_defaults(
        func=tokens.cmd_tokens_list
    )
    create = tokens_sub.add_parser("create", help="a new token; its secret is printed once")
    create.add_argument("name")
    create.add_argument(
        "--expires-in-days", type=float, metavar="DAYS", help="the token stops working then"
    )
    create.set_defaults(func=tokens.cmd_tokens_create)
    revoke = tokens_sub.add_parser("revoke", help="revoke a token: refused from now on")
    revoke.add_argument("id", help="the token's id (from `tokens list`)")
    revoke.set_defaults(func=tokens.cmd_tokens_revoke)

    submit = sub.add_parser("submit", help="submit an experiment or matrix (YAML or JSON file)")
    submit.add_argument("file", type=Path)
    submit.add_argument(
        "--wait", action="store_true", help="follow progress, then print the report"
    )
    submit.set_defaults(func=experiments.cmd_submit)
    status = sub.add_parser("status", help="an experiment's status and its runs")
    status.add_argument("id")
    status.set_defaults(func=experiments.cmd_status)
    report = sub.add_parser("report", help="an experiment's report")
    report.add_argument("id")
    report.add_argument("--json", action="store_true", help="print the report JSON")
    report.add_argument(
        "--plot", type=Path, metavar="DIR", help="also write figures (PNG, SVG, PDF) into DIR"
    )
    report.set_defaults(func=experiments.cmd_report)
    compare = sub.add_parser(
        "compare", help="one aggregate metric against a matrix axis, a series per value of another"
    )
    compare.add_argument("id")
    compare.add_argument(
        "--metric",
        required=True,
        help="one of: " + ", ".join(m.name for m in metrics_of("aggregate")),
    )
    compare.add_argument("--x", required=True, help="axis path, e.g. topology.bottleneck.buffer")
    compare.add_argument("--by", help="axis path, e.g. 'flows[*].algorithm'")
    compare.add_argument("--json", action="store_true")
    compare.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="also draw it: FILE.png, .svg or .pdf, or all three without a suffix",
    )
    compare.set_defaults(func=experiments.cmd_compare)
    export = sub.add_parser(
        "export", help="an experiment's runs, flows or time series as CSV or Parquet"
    )
    export.add_argument("id")
    export.add_argument("--table", choices=["runs", "flows", "series"], default="runs")
    export.add_argument("--format", choices=["csv", "parquet"], default="csv")
    export.add_argument("--output", "-o", type=Path, help="file to write (default: stdout, CSV)")
    export.set_defaults(func=experiments.cmd_export)
    cancel = sub.add_parser("cancel", help="cancel an experiment")
    cancel.add_argument("id")
    cancel.set_defaults(func=experiments.cmd_cancel)
    sub.add_parser("reap", help="fail or requeue runs whose worker died").set_defaults(
        func=local.cmd_reap
    )
    probe = sub.add_parser(
        "probe", help="what this host can run: controllers, netem, NFQUEUE, BPF struct_ops"
    )
    probe.add_argument("--json", action="store_true", help="print JSON")
    probe.set_defaults(func=local.cmd_probe)
    return parser


if __name__ == "__main__":
    sys.exit(main())
