"""`ccbench hosts ...`: the team's host inventory (the `hosts` testbed), over the REST API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ClientError, client
from cli.render import console, print_json, table

app = typer.Typer(name="hosts", help="The team's host inventory (the `hosts` testbed).")

Labels = Annotated[
    list[str] | None,
    typer.Option("--label", metavar="KEY=VALUE", help="a label (repeat for several)"),
]


def labels_of(items: list[str]) -> dict[str, str]:
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClientError(f"--label {item!r}: expected KEY=VALUE")
        labels[key] = value
    return labels


def _read(option: str, path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise ClientError(f"{option} {path}: {exc.strerror}") from exc


@app.command()
def add(
    name: Annotated[str, typer.Argument(help="the host's name in specs (flows[].src/dst)")],
    address: Annotated[str, typer.Option(help="host name or IP the workers reach it at")],
    port: Annotated[int, typer.Option(min=1, max=65535, help="SSH port")] = 22,
    user: Annotated[str, typer.Option(help="SSH user")] = "root",
    key_file: Annotated[
        Path | None,
        typer.Option(help="SSH private key (sent once, stored encrypted)", dir_okay=False),
    ] = None,
    credential_ref: Annotated[
        str | None,
        typer.Option(help="'file:/path' or 'env:NAME' on the workers, instead of --key-file"),
    ] = None,
    label: Labels = None,
    group: Annotated[
        list[str] | None, typer.Option(help="an existing group to join (repeat for several)")
    ] = None,
    data_address: Annotated[
        str | None, typer.Option(help="address on the experiment network (default: --address)")
    ] = None,
    host_key_file: Annotated[
        Path | None,
        typer.Option(
            help="the host's SSH public key file, pinned (e.g. from ssh-keyscan)", dir_okay=False
        ),
    ] = None,
    install_prefix: Annotated[
        str | None,
        typer.Option(help="the agents' install directory on the host (default /opt/ccbench)"),
    ] = None,
) -> None:
    """Register a host reached over SSH."""
    if key_file is not None and credential_ref is not None:
        raise ClientError("give --key-file or --credential-ref, not both")
    body: dict[str, Any] = {
        "name": name,
        "address": address,
        "port": port,
        "user": user,
        "labels": labels_of(label or []),
        "groups": group or [],
    }
    if key_file is not None:
        body["private_key"] = _read("--key-file", key_file)
    if credential_ref is not None:
        body["credential_ref"] = credential_ref
    if data_address is not None:
        body["data_address"] = data_address
    if install_prefix is not None:
        body["install_prefix"] = install_prefix
    if host_key_file is not None:
        body["host_key"] = _read("--host-key-file", host_key_file).strip()
    host = client().post("/v1/hosts", json=body)
    fingerprint = f" {host['key_fingerprint']}" if host["key_fingerprint"] else ""
    console().print(
        f"host {host['name']}: {host['user']}@{host['address']}:{host['port']} "
        f"({host['auth']}{fingerprint})"
    )


@app.command("list")
def list_hosts(
    label: Labels = None,
    group: Annotated[str | None, typer.Option(help="only the hosts of this group")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the API's JSON instead")] = False,
) -> None:
    """The team's hosts (with all the labels given, in the group given)."""
    params: list[tuple[str, str]] = [
        ("label", f"{k}={v}") for k, v in labels_of(label or []).items()
    ]
    if group:
        params.append(("group", group))
    hosts = client().get("/v1/hosts", params=params)
    if as_json:
        print_json(hosts)
        return
    grid = table("name", "ssh", "auth", "groups", "labels")
    for host in hosts:
        grid.add_row(
            host["name"],
            f"{host['user']}@{host['address']}:{host['port']}",
            host["auth"],
            ",".join(host["groups"]) or "-",
            " ".join(f"{k}={v}" for k, v in sorted(host["labels"].items())),
        )
    console().print(grid)


@app.command()
def remove(name: Annotated[str, typer.Argument(help="the host's name")]) -> None:
    """Remove a host from the inventory."""
    client().request("DELETE", f"/v1/hosts/{name}")
    console().print(f"host {name} removed")


@app.command("group")
def set_group(
    name: Annotated[str, typer.Argument(help="the group's name")],
    members: Annotated[
        list[str] | None, typer.Argument(help="host names: the group's members from now on")
    ] = None,
) -> None:
    """Create or replace a group of hosts."""
    api = client()
    hosts = members or []
    if any(g["name"] == name for g in api.get("/v1/host-groups")):
        group = api.request("PATCH", f"/v1/host-groups/{name}", json={"hosts": hosts})
    else:
        group = api.post("/v1/host-groups", json={"name": name, "hosts": hosts})
    console().print(f"group {group['name']}: {' '.join(group['hosts']) or '(empty)'}")
