"""Browsing, comparing, sharing and reproducing results from the command line, as a client of
the REST API: `list`, `compare`, `annotate`, `pin`/`unpin`, `share`, `rerun`, `bundle`. Every
experiment or run id may be a unique prefix (the API resolves it)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from cli.client import ClientError, client
from cli.render import fmt
from schemas.metrics import METRICS

STATUSES = ["queued", "running", "done", "failed", "cancelled"]
ACCESS_MARK = {"own": "", "shared": " (shared)", "public": " (public)"}
LISTED_METRICS = ("utilization", "goodput_bps")


def add_commands(sub: Any) -> None:
    """Add this module's commands to the `ccbench` parser's subcommands."""
    listing = sub.add_parser(
        "list", help="experiments the team may read: its own, shared with it, public"
    )
    listing.add_argument("--text", "-q", help="in the name, description, notes, tags, or an id")
    listing.add_argument("--tag", action="append", default=[], help="has this tag (repeatable)")
    listing.add_argument("--algorithm", action="append", default=[], help="runs this algorithm")
    listing.add_argument(
        "--param", action="append", default=[], metavar="PATH=VALUE",
        help="a run's spec has this value, any unit: topology.bottleneck.delay=20ms",
    )  # fmt: skip
    listing.add_argument("--status", action="append", default=[], choices=STATUSES)
    listing.add_argument("--since", help="created at or after (RFC 3339, e.g. 2026-11-01T00:00Z)")
    listing.add_argument("--until", help="created before (RFC 3339)")
    listing.add_argument("--team", help="owned by this team")
    listing.add_argument("--access", choices=["own", "shared", "public"])
    listing.add_argument("--pinned", action="store_true", help="only the team's pinned ones")
    listing.add_argument(
        "--sort", help="column: id, name, team, created, status, runs, algorithms, testbed, "
        "tags, pinned or a metric (e.g. utilization); default: pinned first, then newest",
    )  # fmt: skip
    listing.add_argument("--desc", action="store_true", help="sort descending")
    listing.add_argument("--page", type=int, default=1)
    listing.add_argument("--page-size", type=int, default=50)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_list)

    compare = sub.add_parser(
        "compare",
        help="a metric against a spec field or matrix axis, across experiments, points and runs",
    )
    compare.add_argument("ids", nargs="*", metavar="ID", help="experiments (ids or prefixes)")
    compare.add_argument("--point", action="append", default=[], metavar="EXPERIMENT:INDEX",
                         help="one matrix point of an experiment")  # fmt: skip
    compare.add_argument("--run", action="append", default=[], help="one run")
    compare.add_argument(
        "--metric", required=True, help="a metric of the catalogue: " + ", ".join(METRICS)
    )
    compare.add_argument(
        "--x", required=True, help="spec field or axis, e.g. topology.bottleneck.buffer; or "
        "experiment (with --scope flow also flow, algorithm)",
    )  # fmt: skip
    compare.add_argument(
        "--by", help="one series per value (same choices as --x; default: experiment when "
        "several are compared; '' for one series)",
    )  # fmt: skip
    compare.add_argument("--scope", choices=["aggregate", "flow"], default="aggregate",
                         help="the run's metric, or each flow's")  # fmt: skip
    compare.add_argument("--json", action="store_true")
    compare.add_argument("--plot", type=Path, metavar="FILE", help="also draw it (PNG, SVG, PDF)")
    compare.set_defaults(func=cmd_compare)

    annotate = sub.add_parser("annotate", help="change an experiment's tags, description, notes")
    annotate.add_argument("id")
    annotate.add_argument("--name")
    annotate.add_argument("--description")
    annotate.add_argument("--notes")
    annotate.add_argument("--tag", action="append", help="replace the tags (repeatable)")
    annotate.add_argument("--add-tag", action="append", default=[])
    annotate.add_argument("--remove-tag", action="append", default=[])
    annotate.set_defaults(func=cmd_annotate)

    for name, pinned in (("pin", True), ("unpin", False)):
        pin = sub.add_parser(name, help=f"{name} an experiment as one of the team's favourites")
        pin.add_argument("id")
        pin.set_defaults(func=cmd_pin, pinned=pinned)

    share = sub.add_parser(
        "share",
        help="share an experiment (or a campaign) read-only with teams, or publicly (admin token)",
    )
    share.add_argument("id")
    share.add_argument("--campaign", action="store_true", help="ID is a campaign's")
    share.add_argument("--team", action="append", default=[], help="share with this team")
    share.add_argument("--unshare", action="append", default=[], metavar="TEAM",
                       help="stop sharing with this team")  # fmt: skip
    public = share.add_mutually_exclusive_group()
    public.add_argument("--public", action="store_true", help="every team may read it")
    public.add_argument("--private", action="store_true", help="not public any more")
    share.set_defaults(func=cmd_share)

    rerun = sub.add_parser(
        "rerun", help="run an experiment again (optionally with edits) as a new experiment"
    )
    rerun.add_argument("id")
    rerun.add_argument(
        "--edit", type=Path, metavar="FILE",
        help="YAML/JSON merge patch on the submission, e.g. {repetitions: 5}",
    )  # fmt: skip
    rerun.add_argument(
        "--set", action="append", default=[], metavar="PATH=VALUE",
        help="one field, dotted: base.duration=30s, seed=null (new seeds)",
    )  # fmt: skip
    rerun.set_defaults(func=cmd_rerun)

    bundle = sub.add_parser(
        "bundle", help="download a run's bundle: spec, provenance, logs, series, checksums"
    )
    bundle.add_argument("run_id")
    bundle.add_argument("--output", "-o", type=Path, help="default: ccbench-run-<id>.tar.gz")
    bundle.set_defaults(func=cmd_bundle)


def _counts(counts: dict[str, int]) -> str:
    return " ".join(f"{n} {s}" for s, n in counts.items())


def cmd_list(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {
        "q": args.text, "tag": args.tag, "algorithm": args.algorithm, "param": args.param,
        "status": args.status, "created_after": args.since, "created_before": args.until,
        "team": args.team, "access": args.access, "pinned": True if args.pinned else None,
        "sort": f"-{args.sort}" if args.sort and args.desc else args.sort,
        "page": args.page, "page_size": args.page_size,
    }  # fmt: skip
    page = client().get("/v1/experiments", params={k: v for k, v in params.items() if v})
    if args.json:
        print(_json(page))
        return 0
    metrics = [METRICS[m] for m in LISTED_METRICS]
    header = f"{'':1} {'id':8}  {'name':28} {'team':20} {'access':6} {'created (UTC)':16}  "
    header += f"{'status':30} "
    header += f"{'runs':>5}  {'algorithms':16} " + " ".join(f"{m.name:>14}" for m in metrics)
    print(header)
    for e in page["items"]:
        created = e["created_at"][:16].replace("T", " ")
        status = f"{e['status']} ({_counts(e['status_counts'])})"
        values = " ".join(f"{fmt(e['metrics'].get(m.name), m.unit):>14}" for m in metrics)
        print(f"{'*' if e['pinned'] else ' '} {e['short_id']:8}  {e['name'][:28]:28} "
              f"{e['team'][:20]:20} {e['access']:6} {created:16}  {status[:30]:30} "
              f"{e['run_count']:>5}  {' '.join(e['algorithms'])[:16]:16} {values}")  # fmt: skip
    shown = len(page["items"])
    first = (page["page"] - 1) * page["page_size"]
    print(f"{first + 1 if shown else 0}-{first + shown} of {page['total']}"
          + (" (--page for more)" if first + shown < page["total"] else ""))  # fmt: skip
    return 0


def _json(value: Any) -> str:
    return json.dumps(value, indent=2)


def cmd_compare(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"experiment": args.ids, "point": args.point, "run": args.run,
                              "metric": args.metric, "x": args.x, "scope": args.scope}  # fmt: skip
    if args.by is not None:
        params["by"] = args.by
    result = client().get("/v1/compare", params=params)
    if args.plot:
        from ccbench.plots.figures import draw
        from ccbench.plots.model import cross_comparison_figure_data

        figure = draw(cross_comparison_figure_data(result))
        figure.tight_layout()
        figure.savefig(args.plot, dpi=150)
        print(f"wrote {args.plot}", file=sys.stderr)
    if args.json:
        print(_json(result))
        return 0
    metric = METRICS.get(result["metric"])
    unit = metric.unit if metric else ""
    print(f"{result['metric']} ({result['scope']}, median ± SIQR, n values) against "
          f"{result['x']}")  # fmt: skip
    for e in result["experiments"]:
        print(f"  {e['short_id']} {e['name']} (team {e['team']}{ACCESS_MARK[e['access']]}): "
              f"{e['runs']} runs")  # fmt: skip
    for series in result["series"]:
        if result.get("by"):
            print(f"{result['by']} = {series['label']}")
        for point in series["points"]:
            print(f"  {result['x']}={point['label']}: {fmt(point['median'], unit)} ± "
                  f"{fmt(point['siqr'], unit)} (n={point['n']})")  # fmt: skip
    print(f"page: {result['permalink']}")
    return 0


def cmd_annotate(args: argparse.Namespace) -> int:
    api = client()
    body: dict[str, Any] = {
        k: v for k in ("name", "description", "notes") if (v := getattr(args, k)) is not None
    }
    if args.tag is not None or args.add_tag or args.remove_tag:
        tags = args.tag if args.tag is not None else api.get(f"/v1/experiments/{args.id}")["tags"]
        body["tags"] = sorted((set(tags) | set(args.add_tag)) - set(args.remove_tag))
    if not body:
        raise ClientError("nothing to change: give --name, --description, --notes or tags")
    result = api.request("PATCH", f"/v1/experiments/{args.id}", json=body)
    print(f"experiment {result['id']} ({result['name']}): tags {', '.join(result['tags']) or '-'}"
          + (f"; notes: {result['notes']}" if result["notes"] else ""))  # fmt: skip
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    client().request("PUT" if args.pinned else "DELETE", f"/v1/experiments/{args.id}/pin")
    print(f"experiment {args.id} {'pinned' if args.pinned else 'unpinned'}")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    api = client()
    kind = "campaign" if args.campaign else "experiment"
    path = f"/v1/{kind}s/{args.id}/shares"
    shares = api.get(path)
    if args.team or args.unshare or args.public or args.private:
        teams = (set(shares["teams"]) | set(args.team)) - set(args.unshare)
        public = True if args.public else False if args.private else shares["public"]
        shares = api.request("PUT", path, json={"teams": sorted(teams), "public": public})
    who = ", ".join(shares["teams"]) or "no other team"
    print(f"{kind} {args.id}: shared read-only with {who}"
          + ("; public" if shares["public"] else ""))  # fmt: skip
    return 0


def _set(edits: dict[str, Any], assignment: str) -> None:
    path, sep, text = assignment.partition("=")
    if not sep or not path:
        raise ClientError(f"--set {assignment!r}: write PATH=VALUE, e.g. base.duration=30s")
    *parents, last = path.split(".")
    node = edits
    for key in parents:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ClientError(f"--set {assignment!r}: {key} is set to a value already")
    node[last] = yaml.safe_load(text)


def cmd_rerun(args: argparse.Namespace) -> int:
    edits: dict[str, Any] = {}
    if args.edit:
        try:
            loaded = yaml.safe_load(args.edit.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ClientError(f"--edit {args.edit}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ClientError(f"--edit {args.edit}: a mapping of the fields to change")
        edits = loaded
    for assignment in args.set:
        _set(edits, assignment)
    created = client().post_once(f"/v1/experiments/{args.id}/rerun",
                                 {"edits": edits} if edits else {})  # fmt: skip
    print(f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) queued, "
          f"running {created['source_experiment_id']} again")  # fmt: skip
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    api = client()
    output = args.output
    with api.stream("GET", f"/v1/runs/{args.run_id}/bundle") as response:
        if output is None:
            disposition = response.headers.get("content-disposition", "")
            output = Path(disposition.split("filename=")[-1].strip('"') or "bundle.tar.gz")
        size = 0
        with output.open("wb") as handle:
            for chunk in response.iter_bytes():
                handle.write(chunk)
                size += len(chunk)
    print(f"wrote {output} ({size:,} bytes); check it with: tar xzf {output} && "
          f"(cd {output.name.removesuffix('.tar.gz')} && sha256sum -c SHA256SUMS)")  # fmt: skip
    return 0
