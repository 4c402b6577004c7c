"""browsing: token scopes, grants, pins, notes, reruns, derived listing columns and facets

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25

Existing tokens keep what they could do (admin). Existing experiments get their derived
columns and facets from their runs (ccbench.browse, whose functions used here are pure).
"""

from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("scope", sa.String(length=8), nullable=False, server_default="admin")
        )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.alter_column("scope", server_default=None)

    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("notes", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("source_experiment_id", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("algorithms", sa.String(length=500), nullable=False, server_default="")
        )
        batch_op.add_column(
            sa.Column("testbed", sa.String(length=32), nullable=False, server_default="")
        )
        batch_op.add_column(
            sa.Column("status_counts", JSON, nullable=False, server_default=sa.text("'{}'"))
        )
        batch_op.add_column(
            sa.Column("summary", JSON, nullable=False, server_default=sa.text("'{}'"))
        )
        batch_op.create_index(
            batch_op.f("ix_experiments_source_experiment_id"), ["source_experiment_id"]
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_experiments_source_experiment_id_experiments"),
            "experiments",
            ["source_experiment_id"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        for column in ("notes", "algorithms", "testbed", "status_counts", "summary"):
            batch_op.alter_column(column, server_default=None)

    op.create_table(
        "experiment_facets",
        sa.Column("experiment_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_experiment_facets_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("experiment_id", "key", "value", name=op.f("pk_experiment_facets")),
    )
    op.create_index("ix_experiment_facets_key_value", "experiment_facets", ["key", "value"])

    op.create_table(
        "experiment_pins",
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("experiment_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_experiment_pins_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_experiment_pins_team_id_teams"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("team_id", "experiment_id", name=op.f("pk_experiment_pins")),
    )
    op.create_index(op.f("ix_experiment_pins_experiment_id"), "experiment_pins", ["experiment_id"])

    op.create_table(
        "grants",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("resource_kind", sa.String(length=16), nullable=False),
        sa.Column("resource_id", sa.String(length=32), nullable=False),
        sa.Column("owner_team_id", sa.String(length=32), nullable=False),
        sa.Column("grantee_team_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["grantee_team_id"],
            ["teams.id"],
            name=op.f("fk_grants_grantee_team_id_teams"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.ForeignKeyConstraint(
            ["owner_team_id"],
            ["teams.id"],
            name=op.f("fk_grants_owner_team_id_teams"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
        sa.UniqueConstraint(
            "resource_kind", "resource_id", "grantee_team_id", name="uq_grants_resource_grantee"
        ),
    )
    op.create_index(op.f("ix_grants_owner_team_id"), "grants", ["owner_team_id"])
    op.create_index("ix_grants_grantee", "grants", ["resource_kind", "grantee_team_id"])
    op.create_index(
        "uq_grants_resource_public",
        "grants",
        ["resource_kind", "resource_id"],
        unique=True,
        postgresql_where=sa.text("grantee_team_id IS NULL"),
        sqlite_where=sa.text("grantee_team_id IS NULL"),
    )
    _derive_existing()


def _derive_existing() -> None:
    """Derived columns and facets of the experiments stored before this revision."""
    from ccbench.analysis.metrics import median
    from ccbench.browse import AGGREGATE_METRICS, derive, listed_counts
    from ccbench.runstate import RunStatus

    bind = op.get_bind()
    experiments = sa.table("experiments", sa.column("id", sa.String), sa.column("algorithms"),
                           sa.column("testbed"), sa.column("status_counts", JSON),
                           sa.column("summary", JSON))  # fmt: skip
    runs = sa.table("runs", sa.column("experiment_id"), sa.column("status"),
                    sa.column("repetition"), sa.column("spec", JSON),
                    sa.column("aggregate", JSON))  # fmt: skip
    facets = sa.table("experiment_facets", sa.column("experiment_id"), sa.column("key"),
                      sa.column("value"))  # fmt: skip
    for (experiment_id,) in bind.execute(sa.select(experiments.c.id)).all():
        rows = bind.execute(
            sa.select(runs.c.status, runs.c.repetition, runs.c.spec, runs.c.aggregate).where(
                runs.c.experiment_id == experiment_id
            )
        ).all()
        derived = derive(spec for _, repetition, spec, _ in rows if repetition == 0)
        counts = Counter(RunStatus(status) for status, *_ in rows)
        done = [aggregate.get("aggregate") or {} for status, _, _, aggregate in rows
                if status == RunStatus.done.value and aggregate]  # fmt: skip
        summary: dict[str, Any] = {
            name: median([float(a[name]) for a in done if a.get(name) is not None])
            for name in AGGREGATE_METRICS
        } if done else {}  # fmt: skip
        bind.execute(
            experiments.update()
            .where(experiments.c.id == experiment_id)
            .values(
                algorithms=derived.algorithms,
                testbed=derived.testbed,
                status_counts=listed_counts(dict(counts)),
                summary=summary,
            )  # fmt: skip
        )
        rows_out = [{"experiment_id": experiment_id, "key": k, "value": v}
                    for k, v in sorted(derived.facets)]  # fmt: skip
        if rows_out:
            bind.execute(facets.insert(), rows_out)


def downgrade() -> None:
    op.drop_index("uq_grants_resource_public", table_name="grants")
    op.drop_index("ix_grants_grantee", table_name="grants")
    op.drop_index(op.f("ix_grants_owner_team_id"), table_name="grants")
    op.drop_table("grants")
    op.drop_index(op.f("ix_experiment_pins_experiment_id"), table_name="experiment_pins")
    op.drop_table("experiment_pins")
    op.drop_index("ix_experiment_facets_key_value", table_name="experiment_facets")
    op.drop_table("experiment_facets")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_experiments_source_experiment_id_experiments"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_experiments_source_experiment_id"))
        for column in ("summary", "status_counts", "testbed", "algorithms",
                       "source_experiment_id", "notes"):  # fmt: skip
            batch_op.drop_column(column)
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("scope")
