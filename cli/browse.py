"""Results after the fact, as a client of the REST API: annotate, pin and unpin an
experiment, share it (or a campaign) with other teams, run it again, download a run's bundle.
Every id argument takes a unique prefix (cli/ids.py); `list` and `compare` are in
cli/experiments.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from cli.client import ClientError, client, load_document
from cli.ids import Kind, completion, resolve
from cli.render import console
from schemas.metrics import BYTE, format_quantity

PANEL = "Annotating, sharing and reproducing"
app = typer.Typer()

ExperimentId = Annotated[
    str,
    typer.Argument(
        help="the experiment's id, or any unique prefix of it (`ccbench list` shows them)",
        autocompletion=completion("experiment"),
        show_default=False,
    ),
]


@app.command(rich_help_panel=PANEL)
def annotate(
    experiment: ExperimentId,
    name: Annotated[str | None, typer.Option(help="a new name")] = None,
    description: Annotated[str | None, typer.Option(help="a new description")] = None,
    notes: Annotated[
        str | None, typer.Option(help="notes on the results (replace the old ones)")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(help="replace every tag with these (repeat; --tag '' for none)"),
    ] = None,
    add_tag: Annotated[list[str] | None, typer.Option(help="add this tag (repeat)")] = None,
    remove_tag: Annotated[list[str] | None, typer.Option(help="remove this tag (repeat)")] = None,
) -> None:
    """Change an experiment's name, description, notes or tags after the fact."""
    experiment_id = resolve("experiment", experiment)
    api = client()
    body: dict[str, Any] = {
        k: v
        for k, v in (("name", name), ("description", description), ("notes", notes))
        if v is not None
    }
    if tag is not None or add_tag or remove_tag:
        tags = tag if tag is not None else api.get(f"/v1/experiments/{experiment_id}")["tags"]
        body["tags"] = sorted((set(tags) | set(add_tag or [])) - set(remove_tag or []) - {""})
    if not body:
        raise ClientError(
            "nothing to change: give --name, --description, --notes, --tag, --add-tag or "
            "--remove-tag"
        )
    result = api.request("PATCH", f"/v1/experiments/{experiment_id}", json=body)
    tags_text = ", ".join(result["tags"]) or "-"
    notes_text = f"; notes: {result['notes']}" if result["notes"] else ""
    console().print(f"experiment {result['id']} ({result['name']}): tags {tags_text}{notes_text}")


def _pin(experiment: str, pinned: bool) -> None:
    experiment_id = resolve("experiment", experiment)
    client().request("PUT" if pinned else "DELETE", f"/v1/experiments/{experiment_id}/pin")
    console().print(f"experiment {experiment_id} {'pinned' if pinned else 'unpinned'}")


@app.command(rich_help_panel=PANEL)
def pin(experiment: ExperimentId) -> None:
    """Pin an experiment: `ccbench list` and the pages show your team's pins first."""
    _pin(experiment, True)


@app.command(rich_help_panel=PANEL)
def unpin(experiment: ExperimentId) -> None:
    """Unpin an experiment."""
    _pin(experiment, False)


@app.command(rich_help_panel=PANEL)
def share(
    resource: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            help="the experiment's id (with --campaign the campaign's), or a unique prefix",
            show_default=False,
        ),
    ],
    campaign: Annotated[
        bool, typer.Option("--campaign", help="ID is a campaign's: share it and its results")
    ] = False,
    team: Annotated[
        list[str] | None, typer.Option(help="share it read-only with this team (repeat)")
    ] = None,
    unshare: Annotated[
        list[str] | None,
        typer.Option(metavar="TEAM", help="stop sharing it with this team (repeat)"),
    ] = None,
    public: Annotated[
        bool | None,
        typer.Option(
            "--public/--private",
            help="every team may read it, or no longer (default: as it is)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Share an experiment or a campaign read-only with teams, or publicly.

    Without options, show with whom it is shared. A team it is shared with reads it
    (reports, exports, runs, logs, bundles), compares it and may run it again into its own
    team; only yours changes, cancels or shares it (with an admin token)."""
    kind: Kind = "campaign" if campaign else "experiment"
    resource_id = resolve(kind, resource)
    api = client()
    path = f"/v1/{kind}s/{resource_id}/shares"
    shares = api.get(path)
    if team or unshare or public is not None:
        teams = (set(shares["teams"]) | set(team or [])) - set(unshare or [])
        shares = api.request(
            "PUT",
            path,
            json={
                "teams": sorted(teams),
                "public": shares["public"] if public is None else public,
            },
        )
    who = ", ".join(shares["teams"]) or "no other team"
    console().print(
        f"{kind} {resource_id}: shared read-only with {who}"
        + ("; public" if shares["public"] else "")
    )


def _assign(edits: dict[str, Any], assignment: str) -> None:
    """PATH=VALUE into the merge patch: a dotted path, the value read as YAML."""
    path, sep, text = assignment.partition("=")
    if not sep or not path:
        raise typer.BadParameter(
            f"{assignment!r} is not PATH=VALUE, e.g. base.duration=30s", param_hint="--set"
        )
    *parents, last = path.split(".")
    node = edits
    for key in parents:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise typer.BadParameter(
                f"{assignment!r}: {key} is set to a value already", param_hint="--set"
            )
        node = child
    node[last] = yaml.safe_load(text)


@app.command(rich_help_panel=PANEL)
def rerun(
    experiment: ExperimentId,
    edit: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="a JSON Merge Patch on the submission, YAML or JSON, e.g. {repetitions: 5}",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="PATH=VALUE",
            help="change one field of the submission, dotted, the value as YAML: "
            "base.duration=30s, repetitions=5, seed=null (new seeds); repeat",
        ),
    ] = None,
) -> None:
    """Run an experiment again, as a new experiment of your team linked to it.

    The stored submission with its seeds (any team's experiment your team may read), with
    any edits."""
    experiment_id = resolve("experiment", experiment)
    edits: dict[str, Any] = {}
    if edit is not None:
        loaded = load_document(edit)
        if not isinstance(loaded, dict):
            raise ClientError(f"--edit {edit}: a mapping of the fields to change")
        edits = loaded
    for assignment in set_ or []:
        _assign(edits, assignment)
    created = client().post_once(
        f"/v1/experiments/{experiment_id}/rerun", {"edits": edits} if edits else {}
    )
    console().print(
        f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) "
        f"queued, running {created['source_experiment_id']} again"
    )


@app.command(rich_help_panel=PANEL)
def bundle(
    run: Annotated[
        str,
        typer.Argument(
            help="the run's id, or any unique prefix of it (`ccbench status EXPERIMENT`)",
            autocompletion=completion("run"),
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="the file to write (default: ccbench-run-<id>.tar.gz here)",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Download a run's bundle (.tar.gz).

    Its spec, submission, provenance, logs, series and packet logs, with their SHA-256
    checksums."""
    run_id = resolve("run", run)
    target = output or Path(f"ccbench-run-{run_id}.tar.gz")
    size = 0
    with client().stream("GET", f"/v1/runs/{run_id}/bundle") as response, target.open("wb") as f:
        for chunk in response.iter_bytes():
            f.write(chunk)
            size += len(chunk)
    console().print(
        f"wrote {target} ({format_quantity(size, BYTE)}); check it with: tar xzf {target} && "
        f"(cd ccbench-run-{run_id} && sha256sum -c SHA256SUMS)"
    )
