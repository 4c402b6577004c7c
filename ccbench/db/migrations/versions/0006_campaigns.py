"""campaigns, occurrences, host reservations

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column(
            "spec",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("next_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fired", sa.Integer(), nullable=False),
        sa.Column("missed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_campaigns_team_id_teams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_campaigns_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_campaigns_next_due_at"), ["next_due_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_campaigns_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_campaigns_team_id"), ["team_id"], unique=False)

    op.create_table(
        "campaign_occurrences",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("campaign_id", sa.String(length=32), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_campaign_occurrences_campaign_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_occurrences")),
        sa.UniqueConstraint("campaign_id", "due_at", name="uq_campaign_occurrences_campaign_due"),
    )
    with op.batch_alter_table("campaign_occurrences", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_campaign_occurrences_campaign_id"), ["campaign_id"], unique=False
        )

    op.create_table(
        "host_reservations",
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("host", sa.String(length=63), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
            name=op.f("fk_host_reservations_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_host_reservations_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("team_id", "host", name=op.f("pk_host_reservations")),
    )
    with op.batch_alter_table("host_reservations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_host_reservations_run_id"), ["run_id"], unique=False)

    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("campaign_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("occurrence_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("path", sa.String(length=130), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_experiments_campaign_id"), ["campaign_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_experiments_occurrence_id"), ["occurrence_id"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_experiments_occurrence_id_campaign_occurrences"),
            "campaign_occurrences",
            ["occurrence_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_experiments_campaign_id_campaigns"),
            "campaigns",
            ["campaign_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_experiments_campaign_id_campaigns"), type_="foreignkey"
        )
        batch_op.drop_constraint(
            batch_op.f("fk_experiments_occurrence_id_campaign_occurrences"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_experiments_occurrence_id"))
        batch_op.drop_index(batch_op.f("ix_experiments_campaign_id"))
        batch_op.drop_column("path")
        batch_op.drop_column("occurrence_id")
        batch_op.drop_column("campaign_id")

    with op.batch_alter_table("host_reservations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_host_reservations_run_id"))

    op.drop_table("host_reservations")
    with op.batch_alter_table("campaign_occurrences", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_campaign_occurrences_campaign_id"))

    op.drop_table("campaign_occurrences")
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_campaigns_team_id"))
        batch_op.drop_index(batch_op.f("ix_campaigns_state"))
        batch_op.drop_index(batch_op.f("ix_campaigns_next_due_at"))
        batch_op.drop_index(batch_op.f("ix_campaigns_name"))

    op.drop_table("campaigns")
