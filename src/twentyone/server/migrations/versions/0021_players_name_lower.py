"""players' names in lower case, indexed: a sign-in or a sign-up finds a name in any case without reading them all

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 23:30:00

A sign-up refuses a name that differs from a player's only in case, and a sign-in now takes a
name in any case (before, "Ann" was refused at sign-up as taken by "ann" and then told at sign-in
that her password was wrong: an integrator's trial). Both compare ``lower(name)``, which the
unique index on ``name`` does not serve: every sign-in typed in another case, and every guess at
a name that does not exist, read the whole table (found by review).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_players_name_lower', 'players', [sa.text('lower(name)')])


def downgrade() -> None:
    op.drop_index('ix_players_name_lower', table_name='players')
