"""a shoe's game: the one it was shuffled for, so that a table whose game changed deals no round from it

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06 19:00:00

A shoe knew its table, not its game. An operator who changed a shipped table's game in
``tables.toml`` and restarted had the new game dealt from the old game's shoe until that
shoe reached its cut card: single-deck rounds from 312 classic cards (found by review).

Each shoe now keeps the game it was shuffled for. A shoe still unfinished gets the game of
the first round dealt from it, the game it was shuffled for (a later round may have been of
the game the table was changed to, the defect itself: found by review). One no round has
dealt from keeps none: the server's start finishes it (``Shoes.retire_unfit``), and the next
round shuffles one of its own. Finished shoes are not read: they deal nothing again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


_DEALT_UNFINISHED = ("SELECT rounds.shoe_id, rounds.variant FROM rounds "
                     "JOIN (SELECT shoe_id, MIN(id) AS first_id FROM rounds GROUP BY shoe_id) AS firsts "
                     "ON rounds.id = firsts.first_id "
                     "JOIN shoes ON shoes.id = rounds.shoe_id WHERE shoes.finished = :no")
_SET_VARIANT = sa.text("UPDATE shoes SET variant = :variant WHERE id = :shoe_id")


def upgrade() -> None:
    op.add_column('shoes', sa.Column('variant', sa.String(length=32), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(sa.text(_DEALT_UNFINISHED), {"no": False}).all()
    if rows:
        bind.execute(_SET_VARIANT, [{"shoe_id": shoe_id, "variant": variant} for shoe_id, variant in rows])


def downgrade() -> None:
    with op.batch_alter_table('shoes') as batch:
        batch.drop_column('variant')
