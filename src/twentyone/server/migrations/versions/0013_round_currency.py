"""a round's currency: the one its stakes were taken in, whatever its table says later

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 06:00:00

A round had no currency of its own: its settlement, its voids, its view, history and the
operator's report all read its table's, as the table is configured now. An operator who
changed a table's currency and restarted had rounds staked in dollars paid in euros, and
every past round of the table reported in euros (found by a trial of an operator).

Each round now keeps the currency it was made in. Rounds already there get theirs from
what the database holds of their money, the most certain first: the currency of the
accounts their ledger rows moved (the built-in ledger), then of their calls to an
operator's wallet, then their table's as configured when this upgrade runs (the
shipped tables and the operator's), which is what they were read in until now. A round
none of these names (one with no money, at a table configured nowhere now) keeps none,
and is read in its table's currency where there is one.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

from twentyone.server.config import shipped_tables

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


# Each source read once, grouped by round, and written by primary key: a correlated look-up per round read the
# wallet's calls (no index on their round) once for every round, hours at a million rounds (found by review).
_LEDGER_CURRENCIES = ("SELECT ledger.round_id, MIN(accounts.currency) FROM ledger "
                      "JOIN accounts ON accounts.id = ledger.account_id WHERE ledger.round_id IS NOT NULL "
                      "GROUP BY ledger.round_id")
_CALL_CURRENCIES = ("SELECT round_id, MIN(currency) FROM wallet_calls WHERE round_id IS NOT NULL "
                    "GROUP BY round_id")
_SET_CURRENCY = sa.text("UPDATE rounds SET currency = :currency WHERE id = :round_id AND currency IS NULL")
_BATCH = 5000


def upgrade() -> None:
    op.add_column('rounds', sa.Column('currency', sa.String(length=3), nullable=True))
    bind = op.get_bind()
    for source in (_LEDGER_CURRENCIES, _CALL_CURRENCIES):
        rows = bind.execute(sa.text(source)).all()
        for start in range(0, len(rows), _BATCH):
            bind.execute(_SET_CURRENCY, [{"round_id": round_id, "currency": currency}
                                         for round_id, currency in rows[start:start + _BATCH]])
    configured = {table_id: table.currency for table_id, table in shipped_tables().items()}
    for table_id, spec in bind.execute(sa.text("SELECT id, spec FROM table_configs")):
        currency = _currency_of(spec)
        if currency is not None:
            configured[table_id] = currency
    for table_id, currency in configured.items():
        bind.execute(sa.text("UPDATE rounds SET currency = :currency WHERE table_id = :table_id "
                             "AND currency IS NULL"), {"currency": currency, "table_id": table_id})


def _currency_of(spec: Any) -> str | None:
    """An operator's table's currency, from its stored definition (JSON; text on SQLite)."""
    if isinstance(spec, str):
        spec = json.loads(spec)
    currency = spec.get('currency') if isinstance(spec, dict) else None
    return currency if isinstance(currency, str) else None


def downgrade() -> None:
    with op.batch_alter_table('rounds') as batch:
        batch.drop_column('currency')
