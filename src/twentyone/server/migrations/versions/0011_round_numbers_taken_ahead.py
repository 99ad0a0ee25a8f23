"""round numbers taken ahead on SQLite: a number a deal took is given to no other round

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 16:10:00

A deal at an operator's wallet sends its debit, which names the round, before the
transaction that writes the round begins (on SQLite that transaction holds the write lock
of the whole database, and the operator's answer took 20 ms and more). So the round's
number is taken first (``server/round_ids.py``). Without ``AUTOINCREMENT`` SQLite numbers a
new row one above the largest in the table: a row inserted without a number could take
one a deal had taken and not yet written. The table is rebuilt with ``AUTOINCREMENT``:
SQLite then counts in ``sqlite_sequence``, never below a number it committed, and a deal
takes its number by moving that count on in a transaction of its own. PostgreSQL's
sequence already never gives a number twice: nothing to do there.
"""

from __future__ import annotations

from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != 'sqlite':
        return
    # The migration's connection has SQLite's foreign keys off (its default), so the rows referring to rounds keep
    # their numbers through the copy, drop and rename; the count starts from the largest number copied.
    with op.batch_alter_table('rounds', recreate='always',
                              table_kwargs={'sqlite_autoincrement': autoincrement}):
        pass


def upgrade() -> None:
    _rebuild(True)


def downgrade() -> None:
    _rebuild(False)
