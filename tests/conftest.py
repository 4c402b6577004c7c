"""Test harness: real PostgreSQL and Redis, started once per test session before collection
(the Celery app and settings read their URLs at import), stopped at the end.

Set CCBENCH_TEST_EXTERNAL_SERVICES=1 with CCBENCH_DATABASE_URL/CCBENCH_BROKER_URL to use
servers you started yourself."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import Services, start_services

_services: Services | None = None
_state_dir: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _services, _state_dir
    if hasattr(config, "workerinput"):
        return
    _state_dir = Path(tempfile.mkdtemp(prefix="ccbench-test-state-"))
    os.environ["CCBENCH_STATE_DIR"] = str(_state_dir)
    # Workers a test killed count as dead soon, so the next test's runs go to live ones.
    os.environ.setdefault("CCBENCH_WORKER_TIMEOUT_S", "5")
    if os.environ.get("CCBENCH_TEST_EXTERNAL_SERVICES") != "1":
        _services = start_services()
        os.environ["CCBENCH_DATABASE_URL"] = _services.database_url
        os.environ["CCBENCH_BROKER_URL"] = _services.redis_url
    from ccbench.db.migrate import upgrade
    from ccbench.settings import get_settings

    get_settings.cache_clear()
    upgrade(get_settings().effective_database_url)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _services is not None:
        _services.stop()
    if _state_dir is not None:
        shutil.rmtree(_state_dir, ignore_errors=True)


def is_root() -> bool:
    return os.geteuid() == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The deployment tests last: their tools (helm, compose-check) build from the Go module
    # proxy, which CI starts in the background at its beginning (.ci/run), beside the rest.
    items.sort(key=lambda item: item.nodeid.startswith("tests/deploy/"))
    if is_root():
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces, tc, NFQUEUE)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for names that tests create (teams, experiments)."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def team_token(unique: str) -> Iterator[tuple[str, str]]:
    """A fresh team and one of its API tokens: (team name, token)."""
    from ccbench import teams
    from ccbench.db.session import session_scope

    name = f"team-{unique}"
    with session_scope() as session:
        token = teams.create_token(session, teams.create_team(session, name), "test")
    yield name, token
