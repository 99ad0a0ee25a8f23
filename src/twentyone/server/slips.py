"""At the table before the deal: the bet controls of the sheets and what a player at the table sees."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from twentyone.core.betting import MAIN, BetSlipError
from twentyone.server.config import TableSpec
from twentyone.server.context import Caller, ServiceError, aware
from twentyone.server.direct import run
from twentyone.server.money import refusal
from twentyone.server.rounds import OPEN_OWN_ROUND_ID, Rounds, current_round, last_finished_round, refuse_second_round
from twentyone.server.tables import apply_control, bet_slip, find_slip, save_slip, slip_row, slip_view, table_json
from twentyone.server.views import loss_room, round_json_held, seat_of, without_new_stakes
from twentyone.server.wallet import WalletError, as_refusal

# How long after it settles a shared round is shown to those who watched it: the table's next refresh, which its
# settled event prompts, comes within a second or two; a page opened later sees the table as it is.
WATCHED_FOR = timedelta(seconds=60)


TAKING_BACK = ("undo", "clear")  # bet controls open to a player kept from play: they stake nothing


class Slips:
    """The bet controls and the table a player sees, through the round keeper's store, tables, shoes and wallet."""

    def __init__(self, rounds: Rounds) -> None:
        self.rounds = rounds

    def bet_control(self, caller: Caller, table_id: str, control: str, spot: int = 1, bet_type: str = MAIN,
                    chip: int | None = None) -> dict[str, Any]:
        """CHIP, place a chip (``bet``), UNDO, x2 (``double``), REBET, CLEAR: the sheet's bet controls."""
        table = self.rounds.tables.get(table_id)
        if caller.is_operator:
            raise ServiceError(403, "Only players can bet: the operator has no seat.")
        if control not in TAKING_BACK:  # bets taken back are no play: a slip left at the limit stayed stuck (a trial)
            self.rounds.accounts.may_bet(caller)  # known with the caller: no read of the player on each bet
        # An operator's wallet is asked for the balance before the transaction: not while it holds SQLite's write lock.
        deals = control == "rebet" and table.same_bet_deals
        with self.rounds.wallet.balance_known(caller.id, table.currency), self.rounds.store.write() as session:
            if deals:  # refused before the slip changes, as its deal would refuse it (found by a trial of an attacker:
                # a 409 that left the last round's bets on the slip)
                refuse_second_round(run(session, OPEN_OWN_ROUND_ID, {"table_id": table.id, "player_id": caller.id}))
            slip = slip_row(session, caller.id, table, self.rounds.clock)
            try:
                balance = self.rounds.wallet.balance(session, caller.id, table.currency)
            except WalletError as error:  # the operator's refusal or silence: a 409 or a 503, nothing changed
                raise as_refusal(error) from None
            state = bet_slip(slip, table, balance)
            before = state.total
            apply_control(slip, state, control, spot, bet_type, chip, table.currency)
            if state.total > before:
                refuse_past_loss_room(session, caller, table.currency, state.total, self.rounds.clock())
            slip.updated_at = self.rounds.clock()
            save_slip(session, slip)
            # The next shoe, and a table's first (a private table's: its player's), committed to before the deal. The
            # balance the control was checked against: a client shows it, so a credit made meanwhile shows at once.
            body = {"slip": slip_view(slip, state), "balance": balance,
                    "next_shoe": self.rounds.shoes.published(session, table, caller.id)}
            if not deals:
                return self.rounds.store.answer(session, body)
        return self.rounds.deal(caller, table_id)

    def table_state(self, caller: Caller, table_id: str) -> dict[str, Any]:
        """What a player at the table sees: the table, their slip and balance, the next shoe's commitment,
        the round in play, and, at a shared table between rounds, the last round for one who watched it. The balance
        is null where an operator's wallet refuses to give one in the table's currency (it holds the player in
        another); its silence is a 503."""
        table = self.rounds.tables.get(table_id)
        # An operator's wallet is asked once, before the read: a read made anew would ask it again (found by review).
        with nullcontext() if caller.is_operator else self.rounds.wallet.balance_known(caller.id, table.currency):
            return self.rounds.store.read_anew(lambda session: self._table_state(session, caller, table))

    def _table_state(self, session: Session, caller: Caller, table: TableSpec) -> dict[str, Any]:
        # None before a table's first bet control (a private table's: its player's), and after a void.
        shoe = self.rounds.shoes.next_published(session, table, caller.id)
        slip = find_slip(session, caller.id, table.id)
        balance: int | None
        try:
            balance = 0 if caller.is_operator else self.rounds.wallet.balance(session, caller.id, table.currency)
        except WalletError as error:
            if error.status == 503:  # the operator's wallet did not answer: a 503, nothing to show
                raise as_refusal(error) from None
            # It refused: it holds no balance of this player in the table's currency (one held in another). The table
            # is shown all the same, with no balance and no chip to bet, and a bet or a deal is refused in the
            # wallet's words. Before, the table was a 409 (found by an integrator's trial).
            balance = None
        current = current_round(session, table, caller.id)
        view = None
        now = self.rounds.clock()
        # What the daily loss limit leaves to stake today (null without one): said while betting, as a bet past it
        # is refused when placed; read once where the round in play is in the table's currency.
        room = loss_room(session, caller, table.currency, now)
        if current is not None:
            view = round_json_held(session, current, self.rounds.tables.of_round(current), caller.id, self.rounds.live)
            in_round = room if view["currency"] == table.currency else loss_room(session, caller, view["currency"], now)
            view = without_new_stakes(view, caller, now, in_round)
        watching = table.shared and (view is None or (view["status"] == "betting" and "me" not in view))
        return {"table": table_json(table), "balance": balance, "loss_room": room,
                "slip": slip_view(slip, bet_slip(slip, table, balance or 0)),
                "next_shoe": shoe, "round": view,
                "last_round": self._last_round_watched(session, table, caller) if watching else None}

    def _last_round_watched(self, session: Session, table: TableSpec, caller: Caller) -> dict[str, Any] | None:
        """A shared table's round that settled in the last :data:`WATCHED_FOR`, as this caller may see it, for
        one who had no seat in it; the caller (no round in play, nor one the viewer has joined) decides when.

        Everyone at the table watched it played, and it settles in the moment of its last decision, so a watcher
        would never see the dealer's hand or anyone's result. A player who had a seat reads their own round
        (``GET /rounds/{id}``); the shoe's proof stays theirs (``/verify``). A void round is not shown: its
        players are told by the ``void`` event, and the felt has nothing to show.
        """
        last = last_finished_round(session, table.id)
        settled_at = aware(last.settled_at) if last is not None else None
        if last is None or last.status != "settled" or settled_at is None \
                or settled_at < self.rounds.clock() - WATCHED_FOR:
            return None
        if seat_of(session, last.id, caller.id) is not None:
            return None
        watched = round_json_held(session, last, table, caller.id, self.rounds.live)
        watched.pop("revealed", None)
        return watched


def refuse_past_loss_room(session: Session, caller: Caller, currency: str, total: int, now: datetime) -> None:
    """Refuse a bet control that takes the slip past what ``caller``'s daily loss limit leaves to stake today: before,
    the slip took any bet and DEAL refused the whole of it (a trial of players). A 403, as the deal's refusal."""
    room = loss_room(session, caller, currency, now)
    if room is not None and total > room:
        words = "Your daily loss limit leaves {room} to stake today: these bets would stake {total}."
        raise refusal(BetSlipError(words, room=room, total=total), currency, status=403)
