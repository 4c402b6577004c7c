"""Shared request plumbing: the database session. Services never commit; endpoints do."""

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends
from sqlalchemy.orm import Session

from ccbench.db.session import session_factory


def get_session() -> Iterator[Session]:
    session = session_factory()()
    try:
        yield session
    finally:
        session.rollback()  # whatever the endpoint did not commit is discarded
        session.close()


DbSession = Annotated[Session, Depends(get_session)]
