"""The API fuzzed from its own OpenAPI document (schemathesis): with a valid token, no request
reaches a 500 and every response matches what the document says — on PostgreSQL and on the
embedded SQLite database. Bounded (a fixed number of examples per operation) to fit CI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    allow_header_conformance,
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import app
from ccbench import teams
from ccbench.db.migrate import upgrade
from ccbench.db.session import session_scope
from ccbench.settings import get_settings

pytestmark = pytest.mark.services

# 15 in the suite (CI time), more in `make bench-chaos`.
EXAMPLES_PER_OPERATION = int(os.environ.get("CCBENCH_FUZZ_EXAMPLES", "15"))

schema = schemathesis.openapi.from_asgi("/openapi.json", app)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    allow_header_conformance,
]


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The test database (PostgreSQL), or a fresh embedded SQLite file."""
    saved = os.environ.get("CCBENCH_DATABASE_URL")
    if request.param == "sqlite":
        path = Path(tmp_path_factory.mktemp("fuzz")) / "fuzz.sqlite"
        os.environ["CCBENCH_DATABASE_URL"] = f"sqlite:///{path}"
        get_settings.cache_clear()
        upgrade(get_settings().effective_database_url)
    yield request.param
    if saved is None:
        os.environ.pop("CCBENCH_DATABASE_URL", None)
    else:
        os.environ["CCBENCH_DATABASE_URL"] = saved
    get_settings.cache_clear()


COUNTS = {"requests": 0, "server_errors": 0}


@pytest.fixture(scope="module", autouse=True)
def counted() -> Iterator[None]:
    """`make bench-chaos` reads the number of requests sent from CCBENCH_CHAOS_REPORT."""
    yield
    if path := os.environ.get("CCBENCH_CHAOS_REPORT"):
        with open(path, "a") as handle:
            handle.write(json.dumps({"test": "fuzz", **COUNTS}) + "\n")


@pytest.fixture(scope="module")
def token(database: str) -> str:
    with session_scope() as session:
        team = teams.create_team(session, f"fuzz-{database}-{os.getpid()}")
        return teams.create_token(session, team, "fuzz")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_conforms_to_its_schema(case: schemathesis.Case, token: str) -> None:
    # No 500, and every response (status, content type, headers, body) as documented, for
    # valid and invalid requests alike. Not checked: that every schema-valid request is
    # accepted (the models bound quantities further than JSON Schema can say, answering 422)
    # and that unknown query parameters are refused (they are ignored, as by most APIs).
    response = case.call(headers={"Authorization": f"Bearer {token}"})
    COUNTS["requests"] += 1
    COUNTS["server_errors"] += response.status_code >= 500
    case.validate_response(response, checks=CHECKS)
