"""hosts: data address, pinned host key, install prefix

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("hosts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("data_address", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("host_key", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("install_prefix", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("hosts", schema=None) as batch_op:
        batch_op.drop_column("install_prefix")
        batch_op.drop_column("host_key")
        batch_op.drop_column("data_address")
