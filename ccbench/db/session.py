"""Engine and session factory, one per database URL.

A forked process (Celery's prefork pool: a pool process killed mid-run is replaced by a fork of
the worker's main process, whose upkeep thread holds connections) must never use a connection
it inherited: two processes on one PostgreSQL connection interleave their messages and both
fail ("server closed the connection unexpectedly", "connection in transaction status INTRANS").
After a fork the child drops its inherited pool without closing it (SQLAlchemy's recipe,
`Engine.dispose(close=False)`) and opens its own connections."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from ccbench.settings import get_settings


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets the API read while a worker writes; foreign keys for ON DELETE CASCADE. The
    # wait for another writer's lock is the driver's `timeout` (engine_for).
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


@lru_cache
def engine_for(url: str) -> Engine:
    if url.startswith("sqlite"):
        db_path = url.split(":///", 1)[-1]
        if db_path and db_path != ":memory:":
            Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": get_settings().sqlite_busy_timeout_s})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    os.register_at_fork(after_in_child=lambda: engine.dispose(close=False))
    return engine


def get_engine() -> Engine:
    return engine_for(get_settings().effective_database_url)


def session_factory() -> sessionmaker[Session]:
    return sessionmaker(get_engine(), expire_on_commit=False)


@contextmanager
def session_scope() -> Iterator[Session]:
    """A session that commits on success and rolls back on error (workers, CLI)."""
    session = session_factory()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
