"""rounds by status and id: a page of one status, newest first, reads a page's rounds on PostgreSQL too

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 09:00:00

``GET /admin/rounds?status=void`` lists a status's rounds newest first. SQLite's index
on ``status`` holds each status's rounds in the order of their ids (the row id ends each
entry), so a page was read from the end of its status's range; PostgreSQL's holds them in
no such order, and its planner read the rounds newest first down to a page of the status,
or every round of the status: a page of a rare one read about 2,100 of 200,000 rounds.
The index on ``(status, id)`` holds that order on both, so each status's part of a page
is read newest first and no further than the page. It serves every look-up by status the
old one served (its leading column), so it replaces it: a round's change of status still
updates as many indexes.

On PostgreSQL it is built and the old one dropped ``CONCURRENTLY``, as in 0009 and 0010:
a live floor keeps taking bets while it builds.
"""

from __future__ import annotations

from alembic import op

from twentyone.server.migrations.concurrent_index import build_concurrently

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

INDEX = 'ix_rounds_status_id'
REPLACED = 'ix_rounds_status'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        build_concurrently(INDEX, 'rounds', ['status', 'id'], replaces=REPLACED)
    else:  # one transaction (env.py): nothing of it is left by a start that dies half-way
        op.create_index(INDEX, 'rounds', ['status', 'id'])
        op.drop_index(REPLACED, table_name='rounds')


def downgrade() -> None:
    op.create_index(REPLACED, 'rounds', ['status'])
    op.drop_index(INDEX, table_name='rounds')
