"""operator-wallet calls given up by earlier versions are pending again: nothing is given up

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 11:00:00

Before 2026-12-03 the outbox marked a call ``failed`` after 20 refused attempts and never
sent it again, and every request's commit made an attempt: a credit (a player's win or
refund) could be given up within a second of an operator's outage. The server now never
gives up a call; it stays ``pending`` with its last error, retried at each tick of the
outbox's process, and listed at ``GET /admin/wallet/calls``. The calls earlier versions
gave up are pending again, so they are sent, or listed for the operator to reconcile.
Every call is idempotent by its ``tx_id``, so one the operator did apply is harmless.
"""

from __future__ import annotations

from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE wallet_calls SET status = 'pending' WHERE status = 'failed'")


def downgrade() -> None:
    pass  # which of the pending calls an earlier version had given up is not kept: they stay pending
