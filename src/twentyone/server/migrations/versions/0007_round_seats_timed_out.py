"""round seats count the decisions the timer took for their player

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 22:50:00

When a player lets the decision clock run out, the server stands (or declines the offer)
for them. The round's log says so (``round_actions.source`` is ``timeout``), but nothing
told the player: their round view and history now carry ``timed_out``, read from their
seat's row with the rest of it rather than by a walk of the round's log. Rounds already
played get the count from their log.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('round_seats', sa.Column('timed_out', sa.Integer(), nullable=False, server_default='0'))
    op.execute(sa.text("UPDATE round_seats SET timed_out = (SELECT count(*) FROM round_actions "
                       "WHERE round_actions.round_id = round_seats.round_id "
                       "AND round_actions.player_id = round_seats.player_id AND round_actions.source = 'timeout')"))


def downgrade() -> None:
    with op.batch_alter_table('round_seats') as batch:
        batch.drop_column('timed_out')
