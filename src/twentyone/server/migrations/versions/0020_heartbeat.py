"""heartbeat: when a server process last served the floor, so that time no process answered is no player's

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 20:30:00

A player deciding while every server process was down (a crash, a deploy, the database away)
had their clock run on: after the restart the timer stood their hand at once, though no
request of theirs could have been answered. Each process's timers now write a beat here every
few seconds; a beat that finds the last one stale moves every open round's decision clock and
betting window on by the time the floor was down (``twentyone.server.downtime``).

Its one row is made here, without a beat: a floor that never beat has no downtime to count. A row
that is always there is locked by every beat, so two processes never both count the same downtime.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    heartbeat = op.create_table(
        'heartbeat',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('beat_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.bulk_insert(heartbeat, [{'id': 1, 'beat_at': None}])


def downgrade() -> None:
    op.drop_table('heartbeat')
