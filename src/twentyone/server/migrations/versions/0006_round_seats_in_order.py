"""a round's seats found in seat order, and a table's newest round of a status

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 22:30:00

A round view lists the first 48 seats in order (and counts the rest). With only an index on
``round_id``, a power round of a thousand seats read all of them, joined each to its player and
sorted them, for every view and every decision's answer. The index on (round_id, position)
reads the first 48 in order; it leads with ``round_id``, so every query that used the index it
replaces still finds its rows.

A shared table shows its last settled round to those who watched it: the newest round of the
table with that status. SQLite's index on (table_id, status) carries the row id, so the newest
is at the end of its range; PostgreSQL's does not, and would read every settled round of the
table. The index on (table_id, status, id) replaces it, for both.
"""

from __future__ import annotations

from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_round_seats_round_position', 'round_seats', ['round_id', 'position'])
    op.drop_index('ix_round_seats_round_id', table_name='round_seats')
    op.create_index('ix_rounds_table_status_id', 'rounds', ['table_id', 'status', 'id'])
    op.drop_index('ix_rounds_table_status', table_name='rounds')


def downgrade() -> None:
    op.create_index('ix_rounds_table_status', 'rounds', ['table_id', 'status'])
    op.drop_index('ix_rounds_table_status_id', table_name='rounds')
    op.create_index('ix_round_seats_round_id', 'round_seats', ['round_id'])
    op.drop_index('ix_round_seats_round_position', table_name='round_seats')
