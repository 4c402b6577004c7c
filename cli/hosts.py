"""`ccbench hosts ...`: the team's host inventory (the `hosts` testbed), over the REST API."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cli.client import ClientError, client


def labels_of(items: list[str]) -> dict[str, str]:
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
        "labels": labels_of(args.label),
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
    host = client().post("/v1/hosts", json=body)
    print(
        f"host {host['name']}: {host['user']}@{host['address']}:{host['port']} ({host['auth']}"
        + (f" {host['key_fingerprint']}" if host["key_fingerprint"] else "")
        + ")"
    )
    return 0


def cmd_hosts_list(args: argparse.Namespace) -> int:
    params: list[tuple[str, str]] = [
        ("label", f"{k}={v}") for k, v in labels_of(args.label).items()
    ]
    if args.group:
        params.append(("group", args.group))
    hosts = client().get("/v1/hosts", params=params)
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
    client().request("DELETE", f"/v1/hosts/{args.name}")
    print(f"host {args.name} removed")
    return 0


def cmd_hosts_group(args: argparse.Namespace) -> int:
    api = client()
    if any(g["name"] == args.name for g in api.get("/v1/host-groups")):
        group = api.request("PATCH", f"/v1/host-groups/{args.name}", json={"hosts": args.members})
    else:
        group = api.post("/v1/host-groups", json={"name": args.name, "hosts": args.members})
    print(f"group {group['name']}: {' '.join(group['hosts']) or '(empty)'}")
    return 0
