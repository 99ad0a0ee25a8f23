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
dealt from yet (a table's published next shoe, a private player's next) gets the game its
table is configured with as this upgrade runs (shipped or the operator's) if it holds that
game's cards and cut card: its commitment, published before bets were placed on it, stays the
one dealt (a first version left these unlabelled, and the start replaced every one: review).
Any other keeps none, and the server's start finishes it (``Shoes.retire_unfit``). Finished
shoes are not read: they deal nothing again.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import sqlalchemy as sa
from alembic import op

from twentyone.server.config import shipped_tables
from twentyone.variants import VARIANTS, builtin_rules

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


_DEALT_UNFINISHED = ("SELECT rounds.shoe_id, rounds.variant FROM rounds "
                     "JOIN (SELECT shoe_id, MIN(id) AS first_id FROM rounds GROUP BY shoe_id) AS firsts "
                     "ON rounds.id = firsts.first_id "
                     "JOIN shoes ON shoes.id = rounds.shoe_id WHERE shoes.finished = :no")
_SET_VARIANT = sa.text("UPDATE shoes SET variant = :variant WHERE id = :shoe_id")
_FRESH = sa.text("SELECT id, table_id, cards, cut_card FROM shoes WHERE finished = :no AND variant IS NULL")
_BATCH = 5000


def upgrade() -> None:
    op.add_column('shoes', sa.Column('variant', sa.String(length=32), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(sa.text(_DEALT_UNFINISHED), {"no": False}).all()
    if rows:
        bind.execute(_SET_VARIANT, [{"shoe_id": shoe_id, "variant": variant} for shoe_id, variant in rows])
    configured = {table_id: table.variant for table_id, table in shipped_tables().items()}
    for table_id, spec in bind.execute(sa.text("SELECT id, spec FROM table_configs")):
        variant = _variant_of(spec)
        if variant is not None:
            configured[table_id] = variant
    labelled = []
    for shoe_id, table_id, cards, cut_card in bind.execute(_FRESH, {"no": False}):
        variant = configured.get(table_id)
        if variant is not None and _holds(variant, cut_card, cards):
            labelled.append({"shoe_id": shoe_id, "variant": variant})
    for start in range(0, len(labelled), _BATCH):
        bind.execute(_SET_VARIANT, labelled[start:start + _BATCH])


def _variant_of(spec: Any) -> str | None:
    """An operator's table's game from its stored definition (JSON text on SQLite), if it names a known one."""
    spec = json.loads(spec) if isinstance(spec, str) else spec
    variant = spec.get("variant") if isinstance(spec, dict) else None
    return variant if isinstance(variant, str) and variant in VARIANTS else None  # else a game no shoe fits


@cache
def _cards_of(variant: str) -> tuple[tuple[str, ...], int | None]:
    """The game's shoe as stored, sorted, and its cut card."""
    shoe = builtin_rules(variant).shoe
    return tuple(sorted(str(card) for card in shoe.composition.cards())), shoe.cut_card


def _holds(variant: str, cut_card: int | None, cards: str) -> bool:
    """Whether a shoe holds exactly the game's cards, with its cut card."""
    names, cut = _cards_of(variant)
    return cut_card == cut and tuple(sorted(cards.split())) == names


def downgrade() -> None:
    with op.batch_alter_table('shoes') as batch:
        batch.drop_column('variant')
