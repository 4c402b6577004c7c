"""Team result browsing through the REST API on PostgreSQL: token scopes, the listing's filters
and sort orders, annotations and pins, sharing between teams, running again, comparisons across
experiments, run bundles, id prefixes, and every new endpoint's documented errors."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import tarfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from api.app import app
from api.errors import ErrorBody
from ccbench import teams
from ccbench.access import Scope
from ccbench.db.models import ApiToken, Experiment, Run
from ccbench.db.session import session_scope
from ccbench.settings import get_settings
from tests.test_api import EXAMPLE, auth, finish_runs_with, matrix


@pytest.fixture
def client() -> TestClient:
    return TestClient(app)


def new_team(unique: str, name: str, scope: Scope = Scope.admin) -> tuple[str, str]:
    """A fresh team and a token of it with this scope: (team name, token)."""
    with session_scope() as session:
        team = teams.create_team(session, f"{name}-{unique}")
        return team.name, teams.create_token(session, team, "t", scope=scope)


def token_of(team_name: str, scope: Scope) -> str:
    with session_scope() as session:
        return teams.create_token(session, teams.get_team_by_name(session, team_name), scope.value,
                                  scope=scope)  # fmt: skip


def submit(client: TestClient, token: str, body: dict[str, Any]) -> str:
    response = client.post("/v1/experiments", json=body, headers=auth(token))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def spec(name: str, *, algorithms: tuple[str, str] = ("reno", "cubic"), delay: str = "20ms",
         tags: list[str] | None = None, description: str = "") -> dict[str, Any]:  # fmt: skip
    body = copy.deepcopy(EXAMPLE)
    body.update(name=name, tags=tags or [], description=description)
    body["flows"] = [{"algorithm": algorithms[0]}, {"algorithm": algorithms[1]}]
    body["topology"]["bottleneck"]["delay"] = delay
    return body


def listing(client: TestClient, token: str, **params: Any) -> dict[str, Any]:
    response = client.get("/v1/experiments", params=params, headers=auth(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def names(page: dict[str, Any]) -> list[str]:
    return [e["name"] for e in page["items"]]


# --- scopes and tokens ---------------------------------------------------------------------


def test_scopes_bound_what_a_token_may_do(client: TestClient, unique: str) -> None:
    team, admin = new_team(unique, "scopes")
    read, write = token_of(team, Scope.read), token_of(team, Scope.write)

    refused = client.post("/v1/experiments", json=EXAMPLE, headers=auth(read))
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "forbidden" and "scope is read" in refused.json()["message"]
    experiment_id = submit(client, write, EXAMPLE)
    # A read token reads everything of its team, and changes nothing.
    assert client.get(f"/v1/experiments/{experiment_id}", headers=auth(read)).status_code == 200
    for method, path, body in (
        ("PATCH", f"/v1/experiments/{experiment_id}", {"notes": "x"}),
        ("PUT", f"/v1/experiments/{experiment_id}/pin", None),
        ("POST", f"/v1/experiments/{experiment_id}/cancel", None),
        ("POST", f"/v1/experiments/{experiment_id}/rerun", {}),
        ("PUT", f"/v1/experiments/{experiment_id}/shares", {"public": True}),
        ("POST", "/v1/tokens", {"name": "more"}),
    ):
        response = client.request(method, path, json=body, headers=auth(read))
        assert response.status_code == 403, (method, path, response.text)
    # Write changes experiments, but shares and tokens are an admin's.
    assert client.patch(f"/v1/experiments/{experiment_id}", json={"notes": "by write"},
                        headers=auth(write)).status_code == 200  # fmt: skip
    shared = client.put(f"/v1/experiments/{experiment_id}/shares", json={"public": True},
                        headers=auth(write))  # fmt: skip
    assert shared.status_code == 403 and "needs admin" in shared.json()["message"]
    assert client.post("/v1/tokens", json={"name": "x"}, headers=auth(write)).status_code == 403

    # An admin creates tokens of any scope; the default is read.
    made = client.post("/v1/tokens", json={"name": "ci"}, headers=auth(admin)).json()
    assert made["scope"] == "read"
    me = client.get("/v1/me", headers=auth(made["token"])).json()
    assert me["scope"] == "read" and me["team_name"] == team
    writer = client.post("/v1/tokens", json={"name": "ci-w", "scope": "write"},
                         headers=auth(admin)).json()  # fmt: skip
    assert client.post("/v1/experiments", json=EXAMPLE,
                       headers=auth(writer["token"])).status_code == 201  # fmt: skip
    bad = client.post("/v1/tokens", json={"name": "x", "scope": "root"}, headers=auth(admin))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "scope"
    listed = {t["name"]: t["scope"] for t in client.get("/v1/tokens", headers=auth(read)).json()}
    assert listed["ci"] == "read" and listed["ci-w"] == "write" and listed["t"] == "admin"


def test_revoked_and_expired_tokens_are_refused_at_once(client: TestClient, unique: str) -> None:
    team, admin = new_team(unique, "expiry")
    made = client.post("/v1/tokens", json={"name": "soon", "scope": "write"},
                       headers=auth(admin)).json()  # fmt: skip
    assert client.get("/v1/me", headers=auth(made["token"])).status_code == 200
    # Its expiry passes: the next request is refused, with no grace.
    with session_scope() as session:
        session.execute(update(ApiToken).where(ApiToken.id == made["id"])
                        .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))  # fmt: skip
    expired = client.get("/v1/me", headers=auth(made["token"]))
    assert expired.status_code == 401 and "expired" in expired.json()["message"]
    # The pages refuse it too.
    page = TestClient(app, follow_redirects=False).post("/ui/login",
                                                        data={"token": made["token"]})  # fmt: skip
    assert page.status_code == 401
    other = client.post("/v1/tokens", json={"name": "other", "scope": "read"},
                        headers=auth(admin)).json()  # fmt: skip
    assert client.delete(f"/v1/tokens/{other['id']}", headers=auth(admin)).status_code == 204
    assert client.get("/v1/experiments", headers=auth(other["token"])).status_code == 401


# --- the listing ---------------------------------------------------------------------------


def test_listing_filters_sorts_and_pages(client: TestClient, unique: str) -> None:
    team, token = new_team(unique, "browse")
    a = submit(client, token, spec("fair-reno", tags=["fairness", "lab"], delay="20ms"))
    b = submit(client, token, spec("fair-vegas", algorithms=("vegas", "reno"), tags=["lab"],
                                   delay="50ms", description="delay-based"))  # fmt: skip
    buffers = matrix(["reno", "cubic"], ["0.5bdp", "2bdp"], 2)
    buffers.update(name="buffers", tags=["sweep"])
    c = submit(client, token, buffers)
    finish_runs_with(c, lambda run: 0.5 if run.axis_values[
        "topology.bottleneck.buffer"] == "0.5bdp" else 0.9)  # fmt: skip
    finish_runs_with(a, lambda run: 0.6)

    everything = listing(client, token)
    assert everything["total"] == 3
    row = {e["name"]: e for e in everything["items"]}["buffers"]
    assert row["team"] == team and row["access"] == "own" and row["short_id"] == c[:8]
    assert row["algorithms"] == ["cubic", "reno"] and row["testbeds"] == ["mininet"]
    assert row["status"] == "done" and row["status_counts"] == {"done": 8}
    assert row["metrics"]["utilization"] == pytest.approx(0.7)  # median of 4 x 0.5, 4 x 0.9
    assert row["created_at"].endswith(("+00:00", "Z"))

    assert names(listing(client, token, tag="lab", sort="name")) == ["fair-reno", "fair-vegas"]
    assert names(listing(client, token, tag=["lab", "fairness"])) == ["fair-reno"]
    assert names(listing(client, token, algorithm="vegas")) == ["fair-vegas"]
    assert set(names(listing(client, token, algorithm=["vegas", "cubic"]))) == {
        "fair-vegas", "fair-reno", "buffers"}  # fmt: skip
    # Parameter values in any unit, against every run's spec (the matrix's axis values too).
    assert names(listing(client, token, param="topology.bottleneck.delay=50ms")) == ["fair-vegas"]
    assert names(listing(client, token, param="topology.bottleneck.delay=0.05s")) == ["fair-vegas"]
    assert names(listing(client, token, param="topology.bottleneck.buffer=2bdp")) == ["buffers"]
    assert names(listing(client, token, param="flows[0].algorithm=vegas")) == ["fair-vegas"]
    assert names(listing(client, token, param=["topology.bottleneck.rate=10Mbit",
                                               "flows[*].algorithm=cubic"], sort="name")) == [
        "buffers", "fair-reno"]  # fmt: skip
    assert names(listing(client, token, q="DELAY-based")) == ["fair-vegas"]  # description
    assert names(listing(client, token, q="swee")) == ["buffers"]  # a tag
    assert names(listing(client, token, q=b[:6])) == ["fair-vegas"]  # an id prefix
    assert listing(client, token, status="done")["total"] == 2
    assert names(listing(client, token, status="queued")) == ["fair-vegas"]
    now = datetime.now(UTC)
    hour_ago = (now - timedelta(hours=1)).isoformat()
    assert listing(client, token, created_after=hour_ago)["total"] == 3
    assert listing(client, token, created_before=hour_ago)["total"] == 0
    assert listing(client, token, team=team)["total"] == 3
    assert listing(client, token, team="nobody-" + unique)["total"] == 0

    # Sort by any column, missing metrics last either way; pages.
    assert names(listing(client, token, sort="-utilization")) == ["buffers", "fair-reno",
                                                                  "fair-vegas"]  # fmt: skip
    assert names(listing(client, token, sort="utilization")) == ["fair-reno", "buffers",
                                                                 "fair-vegas"]  # fmt: skip
    assert names(listing(client, token, sort="runs"))[-1] == "buffers"
    assert names(listing(client, token, sort="-created"))[0] == "buffers"
    assert names(listing(client, token, sort="algorithms"))[-1] == "fair-vegas"  # reno vegas
    first = listing(client, token, sort="name", page_size=2)
    second = listing(client, token, sort="name", page_size=2, page=2)
    assert names(first) + names(second) == ["buffers", "fair-reno", "fair-vegas"]
    assert first["total"] == 3

    for params, field in (({"sort": "colour"}, "sort"), ({"param": "delay"}, "param.0"),
                          ({"status": "pending"}, "status.0"),
                          ({"created_after": "2026-01-01T00:00:00"}, "created_after"),
                          ({"access": "mine"}, "access")):  # fmt: skip
        bad = client.get("/v1/experiments", params=params, headers=auth(token))
        assert bad.status_code == 422, (params, bad.text)
        assert bad.json()["errors"][0]["field"] == field, bad.json()


def test_annotate_and_pin(client: TestClient, unique: str) -> None:
    team, token = new_team(unique, "notes")
    first = submit(client, token, spec("one", tags=["old"]))
    second = submit(client, token, spec("two"))
    changed = client.patch(f"/v1/experiments/{first[:10]}",
                           json={"tags": ["b", "a", "b"], "notes": "queue drained early",
                                 "description": "after the fact"}, headers=auth(token))  # fmt: skip
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert body["tags"] == ["a", "b"] and body["notes"] == "queue drained early"
    assert body["description"] == "after the fact" and body["name"] == "one"
    assert names(listing(client, token, q="drained")) == ["one"]
    assert listing(client, token, tag="old")["total"] == 0
    renamed = client.patch(f"/v1/experiments/{first}", json={"name": "uno"}, headers=auth(token))
    assert renamed.json()["name"] == "uno" and renamed.json()["tags"] == ["a", "b"]
    for body_, field in (({"tags": ["x" * 65]}, "tags.0"), ({"name": ""}, "name"),
                         ({"colour": "red"}, "colour")):  # fmt: skip
        bad = client.patch(f"/v1/experiments/{first}", json=body_, headers=auth(token))
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == field, bad.text

    # Pinned first by default; the filter and the flag.
    assert names(listing(client, token)) == ["two", "uno"]
    assert client.put(f"/v1/experiments/{first}/pin", headers=auth(token)).status_code == 204
    assert client.put(f"/v1/experiments/{first}/pin", headers=auth(token)).status_code == 204
    pinned_first = listing(client, token)
    assert names(pinned_first) == ["uno", "two"]
    assert [e["pinned"] for e in pinned_first["items"]] == [True, False]
    assert names(listing(client, token, pinned=True)) == ["uno"]
    assert names(listing(client, token, pinned=False)) == ["two"]
    assert client.delete(f"/v1/experiments/{first}/pin", headers=auth(token)).status_code == 204
    assert names(listing(client, token)) == ["two", "uno"]
    assert second


def test_id_prefixes(client: TestClient, unique: str) -> None:
    team, token = new_team(unique, "prefix")
    real = submit(client, token, spec("real"))
    run_id = client.get(f"/v1/experiments/{real}", headers=auth(token)).json()["runs"][0]["id"]
    # Two experiments whose ids share their first 8 characters.
    twins = [f"{unique[:8]}{n}" + "0" * 23 for n in (1, 2)]
    with session_scope() as session:
        owner = teams.get_team_by_name(session, team)
        for n, experiment_id in enumerate(twins):
            session.add(Experiment(id=experiment_id, team_id=owner.id, name=f"twin-{n}",
                                   kind="experiment", submission={}, status="done",
                                   run_count=0))  # fmt: skip
    found = client.get(f"/v1/experiments/{real[:6]}", headers=auth(token))
    assert found.status_code == 200 and found.json()["id"] == real
    assert client.get(f"/v1/experiments/{twins[1][:9]}", headers=auth(token)).json()["name"] == (
        "twin-1")  # fmt: skip
    ambiguous = client.get(f"/v1/experiments/{unique[:8]}", headers=auth(token))
    assert ambiguous.status_code == 422, ambiguous.text
    error = ambiguous.json()["errors"][0]
    assert error["field"] == "experiment_id" and "matches 2 experiments" in error["reason"]
    assert twins[0][:8] in error["reason"] and "give more characters" in error["reason"]
    # Fewer than 4 characters is no prefix; another team's ids are not matched.
    assert client.get(f"/v1/experiments/{real[:3]}", headers=auth(token)).status_code == 404
    _, other = new_team(unique, "prefix-other")
    assert client.get(f"/v1/experiments/{real[:8]}", headers=auth(other)).status_code == 404
    run = client.get(f"/v1/runs/{run_id[:7]}", headers=auth(token))
    assert run.status_code == 200 and run.json()["id"] == run_id
    assert client.patch(f"/v1/experiments/{real[:8]}", json={"notes": "by prefix"},
                        headers=auth(token)).json()["notes"] == "by prefix"  # fmt: skip


# --- sharing -------------------------------------------------------------------------------


def test_sharing_between_teams_is_read_only(client: TestClient, unique: str) -> None:
    team_a, token_a = new_team(unique, "a")
    team_b, token_b = new_team(unique, "b")
    team_c, token_c = new_team(unique, "c")
    shared = submit(client, token_a, spec("a-shared"))
    private = submit(client, token_a, spec("a-private"))
    finish_runs_with(shared, lambda run: 0.8)
    run_id = client.get(f"/v1/experiments/{shared}", headers=auth(token_a)).json()["runs"][0]["id"]

    assert client.get(f"/v1/experiments/{shared}", headers=auth(token_b)).status_code == 404
    put = client.put(f"/v1/experiments/{shared}/shares", json={"teams": [team_b]},
                     headers=auth(token_a))  # fmt: skip
    assert put.status_code == 200 and put.json() == {"public": False, "teams": [team_b]}

    seen = listing(client, token_b)
    assert names(seen) == ["a-shared"]  # not A's other experiment
    assert seen["items"][0]["access"] == "shared" and seen["items"][0]["team"] == team_a
    assert names(listing(client, token_b, access="own")) == []
    assert names(listing(client, token_b, access="shared")) == ["a-shared"]
    for path in (f"/v1/experiments/{shared}", f"/v1/experiments/{shared}/report",
                 f"/v1/runs/{run_id}", f"/v1/experiments/{shared}/export.csv"):  # fmt: skip
        assert client.get(path, headers=auth(token_b)).status_code == 200, path
    assert client.get(f"/v1/experiments/{private}", headers=auth(token_b)).status_code == 404
    # Nobody changes or cancels what is not theirs: 403 naming the owner.
    for method, path, body in (
        ("POST", f"/v1/experiments/{shared}/cancel", None),
        ("PATCH", f"/v1/experiments/{shared}", {"notes": "mine now"}),
        ("PUT", f"/v1/experiments/{shared}/shares", {"public": True}),
        ("GET", f"/v1/experiments/{shared}/shares", None),
    ):
        refused = client.request(method, path, json=body, headers=auth(token_b))
        assert refused.status_code == 403, (method, path, refused.text)
        assert f"belongs to team {team_a}" in refused.json()["message"]
    # But B may pin it and run it again into its own team.
    assert client.put(f"/v1/experiments/{shared}/pin", headers=auth(token_b)).status_code == 204
    assert listing(client, token_b)["items"][0]["pinned"] is True
    assert listing(client, token_a)["items"][0]["pinned"] is False  # pins are per team
    again = client.post(f"/v1/experiments/{shared}/rerun", headers=auth(token_b))
    assert again.status_code == 201, again.text
    rerun = client.get(again.headers["location"], headers=auth(token_b)).json()
    assert rerun["team"] == team_b and rerun["source_experiment_id"] == shared
    assert client.get(f"/v1/experiments/{again.json()['id']}",
                      headers=auth(token_a)).status_code == 404  # fmt: skip

    # Public: team C sees it marked public; unsharing takes it away from both.
    assert client.get(f"/v1/experiments/{shared}", headers=auth(token_c)).status_code == 404
    both = {"teams": [team_b], "public": True}
    public = client.put(f"/v1/experiments/{shared}/shares", json=both, headers=auth(token_a))
    assert public.json() == {"public": True, "teams": [team_b]}
    seen_c = listing(client, token_c)
    assert names(seen_c) == ["a-shared"] and seen_c["items"][0]["access"] == "public"
    assert listing(client, token_b, access="public")["total"] == 0  # B's is shared by name
    assert client.get(f"/v1/experiments/{shared}/shares",
                      headers=auth(token_a)).json()["public"] is True  # fmt: skip
    client.put(f"/v1/experiments/{shared}/shares", json={}, headers=auth(token_a))
    assert listing(client, token_c)["total"] == 0
    # B keeps only its own rerun of it.
    assert [(e["name"], e["access"]) for e in listing(client, token_b)["items"]] == [
        ("a-shared", "own")]  # fmt: skip

    wrong = {"teams": ["nobody-" + unique, team_a]}
    bad = client.put(f"/v1/experiments/{shared}/shares", json=wrong, headers=auth(token_a))
    assert bad.status_code == 422
    assert [e["field"] for e in bad.json()["errors"]] == ["teams.0", "teams.1"], bad.json()


# --- running again -------------------------------------------------------------------------


def run_seeds(experiment_id: str) -> dict[tuple[int, int], int]:
    with session_scope() as session:
        runs = session.scalars(select(Run).where(Run.experiment_id == experiment_id)).all()
        return {(r.point_index, r.repetition): r.seed for r in runs}


def test_rerun_reproduces_the_seeds_and_applies_edits(client: TestClient, unique: str) -> None:
    _, token = new_team(unique, "rerun")
    body = matrix(["reno", "cubic"], ["0.5bdp", "2bdp"], 2)  # no seed: one is chosen
    source = submit(client, token, body)
    again = client.post(f"/v1/experiments/{source}/rerun", json={}, headers=auth(token))
    assert again.status_code == 201, again.text
    assert again.headers["location"] == f"/v1/experiments/{again.json()['id']}"
    assert again.json()["source_experiment_id"] == source
    assert run_seeds(again.json()["id"]) == run_seeds(source)
    detail = client.get(f"/v1/experiments/{source}", headers=auth(token)).json()
    assert detail["reruns"] == [again.json()["id"]]

    edited = client.post(
        f"/v1/experiments/{source}/rerun",
        headers=auth(token),
        json={"edits": {"repetitions": 3, "base": {"duration": "7s"}, "name": "buffers-longer"}},
    )
    assert edited.status_code == 201, edited.text
    new = client.get(f"/v1/experiments/{edited.json()['id']}", headers=auth(token)).json()
    assert new["name"] == "buffers-longer" and new["run_count"] == 12
    assert new["submission"]["base"]["duration"] == 7.0
    seeds = run_seeds(new["id"])
    assert {k: v for k, v in seeds.items() if k[1] < 2} == run_seeds(source)
    fresh = client.post(f"/v1/experiments/{source}/rerun", json={"edits": {"seed": None}},
                        headers=auth(token))  # fmt: skip
    assert run_seeds(fresh.json()["id"]) != run_seeds(source)

    bad = client.post(f"/v1/experiments/{source}/rerun", headers=auth(token),
                      json={"edits": {"base": {"duration": "20"}}})  # fmt: skip
    assert bad.status_code == 422, bad.text
    assert bad.json()["errors"][0]["field"] == "base.duration"
    assert "no unit" in bad.json()["errors"][0]["reason"]
    # An experiment without seeds in its stored submission (stored before they were kept)
    # runs again with its run's seed.
    single = submit(client, token, spec("single"))
    with session_scope() as session:
        row = session.get(Experiment, single)
        assert row is not None
        row.submission = {k: v for k, v in row.submission.items() if k != "seed"}
    once = client.post(f"/v1/experiments/{single}/rerun", headers=auth(token))
    assert list(run_seeds(once.json()["id"]).values()) == list(run_seeds(single).values())
    # Idempotency-Key: a retried rerun gives the first one's experiment.
    key = {"Idempotency-Key": f"rerun-{unique}"}
    first = client.post(f"/v1/experiments/{single}/rerun", headers={**auth(token), **key})
    retry = client.post(f"/v1/experiments/{single}/rerun", headers={**auth(token), **key})
    assert first.json()["id"] == retry.json()["id"]
    assert retry.headers["idempotent-replayed"] == "true"


# --- comparisons across experiments --------------------------------------------------------


def test_compare_across_experiments_and_teams(client: TestClient, unique: str) -> None:
    team_a, token_a = new_team(unique, "ca")
    _, token_b = new_team(unique, "cb")
    sweep = matrix(["reno"], ["0.5bdp", "1bdp", "2bdp"], 3)
    sweep["name"] = "sweep"
    a = submit(client, token_a, sweep)
    utilization = {"0.5bdp": [0.5, 0.6, 0.7], "1bdp": [0.9, 0.9, 0.9], "2bdp": [1.0, 0.98, 0.96]}
    finish_runs_with(a, lambda run: utilization[run.axis_values[
        "topology.bottleneck.buffer"]][run.repetition])  # fmt: skip
    single = spec("single-1bdp")
    single["topology"]["bottleneck"]["buffer"] = "1bdp"
    b = submit(client, token_b, single)
    finish_runs_with(b, lambda run: 0.8)
    client.put(f"/v1/experiments/{a}/shares", json={"teams": [f"cb-{unique}"]},
               headers=auth(token_a))  # fmt: skip

    response = client.get(
        "/v1/compare",
        headers=auth(token_b),
        params={
            "experiment": [a[:8], b],
            "metric": "utilization",
            "x": "topology.bottleneck.buffer",
        },
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["by"] == "experiment" and result["unit"] == "1"
    assert [(e["name"], e["access"], e["runs"]) for e in result["experiments"]] == [
        ("sweep", "shared", 9), ("single-1bdp", "own", 1)]  # fmt: skip
    series = {s["label"]: s for s in result["series"]}
    points = {p["label"]: p for p in series[f"sweep ({a[:8]})"]["points"]}
    assert points["0.5bdp"]["median"] == pytest.approx(0.6) and points["0.5bdp"]["n"] == 3
    assert points["0.5bdp"]["siqr"] == pytest.approx(0.05)
    assert points["2bdp"]["median"] == pytest.approx(0.98)
    assert [p["label"] for p in series[f"single-1bdp ({b[:8]})"]["points"]] == ["1bdp"]
    assert result["permalink"].startswith("/ui/compare?experiment=" + a)

    # A quantity on x: numeric order, shown with its unit; matrix points picked one by one.
    b_run = client.get(f"/v1/experiments/{b}", headers=auth(token_b)).json()["runs"][0]["id"]
    by_delay = client.get("/v1/compare", headers=auth(token_b), params={
        "point": [f"{a}:0"], "run": [b_run], "metric": "utilization",
        "x": "topology.bottleneck.delay", "by": ""}).json()  # fmt: skip
    assert by_delay["x_unit"] == "s"
    [all_runs] = by_delay["series"]
    assert [(p["label"], p["n"]) for p in all_runs["points"]] == [("20 ms", 3 + 1)]
    # Per flow: each flow's own algorithm, one series per flow index.
    flows = client.get("/v1/compare", headers=auth(token_b), params={
        "experiment": [b], "metric": "goodput_bps", "scope": "flow", "x": "flows[*].algorithm",
        "by": "flow"}).json()  # fmt: skip
    assert [(s["label"], [p["label"] for p in s["points"]]) for s in flows["series"]] == [
        ("0", ["reno"])]  # finish_runs_with stores flow 0 only  # fmt: skip
    assert flows["series"][0]["points"][0]["median"] == 5e6

    for params, status, field in (
        ({"experiment": [a], "metric": "utilisation", "x": "experiment"}, 422, "metric"),
        ({"experiment": [a], "metric": "utilization", "x": "flow"}, 422, "x"),
        ({"experiment": [a], "metric": "goodput_bps", "x": "experiment"}, 200, None),
        ({"metric": "utilization", "x": "experiment"}, 422, "experiment"),
        ({"point": ["nonsense"], "metric": "utilization", "x": "experiment"}, 422, "point.0"),
        ({"experiment": ["0" * 32], "metric": "utilization", "x": "experiment"}, 404, None),
    ):
        got = client.get("/v1/compare", params=params, headers=auth(token_b))
        assert got.status_code == status, (params, got.text)
        if field:
            assert got.json()["errors"][0]["field"] == field
    # Team A's private experiments stay invisible to B's comparisons.
    private = submit(client, token_a, spec("private"))
    hidden = client.get(
        "/v1/compare",
        headers=auth(token_b),
        params={"experiment": [private], "metric": "utilization", "x": "experiment"},
    )
    assert hidden.status_code == 404 and team_a not in hidden.text


# --- run bundles ---------------------------------------------------------------------------


def write_run_files(run_id: str, files: dict[str, bytes]) -> None:
    directory = get_settings().runs_dir / run_id / "attempt-1"
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    with session_scope() as session:
        session.execute(update(Run).where(Run.id == run_id).values(attempt=1))


def test_run_bundle_has_everything_with_checksums(client: TestClient, unique: str) -> None:
    _, token = new_team(unique, "bundle")
    experiment_id = submit(client, token, spec("bundled"))
    finish_runs_with(experiment_id, lambda run: 0.9)
    run_id = client.get(f"/v1/experiments/{experiment_id}",
                        headers=auth(token)).json()["runs"][0]["id"]  # fmt: skip
    big = bytes(range(256)) * 12_000  # 3 MB: more than one chunk
    write_run_files(run_id, {"sandbox.log": b"started\ndone\n", "link-0-data.bin": big,
                             "flow-0.send.jsonl": b'{"type":"summary"}\n'})  # fmt: skip
    response = client.get(f"/v1/runs/{run_id[:10]}/bundle", headers=auth(token))
    assert response.status_code == 200 and response.headers["content-type"] == "application/gzip"
    assert f'filename="ccbench-run-{run_id}.tar.gz"' in response.headers["content-disposition"]
    members = extract(response.content)
    root = f"ccbench-run-{run_id}"
    expected = {"run.json", "spec.json", "submission.json", "provenance.json",
                "series/flow-0.tcp_info.json", "files/sandbox.log", "files/link-0-data.bin",
                "files/flow-0.send.jsonl", "SHA256SUMS"}  # fmt: skip
    assert set(members) == {f"{root}/{m}" for m in expected}
    assert members[f"{root}/files/link-0-data.bin"] == big
    sums = dict(line.split("  ")[::-1] for line in members[f"{root}/SHA256SUMS"].decode()
                .splitlines())  # fmt: skip
    assert set(sums) == expected - {"SHA256SUMS"}
    for name, digest in sums.items():
        assert hashlib.sha256(members[f"{root}/{name}"]).hexdigest() == digest, name
    run = json.loads(members[f"{root}/run.json"])
    assert run["id"] == run_id and run["experiment"]["name"] == "bundled"
    assert run["aggregate"]["aggregate"]["utilization"] == 0.9
    submission = json.loads(members[f"{root}/submission.json"])
    assert submission["topology"]["bottleneck"]["delay"] == "0.02s" and submission["seed"]
    # The submission in the bundle is a submission the API takes again.
    assert client.post("/v1/experiments", json=submission, headers=auth(token)).status_code == 201
    assert client.get("/v1/runs/" + "f" * 32 + "/bundle", headers=auth(token)).status_code == 404


def extract(data: bytes) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            assert handle is not None
            out[member.name] = handle.read()
    return out


# --- documented errors ---------------------------------------------------------------------

ERROR_FIELDS = {"error", "message"}


def test_every_new_endpoint_documents_the_errors_it_answers(
    client: TestClient, unique: str
) -> None:
    """Each new endpoint answers 401, 403, 404, 409 and 422 where they apply, and each such
    answer is documented for that operation with the API's error body."""
    team_a, admin_a = new_team(unique, "docs-a")
    _, admin_b = new_team(unique, "docs-b")
    read_a = token_of(team_a, Scope.read)
    own = submit(client, admin_a, EXAMPLE)
    run_id = client.get(f"/v1/experiments/{own}", headers=auth(admin_a)).json()["runs"][0]["id"]
    client.post(f"/v1/experiments/{own}/cancel", headers=auth(admin_a))
    missing = "0" * 32
    document = client.get("/openapi.json").json()
    Case = tuple[str, str, dict[str, Any] | None, str | None, int]
    cases: list[Case] = []
    for method, path, body in (
        ("GET", "/v1/experiments/{id}", None),
        ("PATCH", "/v1/experiments/{id}", {"notes": "n"}),
        ("PUT", "/v1/experiments/{id}/pin", None),
        ("DELETE", "/v1/experiments/{id}/pin", None),
        ("GET", "/v1/experiments/{id}/shares", None),
        ("PUT", "/v1/experiments/{id}/shares", {"public": False}),
        ("POST", "/v1/experiments/{id}/rerun", {}),
        ("GET", "/v1/runs/{run}/bundle", None),
    ):
        cases.append((method, path, body, None, 401))
        cases.append((method, path.replace("{id}", missing).replace("{run}", missing), body,
                      admin_a, 404))  # fmt: skip
        if method != "GET" or "shares" in path:
            cases.append((method, path, body, read_a if method != "GET" else admin_b,
                          403 if method != "GET" else 404))  # fmt: skip
    cases += [
        ("PATCH", "/v1/experiments/{id}", {"tags": [""]}, admin_a, 422),
        ("PUT", "/v1/experiments/{id}/shares", {"teams": ["?"]}, admin_a, 422),
        ("POST", "/v1/experiments/{id}/rerun", {"edits": {"duration": "1"}}, admin_a, 422),
        ("GET", "/v1/experiments/{id}/shares", None, admin_b, 404),
        ("PUT", "/v1/experiments/{id}/pin", None, admin_b, 404),
        ("POST", "/v1/experiments/{id}/cancel", None, admin_a, 409),
        ("GET", "/v1/compare?metric=utilization&x=experiment&experiment={id}", None, None, 401),
        ("GET", "/v1/compare?metric=nope&x=experiment&experiment={id}", None, admin_a, 422),
        (
            "GET",
            f"/v1/compare?metric=utilization&x=experiment&experiment={missing}",
            None,
            admin_a,
            404,
        ),  # fmt: skip
        ("GET", "/v1/experiments?sort=colour", None, admin_a, 422),
        ("POST", "/v1/tokens", {"name": "x"}, read_a, 403),
    ]
    seen = set()
    for method, path, body, token, status in cases:
        url = path.replace("{id}", own).replace("{run}", run_id)
        response = client.request(method, url, json=body, headers=auth(token) if token else {})
        assert response.status_code == status, (method, url, response.text)
        assert set(response.json()) >= ERROR_FIELDS, response.text
        validate(response.json())
        template = (
            path.split("?")[0].replace("{id}", "{experiment_id}").replace("{run}", "{run_id}")
        )
        template = template.replace(missing, "{run_id}" if "/runs/" in path else "{experiment_id}")
        documented = document["paths"][template][method.lower()]["responses"]
        assert str(status) in documented, (method, template, status)
        schema = documented[str(status)]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (template, status, schema)
        seen.add(status)
    assert seen == {401, 403, 404, 409, 422}


def validate(body: dict[str, Any]) -> None:
    """The body is the API's one error shape (api/errors.py ErrorBody), nothing else."""
    ErrorBody.model_validate(body)
    assert set(body) <= set(ErrorBody.model_fields), body
