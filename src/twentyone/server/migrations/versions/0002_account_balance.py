"""a balance kept on each player's account

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 08:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('accounts', sa.Column('balance', sa.BigInteger(), nullable=False, server_default='0'))
    # Existing accounts start from their ledger: the record every balance is checked against.
    op.execute("UPDATE accounts SET balance = (SELECT COALESCE(SUM(amount), 0) FROM ledger "
               "WHERE ledger.account_id = accounts.id) WHERE owner <> 'house'")


def downgrade() -> None:
    with op.batch_alter_table('accounts') as batch:
        batch.drop_column('balance')
