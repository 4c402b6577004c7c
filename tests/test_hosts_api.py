"""The host inventory over the API against real PostgreSQL: keys are encrypted at rest and never
returned, errors name the field, bad input stores nothing, teams are isolated; and the
migrations create exactly the models' schema."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import select

from api.app import app
from ccbench import secrets
from ccbench.db.models import Base, Host, Team
from ccbench.db.session import session_scope
from ccbench.hosts import access_for


@pytest.fixture
def client() -> TestClient:
    return TestClient(app)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def ssh_key(tmp_path: Path, name: str, passphrase: str = "") -> tuple[str, str]:
    """A fresh ed25519 key from ssh-keygen: (private key text, fingerprint as ssh-keygen
    prints it)."""
    path = tmp_path / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "", "-f", str(path)],
        check=True,
    )
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return path.read_text(), listed.split()[1]


def host_body(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "address": "10.77.0.2",
        "labels": {"site": "lab", "role": "sender"},
    } | extra


def stored(team_token: tuple[str, str], name: str) -> Host | None:
    """The team's host row (other tests' teams may have hosts of the same name)."""
    with session_scope() as session:
        return session.scalar(
            select(Host)
            .join(Team, Team.id == Host.team_id)
            .where(Host.name == name, Team.name == team_token[0])
        )


def test_private_key_is_encrypted_at_rest_and_never_returned(
    client: TestClient, team_token: tuple[str, str], tmp_path: Path
) -> None:
    _, token = team_token
    key, fingerprint = ssh_key(tmp_path, "k1")
    created = client.post("/v1/hosts", json=host_body("h1", private_key=key), headers=auth(token))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["auth"] == "private_key" and body["key_fingerprint"] == fingerprint
    assert body["port"] == 22 and body["user"] == "root"
    for response in (
        created,
        client.get("/v1/hosts/h1", headers=auth(token)),
        client.get("/v1/hosts", headers=auth(token)),
        client.patch("/v1/hosts/h1", json={"port": 2222}, headers=auth(token)),
    ):
        assert response.status_code in (200, 201)
        assert "PRIVATE KEY" not in response.text and 'private_key":' not in response.text

    row = stored(team_token, "h1")
    assert row is not None and row.private_key_encrypted is not None
    assert "PRIVATE KEY" not in row.private_key_encrypted
    assert secrets.decrypt(row.private_key_encrypted) == key.strip() + "\n"
    with session_scope() as session:
        (access,) = access_for(session, row.team_id, ["h1"])
    assert access.private_key == key.strip() + "\n" and access.port == 2222


def test_bad_input_names_the_field_and_stores_nothing(
    client: TestClient, team_token: tuple[str, str], tmp_path: Path
) -> None:
    _, token = team_token
    key, _ = ssh_key(tmp_path, "k2")
    locked, _ = ssh_key(tmp_path, "k3", passphrase="secret phrase")
    cases: list[tuple[dict[str, Any], str, str]] = [
        (host_body("bad1", address="not an address!"), "address", "host name or IP"),
        (host_body("bad2", port=70000), "port", "65535"),
        (host_body("Bad_Name"), "name", "pattern"),
        (host_body("bad3", private_key="hello"), "private_key", "not a private key"),
        (host_body("bad4", private_key=locked), "private_key", "passphrase"),
        (host_body("bad5", credential_ref="/no/scheme"), "credential_ref", "file:"),
        (host_body("bad6", private_key=key, credential_ref="env:K"), "body", "not both"),
        (host_body("bad7", groups=["nope"]), "groups", "no such host group: nope"),
        (host_body("bad8", labels={"Site": "x"}), "labels", "label key"),
    ]
    for body, field, reason in cases:
        response = client.post("/v1/hosts", json=body, headers=auth(token))
        assert response.status_code == 422, (body, response.text)
        errors = response.json()["errors"]
        assert any(e["field"] == field and reason in e["reason"] for e in errors), (field, errors)
        assert stored(team_token, body["name"]) is None
    assert client.post("/v1/hosts", json=host_body("dup"), headers=auth(token)).status_code == 201
    again = client.post("/v1/hosts", json=host_body("dup", port=2200), headers=auth(token))
    assert again.status_code == 409 and "already exists" in again.json()["message"]
    # A failed update changes nothing either.
    bad = client.patch(
        "/v1/hosts/dup", json={"port": 2200, "groups": ["nope"]}, headers=auth(token)
    )
    assert bad.status_code == 422
    assert client.get("/v1/hosts/dup", headers=auth(token)).json()["port"] == 22


def test_groups_labels_filters_and_updates(
    client: TestClient, team_token: tuple[str, str], tmp_path: Path
) -> None:
    _, token = team_token
    h = auth(token)
    key, _ = ssh_key(tmp_path, "k4")
    assert (
        client.post("/v1/hosts", json=host_body("a", private_key=key), headers=h).status_code == 201
    )
    receiver = host_body(
        "b", labels={"site": "lab", "role": "receiver"}, credential_ref="file:/etc/k"
    )
    assert client.post("/v1/hosts", json=receiver, headers=h).status_code == 201
    other_site = host_body("c", labels={"site": "cloud", "role": "sender"})
    assert client.post("/v1/hosts", json=other_site, headers=h).status_code == 201

    group = client.post("/v1/host-groups", json={"name": "lab", "hosts": ["a", "b"]}, headers=h)
    assert group.status_code == 201 and group.json()["hosts"] == ["a", "b"]
    unknown = client.post("/v1/host-groups", json={"name": "x", "hosts": ["a", "zz"]}, headers=h)
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["field"] == "hosts"
    assert client.get("/v1/host-groups/x", headers=h).status_code == 404

    def names(query: str) -> list[str]:
        response = client.get(f"/v1/hosts{query}", headers=h)
        assert response.status_code == 200, response.text
        return [host["name"] for host in response.json()]

    assert names("") == ["a", "b", "c"]
    assert names("?label=site=lab") == ["a", "b"]
    assert names("?label=site=lab&label=role=sender") == ["a"]
    assert names("?group=lab") == ["a", "b"]
    assert client.get("/v1/hosts?label=site", headers=h).json()["errors"][0]["field"] == "label"
    assert client.get("/v1/hosts?group=none", headers=h).status_code == 404

    assert client.get("/v1/hosts/b", headers=h).json()["auth"] == "credential_ref"
    joined = client.patch("/v1/hosts/c", json={"groups": ["lab"]}, headers=h).json()
    assert joined["groups"] == ["lab"]
    assert client.get("/v1/host-groups/lab", headers=h).json()["hosts"] == ["a", "b", "c"]
    dropped = client.patch("/v1/hosts/a", json={"private_key": None}, headers=h).json()
    assert dropped["auth"] == "worker_default" and dropped["key_fingerprint"] is None
    row = stored(team_token, "a")
    assert row is not None and row.private_key_encrypted is None

    assert client.delete("/v1/hosts/b", headers=h).status_code == 204
    assert client.get("/v1/host-groups/lab", headers=h).json()["hosts"] == ["a", "c"]
    assert client.delete("/v1/host-groups/lab", headers=h).status_code == 204
    assert names("") == ["a", "c"]  # deleting a group keeps its hosts


def test_teams_cannot_see_each_others_hosts(client: TestClient, unique: str) -> None:
    from ccbench import teams

    with session_scope() as session:
        token_a = teams.create_token(session, teams.create_team(session, f"ha-{unique}"), "t")
        token_b = teams.create_token(session, teams.create_team(session, f"hb-{unique}"), "t")
    assert (
        client.post("/v1/hosts", json=host_body("same"), headers=auth(token_a)).status_code == 201
    )
    assert client.get("/v1/hosts/same", headers=auth(token_b)).status_code == 404
    assert client.get("/v1/hosts", headers=auth(token_b)).json() == []
    assert client.delete("/v1/hosts/same", headers=auth(token_b)).status_code == 404
    # Names are per team: team B may use the same name.
    assert (
        client.post("/v1/hosts", json=host_body("same"), headers=auth(token_b)).status_code == 201
    )
    assert client.get("/v1/hosts").status_code == 401


def test_migrations_create_exactly_the_models_schema() -> None:
    with session_scope() as session:
        context = MigrationContext.configure(session.connection(), opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
