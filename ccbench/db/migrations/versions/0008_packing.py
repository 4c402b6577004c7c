"""packing: runs beside each run, and re-runs after load spoiled its checks

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24

Existing runs ran one at a time per worker: runs_beside stays unknown (NULL) for them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("runs_beside", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("load_reruns", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("load_reruns")
        batch_op.drop_column("runs_beside")
