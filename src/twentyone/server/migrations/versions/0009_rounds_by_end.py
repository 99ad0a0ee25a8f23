"""rounds by the time they ended: the operator's report for a period

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 02:45:00

``GET /admin/report?since=…&until=…`` counts the rounds that ended (settled or void)
in a period. Without an index on the time a round ended, each report read every round
the server had ever played, and the report for one day cost more every day. The index
leads with the status, which both of the report's queries name (settled, or ended:
settled or void), so that SQLite's planner takes it over the index on status alone.

On PostgreSQL the index is built ``CONCURRENTLY``, outside a transaction: an operator
upgrading a live floor keeps taking bets while it builds, where a plain ``CREATE
INDEX`` would hold every write to ``rounds`` until it finished.
"""

from __future__ import annotations

from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

INDEX = 'ix_rounds_status_settled_at'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        with op.get_context().autocommit_block():
            # A concurrent build that failed (a crash mid-way) leaves an invalid index of this name behind and
            # the revision unrecorded: drop it, so that the next start builds it again.
            op.drop_index(INDEX, table_name='rounds', postgresql_concurrently=True, if_exists=True)
            op.create_index(INDEX, 'rounds', ['status', 'settled_at'], postgresql_concurrently=True)
    else:
        op.create_index(INDEX, 'rounds', ['status', 'settled_at'])


def downgrade() -> None:
    op.drop_index(INDEX, table_name='rounds')
