"""a round's seats found in seat order

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 22:30:00

A round view lists the first 48 seats in order (and counts the rest). With only an index on
``round_id``, a power round of a thousand seats read all of them, joined each to its player and
sorted them, for every view and every decision's answer. The index on (round_id, position)
reads the first 48 in order; it leads with ``round_id``, so every query that used the index it
replaces still finds its rows.
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


def downgrade() -> None:
    op.create_index('ix_round_seats_round_id', 'round_seats', ['round_id'])
    op.drop_index('ix_round_seats_round_position', table_name='round_seats')
