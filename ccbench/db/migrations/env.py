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
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Batch mode rebuilds a table it alters (copy, drop, rename). With foreign keys
            # enforced (ccbench.db.session turns them on) the drop cascades: migration 0007
            # deleted every run, flow result and tag. SQLite ignores this pragma inside a
            # transaction, so it is set before the migrations' transaction begins.
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                # SQLite cannot ALTER most things: batch mode recreates tables instead.
                render_as_batch=sqlite,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if dangling:  # say so now, not when a later delete trips over them
                        raise RuntimeError(f"migration left rows without their parent: {dangling}")
        finally:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
