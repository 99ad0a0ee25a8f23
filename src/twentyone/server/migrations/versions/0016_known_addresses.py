"""known addresses: where each player signed in with their password, for the name-wide lock on guessing

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 17:00:00

Wrong passwords for one name spread over many addresses lock that name everywhere past a
limit (0012), so anyone with a dozen addresses could keep a player out. The player's own
addresses (where they signed in or signed up, lately) now stay open to them; guesses from
each address are still limited there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'known_addresses',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('player_id', sa.Integer(), nullable=False),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('last_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['player_id'], ['players.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('player_id', 'address'),
    )


def downgrade() -> None:
    op.drop_table('known_addresses')
