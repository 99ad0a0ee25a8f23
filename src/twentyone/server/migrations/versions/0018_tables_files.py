"""tables files: the tables.toml each start served, so that every process on one database serves the same tables

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 22:30:00

Each process read ``tables.toml`` at its own start and served it for its life. Two processes on
one database could so serve two floors: a worker of ``serve --workers N`` that uvicorn restarted
after the operator edited the file dealt the new game at a table where the other workers dealt
the old, and each start's sweep finished the other's shoes. Each start now publishes its file
here (a row only where it differs from the latest), and every process serves the latest row's
tables, reading it again at each tick.

No row is made here: the first start of this version publishes its file.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'tables_files',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('tables', sa.JSON(), nullable=False),
        sa.Column('published_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )


def downgrade() -> None:
    op.drop_table('tables_files')
