"""`ccbench`: run the stack, manage teams and tokens, submit experiments, read reports."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ccbench.client import Client, ClientError, cli_config_path, load_config
from ccbench.settings import Settings, get_settings

FINAL_EXPERIMENT = {"done", "failed", "cancelled"}


def main(argv: list[str] | None = None) -> int:
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
    up.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop a detached embedded stack").set_defaults(func=cmd_down)

    api = sub.add_parser("api", help="run the API server (production shape)")
    api.add_argument("--host")
    api.add_argument("--port", type=int)
    api.set_defaults(func=cmd_api)
    worker = sub.add_parser("worker", help="run a Celery worker (production shape, as root)")
    worker.add_argument("--hostname", default="ccbench@%h")
    worker.set_defaults(func=cmd_worker)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(required=True, metavar="ACTION")
    db_sub.add_parser("upgrade", help="apply migrations").set_defaults(func=cmd_db_upgrade)

    admin = sub.add_parser("admin", help="teams and API tokens")
    admin_sub = admin.add_subparsers(required=True, metavar="ACTION")
    team = admin_sub.add_parser("create-team", help="create a team")
    team.add_argument("name")
    team.set_defaults(func=cmd_create_team)
    token = admin_sub.add_parser("create-token", help="create an API token for a team")
    token.add_argument("--team", required=True)
    token.add_argument("--name", default="cli")
    token.set_defaults(func=cmd_create_token)
    admin_sub.add_parser(
        "secret-key", help="print a new key for CCBENCH_SECRET_KEY (encrypts hosts' SSH keys)"
    ).set_defaults(func=cmd_secret_key)

    hosts = sub.add_parser("hosts", help="the team's host inventory (the `hosts` testbed)")
    hosts_sub = hosts.add_subparsers(required=True, metavar="ACTION")
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
    add.set_defaults(func=cmd_hosts_add)
    listing = hosts_sub.add_parser("list", help="list hosts")
    listing.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    listing.add_argument("--group")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_hosts_list)
    remove = hosts_sub.add_parser("remove", help="remove a host")
    remove.add_argument("name")
    remove.set_defaults(func=cmd_hosts_remove)
    group = hosts_sub.add_parser("group", help="create or replace a group of hosts")
    group.add_argument("name")
    group.add_argument("members", nargs="*", help="host names")
    group.set_defaults(func=cmd_hosts_group)

    submit = sub.add_parser("submit", help="submit an experiment or matrix (YAML or JSON file)")
    submit.add_argument("file", type=Path)
    submit.add_argument(
        "--wait", action="store_true", help="follow progress, then print the report"
    )
    submit.set_defaults(func=cmd_submit)
    status = sub.add_parser("status", help="an experiment's status and its runs")
    status.add_argument("id")
    status.set_defaults(func=cmd_status)
    report = sub.add_parser("report", help="an experiment's report")
    report.add_argument("id")
    report.add_argument("--json", action="store_true", help="print the report JSON")
    report.add_argument(
        "--plot", type=Path, metavar="DIR", help="also write figures (PNG) into DIR"
    )
    report.set_defaults(func=cmd_report)
    compare = sub.add_parser(
        "compare", help="one aggregate metric against a matrix axis, a series per value of another"
    )
    compare.add_argument("id")
    compare.add_argument("--metric", required=True, help="e.g. utilization, jain_index, power")
    compare.add_argument("--x", required=True, help="axis path, e.g. topology.bottleneck.buffer")
    compare.add_argument("--by", help="axis path, e.g. 'flows[*].algorithm'")
    compare.add_argument("--json", action="store_true")
    compare.add_argument("--plot", type=Path, metavar="FILE", help="also draw it (PNG, SVG, PDF)")
    compare.set_defaults(func=cmd_compare)
    export = sub.add_parser(
        "export", help="an experiment's runs, flows or time series as CSV or Parquet"
    )
    export.add_argument("id")
    export.add_argument("--table", choices=["runs", "flows", "series"], default="runs")
    export.add_argument("--format", choices=["csv", "parquet"], default="csv")
    export.add_argument("--output", "-o", type=Path, help="file to write (default: stdout, CSV)")
    export.set_defaults(func=cmd_export)
    cancel = sub.add_parser("cancel", help="cancel an experiment")
    cancel.add_argument("id")
    cancel.set_defaults(func=cmd_cancel)
    sub.add_parser("reap", help="fail or requeue runs whose worker died").set_defaults(
        func=cmd_reap
    )
    probe = sub.add_parser(
        "probe", help="what this host can run: controllers, netem, NFQUEUE, BPF struct_ops"
    )
    probe.add_argument("--json", action="store_true", help="print JSON")
    probe.set_defaults(func=cmd_probe)
    return parser


# --- stack -----------------------------------------------------------------------------------


def _prepare_embedded(settings: Settings) -> None:
    """Migrate the database and make sure the CLI has a token for the local team."""
    from api.teams import service as teams
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
        except Exception:  # noqa: BLE001 - not found: create it
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
    from ccbench import stack

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
    from ccbench import stack

    stopped = stack.stop(get_settings())
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def cmd_api(args: argparse.Namespace) -> int:
    from ccbench import stack

    settings = get_settings()
    if args.host:
        settings.api_host = args.host
    if args.port:
        settings.api_port = args.port
    os.execv(sys.executable, stack.api_command(settings))


def cmd_worker(args: argparse.Namespace) -> int:
    from ccbench import stack

    if os.geteuid() != 0:
        print("warning: workers build network namespaces and need root", file=sys.stderr)
    os.execv(sys.executable, stack.worker_command(args.hostname))


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
    from api.errors import CCBenchError
    from api.teams import service as teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            team = teams.create_team(session, args.name)
            print(f"team {team.name} created (id {team.id})")
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    return 0


def cmd_create_token(args: argparse.Namespace) -> int:
    from api.errors import CCBenchError
    from api.teams import service as teams
    from ccbench.db.session import session_scope

    try:
        with session_scope() as session:
            token = teams.create_token(
                session, teams.get_team_by_name(session, args.team), args.name
            )
    except CCBenchError as exc:
        raise ClientError(exc.message) from exc
    print(token)
    print(f"(token for team {args.team}; it is shown only once)", file=sys.stderr)
    return 0


def cmd_reap(_args: argparse.Namespace) -> int:
    from workers.reaper import reap_stale_runs

    reaped = reap_stale_runs()
    for r in reaped:
        print(f"{r.run_id}: {r.action} ({r.detail})")
    print(f"{len(reaped)} run(s) reaped")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Probe this host as a worker would: kernel, built-in controllers, NFQUEUE, and which BPF
    controllers the kernel accepts (loading needs root; each is removed again at once)."""
    import os

    from workers import bpf
    from workers.testbeds.mininet.probe import probe_host

    host = probe_host(in_private_netns=False)
    host["bpf"] = bpf.probe(try_load=os.geteuid() == 0)
    if args.json:
        print(json.dumps(host, indent=2))
        return 0
    print(f"kernel      {host['kernel']} ({host['machine']}, {host['cpus']} CPUs)")
    print(f"built-in    {' '.join(host['congestion_controls'])}")
    print(f"nfqueue     {'yes' if host['nfqueue'] else 'no'}")
    print("netem       probed per run, inside the run's own namespace")
    found = host["bpf"]
    print(
        f"btf         {'yes' if found['btf'] else 'no'}; bpftool: {found['bpftool'] or 'missing'}"
    )
    if os.geteuid() != 0:
        print("bpf         loading not tried: run as root to check what the kernel accepts")
    for algorithm, state in found["loadable"].items():
        print(f"bpf {algorithm:<16} {state}")
    return 0


# --- client commands -------------------------------------------------------------------------


def cmd_secret_key(args: argparse.Namespace) -> int:
    from ccbench.secrets import new_key

    print(new_key())
    return 0


def _labels(items: list[str]) -> dict[str, str]:
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClientError(f"--label {item!r}: expected KEY=VALUE")
        labels[key] = value
    return labels


def cmd_hosts_add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "name": args.name,
        "address": args.address,
        "port": args.port,
        "user": args.user,
        "labels": _labels(args.label),
        "groups": args.group,
    }
    if args.key_file is not None:
        try:
            body["private_key"] = args.key_file.read_text()
        except OSError as exc:
            raise ClientError(f"--key-file {args.key_file}: {exc.strerror}") from exc
    if args.credential_ref is not None:
        body["credential_ref"] = args.credential_ref
    if args.data_address is not None:
        body["data_address"] = args.data_address
    if args.install_prefix is not None:
        body["install_prefix"] = args.install_prefix
    if args.host_key_file is not None:
        try:
            body["host_key"] = args.host_key_file.read_text().strip()
        except OSError as exc:
            raise ClientError(f"--host-key-file {args.host_key_file}: {exc.strerror}") from exc
    host = _client().post("/v1/hosts", json=body)
    print(
        f"host {host['name']}: {host['user']}@{host['address']}:{host['port']} ({host['auth']}"
        + (f" {host['key_fingerprint']}" if host["key_fingerprint"] else "")
        + ")"
    )
    return 0


def cmd_hosts_list(args: argparse.Namespace) -> int:
    params: list[tuple[str, str]] = [("label", f"{k}={v}") for k, v in _labels(args.label).items()]
    if args.group:
        params.append(("group", args.group))
    hosts = _client().get("/v1/hosts", params=params)
    if args.json:
        print(json.dumps(hosts, indent=2))
        return 0
    for host in hosts:
        labels = " ".join(f"{k}={v}" for k, v in sorted(host["labels"].items()))
        groups = ",".join(host["groups"]) or "-"
        print(
            f"{host['name']:<20} {host['user']}@{host['address']}:{host['port']:<6} "
            f"{host['auth']:<15} groups={groups} {labels}"
        )
    return 0


def cmd_hosts_remove(args: argparse.Namespace) -> int:
    _client().request("DELETE", f"/v1/hosts/{args.name}")
    print(f"host {args.name} removed")
    return 0


def cmd_hosts_group(args: argparse.Namespace) -> int:
    client = _client()
    if any(g["name"] == args.name for g in client.get("/v1/host-groups")):
        group = client.request(
            "PATCH", f"/v1/host-groups/{args.name}", json={"hosts": args.members}
        )
    else:
        group = client.post("/v1/host-groups", json={"name": args.name, "hosts": args.members})
    print(f"group {group['name']}: {' '.join(group['hosts']) or '(empty)'}")
    return 0


def _client() -> Client:
    return Client(load_config(get_settings()))


def _load_file(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClientError(f"{path} is not valid YAML/JSON: {exc}") from exc


def cmd_submit(args: argparse.Namespace) -> int:
    client = _client()
    created = client.post("/v1/experiments", json=_load_file(args.file))
    print(f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) queued")
    if not args.wait:
        return 0
    status = follow(client, created["id"])
    print_report(client.get(f"/v1/experiments/{created['id']}/report"))
    return 0 if status == "done" else 1


def follow(client: Client, experiment_id: str, poll_s: float = 1.0) -> str:
    """Print each run's state and progress until the experiment is final."""
    last_lines: dict[str, str] = {}
    while True:
        detail = client.get(f"/v1/experiments/{experiment_id}")
        total = len(detail["runs"])
        for run in detail["runs"]:
            line = _run_line(run, total)
            if last_lines.get(run["id"]) != line:
                print(line, flush=True)
                last_lines[run["id"]] = line
        if detail["status"] in FINAL_EXPERIMENT:
            counts = ", ".join(f"{n} {s}" for s, n in sorted(detail["status_counts"].items()))
            print(f"experiment {experiment_id} {detail['status']} ({counts})", flush=True)
            return str(detail["status"])
        time.sleep(poll_s)


def _run_line(run: dict[str, Any], total: int) -> str:
    progress = run.get("progress") or {}
    where = ""
    if run["status"] == "running" and progress.get("duration_s"):
        elapsed, duration = float(progress.get("elapsed_s") or 0), float(progress["duration_s"])
        bar = int(20 * min(1.0, elapsed / duration))
        where = f" [{'#' * bar}{'.' * (20 - bar)}] {elapsed:.0f}/{duration:.0f} s"
    axes = " ".join(f"{k}={v}" for k, v in run["axis_values"].items())
    error = f" - {run['error']}" if run.get("error") and run["status"] == "failed" else ""
    return (
        f"run {run['order_index'] + 1}/{total} {axes} rep {run['repetition']}: "
        f"{run['status']}{where}{error}"
    ).replace("  ", " ")


def cmd_status(args: argparse.Namespace) -> int:
    detail = _client().get(f"/v1/experiments/{args.id}")
    print(f"experiment {detail['id']} ({detail['name']}): {detail['status']}")
    for run in detail["runs"]:
        print("  " + _run_line(run, len(detail["runs"])))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    client = _client()
    report = client.get(f"/v1/experiments/{args.id}/report")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    if args.plot:
        for path in plot_report(client, report, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0


# Metrics drawn against the matrix axes by `report --plot`.
PLOTTED_METRICS = ("utilization", "goodput_bps", "jain_index", "queue_mean_pkts", "power")


def plot_report(client: Client, report: dict[str, Any], directory: Path) -> list[Path]:
    """Per finished run its figures; with matrix axes, each plotted metric against the first
    axis, a series per value of the second."""
    from ccbench.plots.figures import comparison_figure, run_figures, save

    written: list[Path] = []
    for n, run in enumerate(report["runs"]):
        if run["status"] != "done":
            continue
        detail = client.get(f"/v1/runs/{run['run_id']}")
        written += save(run_figures(detail), directory, f"run-{n + 1}-")
    axes = report.get("axes") or []
    if axes:
        for metric in PLOTTED_METRICS:
            params = {"metric": metric, "x": axes[0]}
            if len(axes) > 1:
                params["by"] = axes[1]
            comparison = client.get(
                f"/v1/experiments/{report['experiment_id']}/compare", params=params
            )
            written += save({metric: comparison_figure(comparison)}, directory, "compare-")
    return written


def cmd_compare(args: argparse.Namespace) -> int:
    params = {"metric": args.metric, "x": args.x}
    if args.by:
        params["by"] = args.by
    result = _client().get(f"/v1/experiments/{args.id}/compare", params=params)
    if args.plot:
        from ccbench.plots.figures import comparison_figure

        figure = comparison_figure(result)
        figure.tight_layout()
        figure.savefig(args.plot, dpi=150)
        print(f"wrote {args.plot}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['metric']} (median ± SIQR, n repetitions) against {result['x']}")
    for series in result["series"]:
        if result.get("by"):
            print(f"{result['by']} = {series['by']}")
        for point in series["points"]:
            print(
                f"  {result['x']}={point['x']}: {_fmt(point['median'])} ± "
                f"{_fmt(point['siqr'])} (n={point['n']})"
            )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "parquet" and args.output is None:
        raise ClientError("--format parquet writes a binary file: give --output FILE")
    data = _client().download(
        f"/v1/experiments/{args.id}/export.{args.format}", params={"table": args.table}
    )
    if args.output is None:
        sys.stdout.write(data.decode())
    else:
        args.output.write_bytes(data)
        print(f"wrote {args.output} ({len(data):,} bytes)", file=sys.stderr)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    result = _client().post(f"/v1/experiments/{args.id}/cancel")
    print(f"experiment {result['id']}: {result['status']}")
    return 0


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if unit == "bps":
            return f"{value / 1e6:.3f} Mbit/s"
        if unit == "s":
            return f"{value * 1000:.1f} ms"
        return f"{value:.4g}"
    if isinstance(value, int) and unit == "bps":
        return f"{value / 1e6:.3f} Mbit/s"
    return str(value)


def print_report(report: dict[str, Any]) -> None:
    """Per run: flows, aggregate, what was applied and the checks; then the matrix groups."""
    for run in report.get("runs", []):
        axes = " ".join(f"{k}={v}" for k, v in (run.get("axis_values") or {}).items())
        print(f"\nrun {run['run_id']} {axes} rep {run.get('repetition', 0)}: {run['status']}")
        if run.get("error"):
            print(f"  error: {run['error']}")
        for flow in run.get("flows", []):
            print(
                f"  flow {flow['flow']} {flow['algorithm']:<8} goodput_bps="
                f"{_fmt(flow.get('goodput_bps'), 'bps')}  rtt_mean_s="
                f"{_fmt(flow.get('rtt_mean_s'), 's')}  retransmits={_fmt(flow.get('retransmits'))}"
                f"  queue_delay_mean_s={_fmt(flow.get('queue_delay_mean_s'), 's')}"
                f"  loss_rate={_fmt(flow.get('loss_rate'))}"
            )
        aggregate = run.get("aggregate") or {}
        if aggregate:
            units = {"goodput_bps": "bps", "rtt_mean_s": "s", "queue_delay_mean_s": "s"}
            keys = [
                "utilization",
                "jain_index",
                "queue_mean_pkts",
                "power",
                "drops",
                "goodput_bps",
                "rtt_mean_s",
            ]
            # Shown when the run has them (roles, several flows).
            optional = [
                "normalized_fairness",
                "friendliness_ratio",
                "equivalence_ratio",
                "fc_ratio",
                "convergence_time_s",
            ]
            keys += [k for k in optional if aggregate.get(k) is not None]
            units["convergence_time_s"] = "s"
            print(
                "  aggregate: "
                + "  ".join(
                    f"{k}={_fmt(aggregate.get(k), units.get(k, ''))}"
                    for k in keys
                    if k in aggregate
                )
            )
        applied = run.get("applied") or {}
        if applied:
            buffer = (
                f"{applied['buffer_pkts']} pkts"
                if applied.get("buffer_pkts") is not None
                else f"{applied.get('buffer_bytes')} B"
            )
            print(
                f"  applied: {_fmt(applied['rate_bps'], 'bps')}, "
                f"{_fmt(applied['delay_s'], 's')} one way "
                f"(base RTT {_fmt(applied['base_rtt_s'], 's')}), "
                f"buffer {buffer}, delay via {applied.get('delay_mechanism')}; measured: min RTT "
                f"{_fmt(applied.get('measured_min_rtt_s'), 's')}, bottleneck "
                f"{_fmt(applied.get('measured_rate_bps'), 'bps')} while backlogged"
            )
        for check in run.get("checks") or []:
            mark = "ok " if check.get("ok") else "FAIL"
            print(f"  [{mark}] {check.get('name')}: {check.get('detail')}")
    groups = report.get("groups") or []
    if len(groups) > 1 or any(g.get("n", 1) > 1 for g in groups):
        print("\ngroups (median ± SIQR over repetitions):")
        for group in groups:
            axes = " ".join(f"{k}={v}" for k, v in group["axis_values"].items())
            metrics = group.get("metrics", {})
            shown = []
            for name in ("goodput_bps", "utilization", "jain_index", "queue_mean_pkts", "power"):
                if f"{name}_median" in metrics:
                    shown.append(
                        f"{name}={_fmt(metrics[f'{name}_median'])}"
                        f"±{_fmt(metrics.get(f'{name}_siqr'))}"
                    )
            print(f"  {axes} (n={group['n']}): " + "  ".join(shown))


if __name__ == "__main__":
    sys.exit(main())
