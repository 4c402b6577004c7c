"""Alembic environment: the URL comes from the config set by ccbench.db.migrate."""

from alembic import context

from ccbench.db.models import Base
from ccbench.db.session import engine_for

config = context.config
url = config.get_main_option("sqlalchemy.url")
assert url, "ccbench.db.migrate sets sqlalchemy.url"


def run_migrations_online() -> None:
    engine = engine_for(url)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            # SQLite cannot ALTER most things: batch mode recreates tables instead.
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
