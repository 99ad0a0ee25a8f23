"""sign-in failures: the limit on guessing passwords, counted in the database

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 01:30:00

A sign-in could be tried without limit: a trial made 800 wrong guesses at one name in
20 s, and their password hashes slowed every player's requests. Each wrong password now
leaves a row (the name, lowercased, and the address) for fifteen minutes; past the limit
for the name or the address, a sign-in is refused (429) before any hash. One count for
every process, as the guests' (0008).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'sign_in_failures',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('failed_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_sign_in_failures_name_at', 'sign_in_failures', ['name', 'failed_at'])
    op.create_index('ix_sign_in_failures_address_at', 'sign_in_failures', ['address', 'failed_at'])
    op.create_index(op.f('ix_sign_in_failures_failed_at'), 'sign_in_failures', ['failed_at'])


def downgrade() -> None:
    op.drop_index(op.f('ix_sign_in_failures_failed_at'), table_name='sign_in_failures')
    op.drop_index('ix_sign_in_failures_address_at', table_name='sign_in_failures')
    op.drop_index('ix_sign_in_failures_name_at', table_name='sign_in_failures')
    op.drop_table('sign_in_failures')
