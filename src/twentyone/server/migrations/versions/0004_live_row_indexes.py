"""indexes that find a table's live rows without reading its history

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 14:30:00

The next round's shoe was looked up by table alone, so every deal read every shoe the
table had ever used (a private table leaves one finished shoe per round). A player's
open round was found the same way among every round of the table, a shared table's
slips by reading every slip, and a player's history page sorted all their rounds to
show ten. Each request cost more the longer the server ran. The composite indexes lead
with the same column as the ones they replace, so every query that used those still
finds its rows.
"""

from __future__ import annotations

from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_shoes_table_player_finished', 'shoes', ['table_id', 'player_id', 'finished'])
    op.drop_index('ix_shoes_table_id', table_name='shoes')
    op.create_index('ix_rounds_table_status', 'rounds', ['table_id', 'status'])
    op.drop_index('ix_rounds_table_id', table_name='rounds')
    op.create_index('ix_slips_table_id', 'slips', ['table_id'])
    op.create_index('ix_round_seats_player_round', 'round_seats', ['player_id', 'round_id'])
    op.drop_index('ix_round_seats_player_id', table_name='round_seats')


def downgrade() -> None:
    op.create_index('ix_round_seats_player_id', 'round_seats', ['player_id'])
    op.drop_index('ix_round_seats_player_round', table_name='round_seats')
    op.drop_index('ix_slips_table_id', table_name='slips')
    op.create_index('ix_rounds_table_id', 'rounds', ['table_id'])
    op.drop_index('ix_rounds_table_status', table_name='rounds')
    op.create_index('ix_shoes_table_id', 'shoes', ['table_id'])
    op.drop_index('ix_shoes_table_player_finished', table_name='shoes')
