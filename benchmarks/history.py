"""What a request costs as the server's history grows: CPU and statements per request, window by window.

A load run of a minute starts from an empty database, so it cannot show a query that
reads a table's history: that one gets slower for as long as the server runs. This
plays private classic rounds in process (the service's own calls, no HTTP, one at a
time), a few players at one table, and prints, for each window of rounds, the
milliseconds per request (wall clock, which includes PostgreSQL's own work), the CPU
milliseconds of this process, and the statements per request. Flat is right; a column that climbs is a query reading
history. At the end, the same figures over the whole run by request kind (bet, deal, action): where a change to
the request path shows first.

    .venv/bin/python benchmarks/history.py [--rounds 20000] [--window 2000] [--players 20] [--database URL]
        [--count-statements] [--round-trips]

On PostgreSQL, ``--round-trips`` also counts each request's round trips in libpq's trace
(``twentyone.server.roundtrips``): the trace costs CPU of its own, so leave it off when the CPU is what you measure,
and keep such runs to a few hundred rounds (psycopg leaves about 4.5 KB behind each time a connection's trace ends).

The players follow the load benchmark's strategy (``simple_strategy.py``), bet the table minimum,
and is credited again by the operator when the balance runs low.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simple_strategy import choose
from sqlalchemy import event

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.context import Caller
from twentyone.server.roundtrips import count, traced
from twentyone.server.service import GameService

TABLE = "classic"
OPERATOR = "history-benchmark-operator-token"


class Meter:
    """Wall and CPU seconds (this process: the database server's own work shows only in the wall time),
    requests and statements since the last reset; and, over the whole run, CPU and statements by request kind."""

    def __init__(self, service: GameService, count_on_postgresql: bool = False, trace: Path | None = None) -> None:
        self.statements = 0
        self.requests = 0
        self.cpu = self.wall = 0.0
        self.by_kind: dict[str, list[float]] = {}  # kind: [requests, CPU seconds, statements, round trips]
        self.trace = trace  # PostgreSQL: libpq's trace of the request's connections, read after each request
        engine = service.store.db.engine
        if engine.dialect.name == "sqlite":
            # SQLite's own trace, not SQLAlchemy's statement event: a listener on that event turns off the request
            # path's direct statements (server/direct.py), and this would measure the path the server does not take.
            event.listen(engine, "connect", lambda connection, _record: connection.set_trace_callback(self._traced))
            engine.dispose()  # connections made from here on are traced
            self.counted = True
        else:
            # psycopg has no trace of its own: only SQLAlchemy's event counts, and it turns the direct statements off.
            self.counted = count_on_postgresql
            if count_on_postgresql:
                event.listen(engine, "before_cursor_execute", self._statement)

    def _statement(self, *_args: Any) -> None:
        self.statements += 1

    def _traced(self, statement: str) -> None:
        # As SQLAlchemy's event counted (BEGIN and every statement, not a transaction's end), but for an executemany,
        # which SQLite traces once a row (a transfer's two ledger rows count two).
        if statement not in ("COMMIT", "ROLLBACK"):
            self.statements += 1

    def timed(self, call: Callable[[], Any], kind: str | Callable[[Any], str] = "request") -> Any:
        """``call()``, measured; ``kind`` names it, or names it from its answer."""
        if self.trace is not None:  # what ran between requests (the operator's credits) is not this request's
            self.trace.unlink(missing_ok=True)
        started, started_cpu, statements = time.perf_counter(), time.process_time(), self.statements
        answer = call()
        self.wall += time.perf_counter() - started
        cpu = time.process_time() - started_cpu
        self.cpu += cpu
        self.requests += 1
        totals = self.by_kind.setdefault(kind if isinstance(kind, str) else kind(answer), [0, 0.0, 0, 0])
        totals[0] += 1
        totals[1] += cpu
        totals[2] += self.statements - statements
        if self.trace is not None:  # every connection is back in the pool: its trace is written out
            totals[3] += count(self.trace)
            self.trace.unlink(missing_ok=True)
        return answer

    def reset(self) -> tuple[float, float, float]:
        figures = (1000 * self.wall / self.requests, 1000 * self.cpu / self.requests, self.statements / self.requests)
        self.statements = self.requests = 0
        self.cpu = self.wall = 0.0
        return figures


def play_round(service: GameService, player: Caller, meter: Meter, minimum: int) -> None:
    def once(name: str, call: Callable[[], Any], kind: str | Callable[[Any], str] | None = None) -> Any:
        return meter.timed(lambda: service.idempotent(player, uuid.uuid4().hex, name, 200, call)[1], kind or name)

    once("bet", lambda: service.bet_control(player, TABLE, "bet", 1, "main", minimum))
    view = once("deal", lambda: service.deal(player, TABLE))
    while view["status"] == "playing":
        round_id, action = view["id"], choose(view)
        view = once("action", lambda: service.act(player, round_id, action), _decision)  # noqa: B023 (called at once)


def _decision(view: dict[str, Any]) -> str:
    return "action" if view["status"] == "playing" else "settling"


def _count(statements: float, counted: bool) -> str:
    return f"{statements:.1f}" if counted else "not counted"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20000)
    parser.add_argument("--window", type=int, default=2000)
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--database", help="SQLAlchemy URL (default: a fresh SQLite file)")
    parser.add_argument("--count-statements", action="store_true",
                        help="on PostgreSQL, count statements by SQLAlchemy's event: that runs every statement through "
                             "SQLAlchemy's own path, so the CPU figures are that path's, not the server's")
    parser.add_argument("--round-trips", action="store_true",
                        help="on PostgreSQL, count each request's round trips in libpq's trace (which costs CPU)")
    args = parser.parse_args()
    if min(args.rounds, args.window, args.players) < 1:
        parser.error("--rounds, --window and --players are at least 1")
    if args.round_trips and not (args.database or "").startswith("postgresql"):
        parser.error("--round-trips counts round trips to PostgreSQL: give --database postgresql+psycopg://...")
    work = Path(tempfile.mkdtemp(prefix="twentyone-history-"))
    url = args.database or f"sqlite:///{work / 'history.db'}"
    app = create_app(Settings(url, work, OPERATOR), timers=False)
    service: GameService = app.state.service
    players = [service.guest(f"benchmark-{n}")[0] for n in range(args.players)]
    minimum = service.table(TABLE).limits["main"][0]
    meter = Meter(service, args.count_statements, work / "libpq.trace" if args.round_trips else None)
    tracing = traced(service.store.db.engine, meter.trace) if meter.trace is not None else contextlib.nullcontext()
    with tracing:
        play(args, service, players, meter, minimum)


def play(args: argparse.Namespace, service: GameService, players: list[Caller], meter: Meter, minimum: int) -> None:
    operator = service.authenticate(OPERATOR)
    table = service.table(TABLE)
    url = service.store.db.url
    print(f"{args.players} players at {TABLE!r}, {url}")
    print(f"{'rounds played':>14} {'ms per request':>15} {'ms CPU per request':>19} {'statements per request':>23}")
    for played in range(1, args.rounds + 1):
        player = players[played % len(players)]
        if service.profile(player)["balances"][table.currency] < 20 * minimum:
            service.credit(operator, player.name, table.currency, 1000 * minimum)
        play_round(service, player, meter, minimum)
        if played % args.window == 0:
            wall, cpu, statements = meter.reset()
            print(f"{played:>14,} {wall:>15.2f} {cpu:>19.2f} {_count(statements, meter.counted):>23}", flush=True)
    print(f"\n{'request kind':>14} {'requests':>15} {'ms CPU per request':>19} {'statements per request':>23}"
          f"{' round trips per request' if meter.trace else ''}")
    for kind, (requests, cpu_seconds, statements_run, round_trips) in meter.by_kind.items():
        print(f"{kind:>14} {int(requests):>15,} {1000 * cpu_seconds / requests:>19.2f} "
              f"{_count(statements_run / requests, meter.counted):>23}"
              f"{f' {round_trips / requests:>24.2f}' if meter.trace else ''}")


if __name__ == "__main__":
    main()
