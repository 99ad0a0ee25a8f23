"""tables files given: whether a start was given its tables file, or served the shipped one

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 11:10:00

The latest start's tables are every process's (0018). A process restarted with its first command
line, one without ``--tables``, so put the shipped tables back on the whole floor, another
currency and other limits included, with a warning alone (an operator's trial). A start without
a file of its own now publishes the shipped tables only over shipped ones: where the latest
tables were a file given to a start, it serves those. Rows before this one are taken as shipped
(a start without a file replaces them, as it did).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('tables_files') as batch:
        batch.add_column(sa.Column('given', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('tables_files') as batch:
        batch.drop_column('given')
