"""guest arrivals: the limit on new guests per address, counted in the database

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 00:50:00

Each server process counted the guests an address created in its own memory, so with
several processes behind a load balancer (or ``serve --workers N``) an address could
create N times the limit. Every guest created now leaves a row for a minute, and the
limit counts those rows: one count for all processes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'guest_arrivals',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('arrived_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_guest_arrivals_address_at', 'guest_arrivals', ['address', 'arrived_at'])
    op.create_index(op.f('ix_guest_arrivals_arrived_at'), 'guest_arrivals', ['arrived_at'])


def downgrade() -> None:
    op.drop_index(op.f('ix_guest_arrivals_arrived_at'), table_name='guest_arrivals')
    op.drop_index('ix_guest_arrivals_address_at', table_name='guest_arrivals')
    op.drop_table('guest_arrivals')
