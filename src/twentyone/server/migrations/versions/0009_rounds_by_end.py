"""rounds by the time they ended: the operator's report for a period

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 02:45:00

``GET /admin/report?since=…&until=…`` counts the rounds that ended (settled or void)
in a period. Without an index on the time a round ended, each report read every round
the server had ever played, and the report for one day cost more every day. The index
leads with the status, which the report's query names (ended: settled or void), so that
SQLite's planner takes it over the index on status alone. Rounds voided at the close of
their betting window had no end time; they get the window's close.

On PostgreSQL the index is built ``CONCURRENTLY`` (``concurrent_index``): an operator
upgrading a live floor keeps taking bets while it builds.
"""

from __future__ import annotations

from alembic import op

from twentyone.server.migrations.concurrent_index import build_concurrently

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

INDEX = 'ix_rounds_status_settled_at'


def upgrade() -> None:
    # A round voided when its betting closed with no seat able to cover its bets was left without an end time:
    # it ended when its window closed (or, had it none, when it was made).
    op.execute("UPDATE rounds SET settled_at = COALESCE(betting_closes_at, created_at) "
               "WHERE status = 'void' AND settled_at IS NULL")
    if op.get_bind().dialect.name == 'postgresql':
        build_concurrently(INDEX, 'rounds', ['status', 'settled_at'])
    else:
        op.create_index(INDEX, 'rounds', ['status', 'settled_at'])


def downgrade() -> None:
    op.drop_index(INDEX, table_name='rounds')
