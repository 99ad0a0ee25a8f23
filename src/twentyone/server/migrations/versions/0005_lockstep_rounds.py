"""rounds record whether their common draw was played in lockstep

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 19:40:00

In a common draw (power) players now move in lockstep: common card k is dealt once every
player still deciding has chosen at step k. Rounds recorded before were played at each
player's own pace, and their decisions, replayed in lockstep, would be out of turn: they
keep ``lockstep`` false and replay as they were played (the same cards and money). A round
with no decision yet (taking bets, or dealt and waiting) is played on in lockstep, and every
round dealt from now on is written with ``lockstep`` true.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('rounds', sa.Column('lockstep', sa.Boolean(), nullable=False, server_default=sa.false()))
    # A round with no decision yet (still taking bets, or dealt and waiting) is played on in lockstep.
    op.execute(sa.text("UPDATE rounds SET lockstep = :on WHERE status IN ('betting', 'playing') AND NOT EXISTS "
                       "(SELECT 1 FROM round_actions WHERE round_actions.round_id = rounds.id)"
                       ).bindparams(on=True))


def downgrade() -> None:
    with op.batch_alter_table('rounds') as batch:
        batch.drop_column('lockstep')
