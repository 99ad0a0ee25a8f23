"""wallet modes: where each start of the server kept the balances, so the command line knows where they live now

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 11:00:00

``twentyone admin credit`` and ``debit`` refuse where an operator's wallet keeps the balances, and
knew it from ``TWENTYONE_OPERATOR_WALLET`` in their environment or from any call to such a wallet in
the database (``wallet_calls``). Those calls stay: once a server on the database had ever used an
operator's wallet, the built-in ledger's credit was refused for good, even after the operator went
back to it. Each start of the server now appends a row here where it keeps the balances elsewhere
than the latest row says (``built-in`` or ``operator``, the wallet's name, when), and the command
line goes by the latest.

A database with calls to an operator's wallet gets a first row, ``operator``, naming no wallet:
what the command line read from those calls until now, until the server's next start records
its own. One with none gets no row, and the command line keeps its old signs until a start.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    modes = op.create_table(
        'wallet_modes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('mode', sa.String(length=16), nullable=False),
        sa.Column('wallet', sa.String(length=255), nullable=True),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    if op.get_bind().execute(sa.text("SELECT id FROM wallet_calls LIMIT 1")).first() is not None:
        op.bulk_insert(modes, [{"mode": "operator", "wallet": None, "started_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.drop_table('wallet_modes')
