"""each decision a row of its own

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 08:55:00

A round's decisions were one JSON list rewritten whole at every decision: at a power
table of a thousand players that is a thousand times the whole list. Now each decision
is appended as a row; existing lists are copied over.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        'round_actions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('round_id', sa.Integer(), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('player_id', sa.Integer(), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(['round_id'], ['rounds.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('round_id', 'seq'),
    )
    op.create_index(op.f('ix_round_actions_round_id'), 'round_actions', ['round_id'], unique=False)
    rows = []
    for round_id, actions in op.get_bind().execute(sa.text("SELECT id, actions FROM rounds")):
        entries = json.loads(actions) if isinstance(actions, str) else (actions or [])
        rows += [{"round_id": round_id, "seq": seq, "player_id": entry["player"], "action": entry["action"],
                  "source": entry.get("source", "player")} for seq, entry in enumerate(entries)]
    if rows:
        op.bulk_insert(table, rows)


def downgrade() -> None:
    op.drop_index(op.f('ix_round_actions_round_id'), table_name='round_actions')
    op.drop_table('round_actions')
