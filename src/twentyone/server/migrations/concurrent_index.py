"""Building an index on a live PostgreSQL floor: ``CONCURRENTLY``, and safe to start again after a crash.

Used by the revisions that add an index to a table that grows with every round (0009, 0010).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

# The drop and the build each wait for every older transaction. One that never ends (a process of the previous
# version waiting for the migration lock inside its statement) must fail this start, to be tried again at the next,
# not hang it.
LOCK_TIMEOUT = '60s'
INVALID = text("SELECT 1 FROM pg_index JOIN pg_class ON pg_class.oid = pg_index.indexrelid "
               "WHERE pg_class.relname = :name AND pg_class.relnamespace = current_schema()::regnamespace "
               "AND NOT pg_index.indisvalid")


def build_concurrently(name: str, table: str, columns: Sequence[str], replaces: str | None = None) -> None:
    """Build the index ``name`` on ``table`` without holding its writes, then drop the index it ``replaces``.

    A plain ``CREATE INDEX`` would hold every write to the table until it finished: an
    operator upgrading a live floor keeps taking bets while this one builds. It runs
    outside a transaction, so a crash can leave any part of it done with the revision
    unrecorded, and the next start runs it again: a build that failed half-way left an
    invalid index of this name, which is dropped and built anew; one that finished is
    valid and kept (a rebuild would read the whole table again); a replaced index already
    dropped is not dropped twice.
    """
    with op.get_context().autocommit_block():
        op.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        if op.get_bind().execute(INVALID, {"name": name}).first():
            op.drop_index(name, table_name=table, postgresql_concurrently=True)
        op.create_index(name, table, list(columns), postgresql_concurrently=True, if_not_exists=True)
        if replaces:
            op.drop_index(replaces, table_name=table, postgresql_concurrently=True, if_exists=True)
        op.execute("RESET lock_timeout")
