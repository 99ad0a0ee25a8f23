"""the ledger by account and time: a daily loss limit's sum reads today's rows, not the player's whole history

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 19:40:00

A player with a daily loss limit has every stake checked against what they lost since
midnight: the sum of their ledger rows of the day. Through the index on ``account_id``
alone, each check read every ledger row the player ever had, and a long-standing
player's bets cost more every day. The index on ``(account_id, created_at)`` takes the
day's rows as one range; it also serves every look-up by account the old one served
(its leading column), so it replaces it, and a ledger row still updates as many indexes.

On PostgreSQL both are built and dropped ``CONCURRENTLY``, outside a transaction, as in
0009: a live floor keeps taking bets while the index builds.
"""

from __future__ import annotations

from alembic import op

from twentyone.server.migrations.concurrent_index import build_concurrently

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

INDEX = 'ix_ledger_account_created'
REPLACED = 'ix_ledger_account_id'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        build_concurrently(INDEX, 'ledger', ['account_id', 'created_at'], replaces=REPLACED)
    else:
        # Each migration on SQLite is one transaction now (env.py); a start of an earlier version committed each DDL
        # statement alone, and one that crashed between these two left the new index behind: go on over it.
        op.create_index(INDEX, 'ledger', ['account_id', 'created_at'], if_not_exists=True)
        op.drop_index(REPLACED, table_name='ledger', if_exists=True)


def downgrade() -> None:
    op.create_index(REPLACED, 'ledger', ['account_id'])
    op.drop_index(INDEX, table_name='ledger')
