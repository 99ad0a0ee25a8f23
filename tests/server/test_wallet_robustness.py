"""An operator's wallet that misbehaves as integrators' wallets do (found by an integrator's trial): a balance that is
not an amount, a bug raised from its code, a currency it does not hold, an outage at a close of betting. Each is
answered in the API's way (JSON, the wallet's words or a 503 with Retry-After), and nothing is changed by it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_operator_wallet import ContractWallet
from fastapi.testclient import TestClient
from server_helpers import OPERATOR, Clock, new_guest

from twentyone.core.money import MAX_AMOUNT
from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.service import GameService
from twentyone.server.wallet import UNUSABLE, WalletError, WalletTimeout


class OddWallet(ContractWallet):
    """A :class:`ContractWallet` whose balance answers ``odd(player, currency)`` when set: any value, or an error."""

    def __init__(self) -> None:
        super().__init__()
        self.odd: Callable[[str, str], Any] | None = None

    def balance(self, player: str, currency: str) -> int:
        if self.odd is not None:
            return self.odd(player, currency)  # type: ignore[no-any-return]
        return super().balance(player, currency)


@pytest.fixture
def wallet() -> OddWallet:
    return OddWallet()


@pytest.fixture
def http(settings: Settings, clock: Clock, wallet: OddWallet) -> Iterator[TestClient]:
    with TestClient(create_app(settings, operator_wallet=wallet, clock=clock, timers=False)) as client:
        yield client


@pytest.fixture
def service(http: TestClient) -> GameService:
    return http.app.state.service  # type: ignore[attr-defined,no-any-return]


def unavailable(answer: Any) -> None:
    """A 503 in the API's words: JSON ``detail``, ``Retry-After``."""
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/json" and answer.headers["Retry-After"]
    assert answer.json() == {"detail": UNUSABLE}


BAD_BALANCES = ["abc", None, "100000", 12.5, True, -5, 1e30, MAX_AMOUNT + 1, [100]]


def test_a_balance_that_is_no_amount_is_the_wallet_unavailable(
        http: TestClient, service: GameService, wallet: OddWallet, caplog: pytest.LogCaptureFixture) -> None:
    """A balance must be an int (not a bool) from 0 to MAX_AMOUNT. Anything else is logged, naming the wallet and what
    it answered, and answered as the wallet unavailable: a 503 with Retry-After at ``/me``, a table, a bet control, a
    deal; nothing changes. Before, ``"abc"`` and ``None`` failed later as a plain-text 500 (a TypeError that named no
    wallet), and ``12.5``, ``True``, ``-5`` and ``1e30`` reached ``/me``, ``1e30`` stored as a float in a seat's
    ``balance_before``."""
    guest = new_guest(http)
    guest.bet("classic", 500)
    slip = guest.get("/tables/classic").json()["slip"]
    with caplog.at_level(logging.ERROR, logger="twentyone.server"):
        for odd in BAD_BALANCES:
            wallet.odd = lambda _player, _currency, odd=odd: odd  # type: ignore[misc]
            for answer in (guest.get("/me"), guest.get("/tables/classic"), guest.get("/tables/multiplayer"),
                           guest.post("/tables/classic/bets", {"spot": 1, "type": "main", "chip": 500}),
                           guest.post("/tables/classic/deal")):
                unavailable(answer)
    # Logged at the first answer of each kind (and the 2nd, 4th...: a broken wallet answers every player so).
    logged = [record.getMessage() for record in caplog.records]
    assert all(".OddWallet answered balance('player:" in line for line in logged), logged
    for kind in ("str 'abc'", "NoneType None", "float 12.5", "bool True", "int -5", "float 1e+30", "list [100]",
                 f"int {MAX_AMOUNT + 1}"):
        assert any(f" with {kind}, not an int from 0 to {MAX_AMOUNT}: " in line for line in logged), kind
    wallet.odd = lambda _player, _currency: "{braces}"  # a log line is not a format string
    unavailable(guest.get("/me"))
    wallet.odd = None
    assert guest.get("/tables/classic").json()["slip"] == slip  # the refused bet and deal changed nothing
    assert guest.get("/me").json()["balances"]["USD"] == wallet.start
    assert wallet.calls == []  # nothing was debited


def test_a_wallet_balance_that_raises_a_bug_is_the_wallet_unavailable_and_logged_with_its_traceback(
        http: TestClient, wallet: OddWallet, caplog: pytest.LogCaptureFixture) -> None:
    """An exception the contract does not define (not a WalletError) from ``balance()``: logged with its traceback,
    and a 503 in JSON. Before, a plain-text 500, the connection dropped."""
    guest = new_guest(http)

    def broken(_player: str, _currency: str) -> int:
        raise RuntimeError("casino wallet bug in balance")

    wallet.odd = broken
    with caplog.at_level(logging.ERROR, logger="twentyone.server"):
        unavailable(guest.get("/me"))
        unavailable(guest.post("/tables/classic/bets", {"spot": 1, "type": "main", "chip": 500}))
    [first, *_] = [record for record in caplog.records if "OddWallet" in record.getMessage()]
    assert "raised RuntimeError" in first.getMessage() and first.exc_info is not None
    assert "casino wallet bug in balance" in str(first.exc_info[1])


def test_a_balance_of_a_whole_range_is_taken(http: TestClient, wallet: OddWallet) -> None:
    """0 and MAX_AMOUNT are balances; an int subclass is taken as the int it stands for."""
    guest = new_guest(http)
    for balance in (0, MAX_AMOUNT):
        wallet.odd = lambda _player, _currency, balance=balance: balance  # type: ignore[misc]
        assert guest.get("/me").json()["balances"]["USD"] == balance


def test_the_operators_words_still_come_through(http: TestClient, wallet: OddWallet) -> None:
    """A WalletError is the operator's refusal, answered in its words (unchanged by the checks above)."""
    guest = new_guest(http)

    def refused(_player: str, _currency: str) -> int:
        raise WalletError("Your account is closed.", 403)

    wallet.odd = refused
    answer = guest.post("/tables/classic/bets", {"spot": 1, "type": "main", "chip": 500})
    assert answer.status_code == 403 and answer.json() == {"detail": "Your account is closed."}


def held_in_euros(player: str, currency: str, wallet: ContractWallet) -> int:
    """A casino that holds each player in euros alone, and refuses the other currencies (409)."""
    if currency != "EUR":
        raise WalletError(f"Your casino account is held in EUR, not {currency}.")
    return ContractWallet.balance(wallet, player, currency)


def test_a_player_held_in_one_currency_sees_their_balance_and_the_tables(
        http: TestClient, wallet: OddWallet) -> None:
    """``/me`` and the operator's look at the player leave out the currencies the wallet refuses; a table in one of
    them is shown with a null balance and no chip to bet, and a bet or a deal there is refused in the wallet's words.
    Before, each answered 409, ``/me`` too, so the page could not learn who was signed in (an integrator's trial)."""
    guest = new_guest(http)
    wallet.odd = lambda player, currency: held_in_euros(player, currency, wallet)
    me = guest.get("/me")
    assert me.status_code == 200 and me.json()["balances"] == {"EUR": wallet.start}
    looked_at = http.get(f"/admin/players/{guest.name}", headers={"Authorization": f"Bearer {OPERATOR}"})
    assert looked_at.status_code == 200 and looked_at.json()["balances"] == {"EUR": wallet.start}
    for table in ("classic", "multiplayer"):  # USD, private and shared
        shown = guest.get(f"/tables/{table}")
        assert shown.status_code == 200, shown.json()
        assert shown.json()["balance"] is None and shown.json()["slip"]["enabled_chips"] == []
        for refused in (guest.post(f"/tables/{table}/bets", {"spot": 1, "type": "main", "chip": 500}),
                        guest.post(f"/tables/{table}/deal")):
            assert refused.status_code == 409 and refused.json() == {
                "detail": "Your casino account is held in EUR, not USD."}
    power = guest.get("/tables/power").json()  # EUR: played as ever
    assert power["balance"] == wallet.start and power["slip"]["enabled_chips"]
    assert guest.post("/tables/power/bets", {"spot": 1, "type": "main", "chip": 500}).status_code == 200
    assert guest.post("/tables/power/deal").json()["status"] == "betting"


def test_a_wallet_that_does_not_answer_in_one_currency_is_still_a_503(http: TestClient, wallet: OddWallet) -> None:
    """Left out means refused: a currency the wallet did not answer for is a 503, not a balance missing."""
    guest = new_guest(http)

    def silent_in_dollars(player: str, currency: str) -> int:
        if currency == "USD":
            raise WalletTimeout()
        return ContractWallet.balance(wallet, player, currency)

    wallet.odd = silent_in_dollars
    for answer in (guest.get("/me"), guest.get("/tables/classic"),
                   http.get(f"/admin/players/{guest.name}", headers={"Authorization": f"Bearer {OPERATOR}"})):
        assert answer.status_code == 503 and answer.headers["Retry-After"], answer.json()
        assert answer.json() == {"detail": "The wallet did not answer in time."}
    assert guest.get("/tables/power").json()["balance"] == wallet.start


def test_a_wallet_that_does_not_answer_is_waited_on_once_not_once_per_currency(
        http: TestClient, service: GameService, wallet: OddWallet) -> None:
    """``/me`` and the operator's look at a player ask the currencies in turn and stop at the first silence: a wallet
    that does not answer keeps the player waiting its time-outs once. Before, both asked all three currencies,
    each with its retries, before answering 503 (nine time-outs where three do)."""
    guest = new_guest(http)
    asked: list[str] = []

    def silent(_player: str, currency: str) -> int:
        asked.append(currency)
        raise WalletTimeout()

    wallet.odd = silent
    for look in (lambda: guest.get("/me"),
                 lambda: http.get(f"/admin/players/{guest.name}", headers={"Authorization": f"Bearer {OPERATOR}"})):
        answer = look()
        assert answer.status_code == 503 and answer.headers["Retry-After"], answer.json()
        assert asked == ["USD"] * service.wallet.remote.attempts  # the first currency, with its retries alone
        asked.clear()


def published(service: GameService, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The events the server publishes from now on (and still sends)."""
    heard: list[dict[str, Any]] = []
    publish = service.events.publish

    def heard_and_sent(table_id: str, event: dict[str, Any]) -> None:
        heard.append(event)
        publish(table_id, event)

    monkeypatch.setattr(service.events, "publish", heard_and_sent)
    return heard


@pytest.mark.parametrize(("down", "refused", "reason"), [
    (["ann", "bob"], [], "the operator's wallet could not be reached"),
    ([], ["ann", "bob"], "no seat could cover its bets"),
    (["ann"], ["bob"], "no seat could cover its bets or the operator's wallet could not be reached for it"),
])
def test_a_round_no_seat_of_which_could_be_staked_is_void_and_read_by_its_players(
        http: TestClient, service: GameService, clock: Clock, wallet: OddWallet, monkeypatch: pytest.MonkeyPatch,
        down: list[str], refused: list[str], reason: str) -> None:
    """Two players join a shared round (their DEAL answers its id), and when its betting closes the operator's wallet
    is down for them (every call times out) or refuses them: the round is void with a reason that tells an outage
    from refusals, each player reads it (void, its reason, nothing staked) and finds it in their history, and is told.
    Before, an outage was "no seat could cover its bets", and each player's own round was a 404 "There is no round N
    of yours." and missing from their history (its seats deleted), and neither the void nor the bets given back were
    told (found by an integrator's trial)."""
    players = {"ann": new_guest(http), "bob": new_guest(http)}
    joins = [player.post("/tables/multiplayer/deal") for player in players.values() if player.bet("multiplayer", 500)]
    [round_id] = {join.json()["id"] for join in joins}
    ids = {name: player.player_id() for name, player in players.items()}
    owners = {name: f"player:{player_id}" for name, player_id in ids.items()}

    def at_the_close(player: str, currency: str) -> int:
        if player in {owners[name] for name in down}:
            raise WalletTimeout("The casino's wallet is down.")
        if player in {owners[name] for name in refused}:
            raise WalletError("Your casino account is blocked.")
        return ContractWallet.balance(wallet, player, currency)

    wallet.odd = at_the_close
    heard = published(service, monkeypatch)
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    closed = http.post("/admin/tables/multiplayer/close-betting", headers={**operator, "Idempotency-Key": "close-1"})
    assert closed.status_code == 200 and closed.json()["round_id"] == round_id, closed.json()
    [listed] = http.get("/admin/rounds", headers=operator).json()["rounds"]
    assert (listed["id"], listed["status"], listed["void_reason"], listed["staked"]) == (round_id, "void", reason, 0)
    for name, player in players.items():
        view = player.get(f"/rounds/{round_id}")
        assert view.status_code == 200, view.json()
        assert (view.json()["status"], view.json()["void_reason"]) == ("void", reason)
        assert (view.json()["me"]["staked"], view.json()["me"]["returned"]) == (0, 0)
        # No card was dealt, and none is shown: replayed, the view dealt the cards the shoe holds for the next round.
        assert view.json()["hands"] == [] and view.json()["dealer"]["cards"] == []
        [entry] = player.get("/me/history").json()["rounds"]
        assert (entry["id"], entry["status"], entry["staked"], entry["void_reason"]) == (round_id, "void", 0, reason)
        assert entry["hands"] == [] and entry["dealer"]["cards"] == []
        [told] = [event for event in heard if event["type"] == "bets-returned" and event["player_id"] == ids[name]]
        words = "The casino's wallet is down." if name in down else "Your casino account is blocked."
        assert (told["round_id"], told["total"], told["reason"]) == (round_id, 500,
                                                                      f"Your bets sit this round out: {words}")
    assert {"type": "void", "round_id": round_id, "reason": reason} in heard
    assert [call for call in wallet.calls if call[0] == "debit"] == []  # nothing was taken


def test_a_seat_the_wallet_could_not_be_reached_for_sits_out_a_round_others_play(
        http: TestClient, service: GameService, clock: Clock, wallet: OddWallet,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One seat staked, one the wallet could not be reached for: the round is played by the first; the second leaves
    it (a round they had no hand in is not theirs to read: 404), and is told which round their bets sat out."""
    ann, bob = new_guest(http), new_guest(http)
    for player in (ann, bob):
        player.bet("multiplayer", 500)
        round_id = player.post("/tables/multiplayer/deal").json()["id"]
    bob_id = bob.player_id()
    bobs = f"player:{bob_id}"

    def bob_unreachable(player: str, currency: str) -> int:
        if player == bobs:
            raise WalletTimeout()
        return ContractWallet.balance(wallet, player, currency)

    wallet.odd = bob_unreachable
    heard = published(service, monkeypatch)
    assert service.close_betting("multiplayer") == round_id
    assert ann.get(f"/rounds/{round_id}").json()["me"]["staked"] == 500
    assert bob.get(f"/rounds/{round_id}").status_code == 404
    [told] = [event for event in heard if event["type"] == "bets-returned"]
    assert (told["player_id"], told["round_id"], told["total"]) == (bob_id, round_id, 500)
    assert not [event for event in heard if event["type"] == "void"]


def test_debits_unanswered_at_the_close_void_the_round_as_an_outage_and_are_rolled_back(
        http: TestClient, service: GameService, wallet: OddWallet) -> None:
    """The wallet gives the balances, then takes each debit and loses its answer at every attempt (it went down
    meanwhile): the round is void for an outage, its players read it, and the debits it may have taken are rolled
    back, so each holds what they held."""
    ann, bob = new_guest(http), new_guest(http)
    for player in (ann, bob):
        player.bet("multiplayer", 500)
        round_id = player.post("/tables/multiplayer/deal").json()["id"]
    owners = {f"player:{player.player_id()}" for player in (ann, bob)}
    wallet.unanswered |= owners
    assert service.close_betting("multiplayer") == round_id
    wallet.unanswered.clear()
    for player in (ann, bob):
        view = player.get(f"/rounds/{round_id}").json()
        assert (view["status"], view["void_reason"], view["me"]["staked"]) == (
            "void", "the operator's wallet could not be reached", 0)
    assert len(wallet.rollbacks()) == 2 and {wallet.balance(owner, "USD") for owner in owners} == {wallet.start}
