"""Accounts, tables, bet controls, dealing, decisions, settlement, history and the verifiable shuffle."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, dealt_shared_round, new_guest, new_player

from twentyone.server.service import GameService, commitment


def ledger_is_balanced(service: GameService) -> bool:
    from sqlalchemy import func, select

    from twentyone.server.models import LedgerEntry

    with service.db.sessions() as session:
        total = session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)))
        transfers = session.execute(select(LedgerEntry.transfer_id, func.sum(LedgerEntry.amount))
                                    .group_by(LedgerEntry.transfer_id)).all()
    return total == 0 and all(amount == 0 for _, amount in transfers)


def test_openapi_schema_lists_every_resource(http: TestClient) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    for path in ("/auth/register", "/auth/login", "/auth/guest", "/me", "/me/history", "/me/settings", "/me/limits",
                 "/tables", "/tables/{table_id}", "/tables/{table_id}/bets", "/tables/{table_id}/deal",
                 "/tables/{table_id}/undo", "/tables/{table_id}/double", "/tables/{table_id}/rebet",
                 "/rounds/{round_id}", "/rounds/{round_id}/actions", "/rounds/{round_id}/replay",
                 "/rounds/{round_id}/verify", "/admin/tables", "/admin/credit", "/admin/report",
                 "/admin/wallet/calls", "/admin/rounds", "/admin/players/{name}"):
        assert path in paths, path
    # Each operation its own id, as OpenAPI requires: a route of several methods (the health checks' HEAD and
    # OPTIONS) gave each the same one (review).
    ids = [operation["operationId"] for methods in paths.values() for operation in methods.values()]
    assert len(ids) == len(set(ids)), sorted(ids)



def test_openapi_names_every_field_a_refusal_carries(http: TestClient, guest: Client, service: GameService) -> None:
    """A refused decision's ``legal_actions``, a bet past its maximum, a refusal's amounts: the schema named ``detail``
    alone (an integrator's trial). Each field a real refusal carries is in it, typed."""
    error = http.get("/openapi.json").json()["components"]["schemas"]["Error"]["properties"]
    assert set(error) == {"detail", "legal_actions", "maximum", "amounts", "currency", "token_refused"}
    guest.post("/tables/classic/chip", {"chip": 10000})
    carried: set[str] = set()
    for _ in range(4):  # $100 a chip: the fourth passes the maximum, $300
        answer = guest.post("/tables/classic/bets", {"spot": 1, "type": "main"})
        if answer.status_code != 200:
            carried |= set(answer.json())
    assert "maximum" in carried
    dealt = guest.post("/tables/first-person/bets", {"spot": 1, "type": "main", "chip": 100})
    assert dealt.status_code == 200, dealt.text
    service.stacked.append(["TS", "6H", "9D", "8C"])  # 10 and 9 against a 6: no pair, no offer
    round_id = guest.post("/tables/first-person/deal").json()["id"]
    refused = guest.act(round_id, "split")  # no pair: refused with the decisions open
    assert refused.status_code == 409, refused.text
    carried |= set(refused.json())
    assert {"detail", "legal_actions", "maximum", "amounts", "currency"} <= carried <= set(error), carried


def test_the_web_table_placeholder_is_served_at_the_root(http: TestClient) -> None:
    page = http.get("/")
    assert page.status_code == 200 and "twentyone" in page.text


def test_register_login_and_errors(http: TestClient) -> None:
    ann = new_player(http, "ann")
    assert ann.get("/me").json()["name"] == "ann"
    assert http.post("/auth/register", json={"name": "ann", "password": "another one"}).json() == {
        "detail": "The name 'ann' is taken."}
    assert http.post("/auth/register", json={"name": "bob", "password": "short"}).status_code == 422
    wrong = http.post("/auth/login", json={"name": "ann", "password": "wrong password"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "The name or password is wrong."
    login = http.post("/auth/login", json={"name": "ann", "password": "correct horse"})
    assert login.status_code == 200 and login.json()["token"] != ann.token
    assert http.get("/me").status_code == 401
    assert http.get("/me", headers={"Authorization": "Bearer nonsense"}).json()["detail"].startswith("The token")
    assert http.post("/auth/register", json={"name": "xyz"}).json()["detail"] == "password: Field required."
    for name in ("guest-1a2b3c4d", "Guest-ann"):  # a guest's name, or one to pass for a guest: kept for guests
        taken = http.post("/auth/register", json={"name": name, "password": "correct horse"})
        assert taken.status_code == 422 and taken.json() == {"detail": "Names beginning with 'guest-' are kept for "
                                                                       "guests."}
    for name in ("house", "Operator", "DEALER", "Dealer1", "the.house"):  # each would pass for the casino's own
        kept = http.post("/auth/register", json={"name": name, "password": "correct horse"})
        assert kept.status_code == 422 and kept.json() == {
            "detail": f"The name {name!r} is kept: it would pass for the casino's own."}
    # A field neither takes is a 422, as at every other endpoint: before, "role" was dropped in silence.
    for path, name in (("/auth/register", "carol"), ("/auth/login", "ann")):
        extra = http.post(path, json={"name": name, "password": "correct horse", "role": "operator"})
        assert extra.status_code == 422 and extra.json()["detail"].startswith("role: "), extra.json()
    assert http.post("/auth/login", json={"name": "carol", "password": "correct horse"}).status_code == 401


def test_guest_gets_a_demo_balance_without_a_form(guest: Client) -> None:
    profile = guest.get("/me").json()
    assert profile["guest"] and profile["balances"] == {"USD": 100000, "GBP": 100000, "EUR": 100000}


def test_tables_from_the_shipped_config(http: TestClient) -> None:
    tables = {t["id"]: t for t in http.get("/tables").json()["tables"]}
    assert set(tables) >= {"first-person", "classic", "classic-premium", "single-deck", "multiplayer", "power"}
    classic, premium = tables["classic"], tables["classic-premium"]
    assert classic["limits"]["main"] == [100, 30000] and classic["chips"] == [100, 500, 2500, 10000]
    assert premium["limits"]["main"] == [500, 200000] and premium["theme"] == "black"
    assert tables["single-deck"]["currency"] == "GBP" and tables["single-deck"]["limits"]["main"][0] == 2500
    assert tables["first-person"]["hands_per_player"] == 5 and tables["power"]["seats"] is None
    power = tables["power"]
    assert power["side_bet_titles"] == {"any_pair": "Any Pair", "21+3": "21+3", "hot_3": "Hot 3", "bust_it": "Bust It"}
    assert power["side_bet_lines"]["bust_it"]["bust_4"] == "dealer busts with 4 cards"
    assert tables["first-person"]["side_bet_lines"]["perfect_pairs"]["colored"] == "colored pair"
    assert power["offer_answers"]["insurance"] == {"accept": "insurance", "decline": "no-insurance"}
    assert tables["classic"]["side_bet_titles"] == {}


def test_the_lobby_lists_the_players_rounds_still_open(guest: Client, http: TestClient,
                                                     service: GameService) -> None:
    """``GET /tables`` names a signed-in player's open rounds, newest first, so that the lobby says where a round of
    theirs goes on (a trial found it said nothing); a round settled leaves the list, and nobody else sees them."""
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against 6: in play
    guest.bet("classic", 500)
    in_play = guest.post("/tables/classic/deal").json()
    guest.bet("multiplayer", 500)
    forming = guest.post("/tables/multiplayer/deal").json()
    assert guest.get("/tables").json()["open_rounds"] == [
        {"round_id": forming["id"], "table_id": "multiplayer", "status": "betting"},
        {"round_id": in_play["id"], "table_id": "classic", "status": "playing"}]
    for _ in range(25):  # more rounds elsewhere than a look at the player's newest would have seen past (review)
        service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against 6 at single deck: stand, the dealer busts
        guest.bet("single-deck", 2500)
        assert guest.act(guest.post("/tables/single-deck/deal").json()["id"], "stand").json()["status"] == "settled"
    assert [row["round_id"] for row in guest.get("/tables").json()["open_rounds"]] == [forming["id"], in_play["id"]]
    other = new_player(http, "otto")
    assert other.get("/tables").json()["open_rounds"] == []
    assert "open_rounds" not in http.get("/tables").json()  # signed out: nobody's
    assert guest.post(f"/rounds/{in_play['id']}/actions", {"action": "stand"}).json()["status"] == "settled"
    assert [row["round_id"] for row in guest.get("/tables").json()["open_rounds"]] == [forming["id"]]


def test_every_insurance_offer_of_a_player_is_listed_with_its_cost(guest: Client, service: GameService) -> None:
    service.stacked.append(["5S", "6S", "7S", "AH", "5D", "6D", "7D", "KC"])
    for spot, chip in ((1, 100), (2, 500), (3, 100)):
        guest.bet("first-person", chip, spot=spot)
    view = guest.post("/tables/first-person/deal").json()
    assert view["decision"]["kind"] == "insurance"
    assert view["offers"]["pending"] == [{"seat": 1, "hand": 1, "kind": "insurance", "cost": 50},
                                         {"seat": 2, "hand": 1, "kind": "insurance", "cost": 250},
                                         {"seat": 3, "hand": 1, "kind": "insurance", "cost": 50}]
    view = guest.act(view["id"], "no-insurance").json()
    assert [offer["seat"] for offer in view["offers"]["pending"]] == [2, 3]


def test_insurance_taken_is_in_the_round_until_it_is_settled(guest: Client, http: TestClient,
                                                             service: GameService) -> None:
    """Single deck deals no hole card and does not peek: insurance is settled with the hands. Until then the round says
    what was taken (``insurance_taken``), to its player alone; before, nothing did, while the balance had paid it."""
    service.stacked.append(["TS", "AH", "9D", "7C"])  # 19 against the dealer's Ace, who draws a 7: 18, no blackjack
    guest.bet("single-deck", 2500)
    round_id = guest.post("/tables/single-deck/deal").json()["id"]
    assert guest.get(f"/rounds/{round_id}").json()["insurance_taken"] == []  # offered, not yet taken
    taken = guest.act(round_id, "insurance").json()
    assert taken["status"] == "playing" and taken["insurance_taken"] == [{"seat": 1, "stake": 1250}]
    assert taken["insurance"] == [] and taken["me"]["staked"] == 3750
    assert new_player(http, "nosy").get(f"/rounds/{round_id}").status_code == 404
    # The history's entry lists it too, so that its stakes add up to ``staked`` while the round is in play.
    entry = guest.get("/me/history").json()["rounds"][0]
    assert entry["status"] == "playing" and entry["insurance_taken"] == [{"seat": 1, "stake": 1250}]
    assert sum(hand["stake"] for hand in entry["hands"]) + 1250 == entry["staked"] == 3750
    settled = guest.act(round_id, "stand").json()
    assert settled["status"] == "settled" and settled["insurance_taken"] == []
    assert guest.get("/me/history").json()["rounds"][0]["insurance_taken"] == []
    assert [(bet["seat"], bet["stake"], bet["result"]) for bet in settled["insurance"]] == [(1, 1250, "lose")]


def test_insurance_taken_at_a_common_draw_is_its_players_alone(http: TestClient, service: GameService,
                                                               clock: Clock) -> None:
    """Power deals one hand to everyone and withholds each player's choices until the round settles: the insurance
    ann took is in her view alone until the peek settles it, never in bob's nor in a watcher's."""
    service.stacked.append(["5S", "AH", "6D", "8C", "KD", "2S", "3S", "4S"])  # 11 against an Ace; no blackjack under
    ann, bob, watcher = new_guest(http), new_guest(http), new_guest(http)
    round_id = dealt_shared_round(service, clock, [ann, bob])
    taken = ann.act(round_id, "insurance").json()
    anns_seats = {hand["seat"] for hand in taken["hands"] if hand["name"] == ann.name}
    assert [(bet["seat"] in anns_seats, bet["stake"]) for bet in taken["insurance_taken"]] == [(True, 250)]
    assert bob.get(f"/rounds/{round_id}").json()["insurance_taken"] == []
    assert [entry["insurance_taken"] for entry in bob.get("/me/history").json()["rounds"]
            if entry["id"] == round_id] == [[]]
    assert [len(entry["insurance_taken"]) for entry in ann.get("/me/history").json()["rounds"]
            if entry["id"] == round_id] == [1]
    watched = watcher.get("/tables/power").json()["round"]
    assert watched["id"] == round_id and watched["insurance_taken"] == []
    peeked = bob.act(round_id, "no-insurance").json()  # the last answer: the dealer peeks, no blackjack
    assert peeked["insurance_taken"] == []
    after = ann.get(f"/rounds/{round_id}").json()
    assert after["insurance_taken"] == [] and [bet["result"] for bet in after["insurance"]] == ["lose"]


def test_bet_controls_and_their_limits(guest: Client) -> None:
    slip = guest.bet("classic", 10000).json()["slip"]
    assert slip["total"] == 10000
    guest.bet("classic", 10000)
    guest.bet("classic", 10000)
    refused = guest.post("/tables/classic/bets", {"spot": 1, "chip": 100})
    assert refused.status_code == 409 and refused.json()["detail"] == "The maximum bet is $300.00 on this spot."
    assert refused.json()["maximum"] is True
    assert refused.json()["amounts"] == {"maximum": 30000} and refused.json()["currency"] == "USD"
    assert guest.post("/tables/classic/undo").json()["slip"]["total"] == 20000
    doubled = guest.post("/tables/classic/double").json()["slip"]
    assert doubled["total"] == 30000  # capped at the maximum
    # At the maximum, x2 adds nothing: refused, so that UNDO still takes back the last bet that changed the slip (a
    # player's trial: x2 did nothing and said nothing, and the next UNDO undid that nothing).
    at_maximum = guest.post("/tables/classic/double")
    assert (at_maximum.status_code, at_maximum.json()["detail"]) == (
        409, "Every bet is at its maximum already: x2 adds nothing.")
    assert guest.post("/tables/classic/undo").json()["slip"]["total"] == 20000
    no_spot = guest.post("/tables/classic/bets", {"spot": 9}).json()
    assert no_spot["detail"] == "Spot 9 does not exist; spots are 1 to 3."
    side = guest.post("/tables/first-person/bets", {"spot": 2, "type": "perfect_pairs", "chip": 100})
    assert side.status_code == 409 and side.json()["detail"] == "A side bet needs a main bet on the same hand first."
    assert guest.post("/tables/classic/chip", {"chip": 7}).status_code == 409
    assert guest.get("/tables/nowhere").json() == {"detail": "There is no table 'nowhere'."}


def test_the_slip_says_what_rebet_would_stake(guest: Client, service: GameService) -> None:
    """``rebet_total`` lets a page leave REBET out where the balance does not cover it (the server refuses it)."""
    fresh = guest.get("/tables/classic").json()["slip"]
    assert (fresh["can_rebet"], fresh["rebet_total"]) == (False, 0)
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    guest.bet("classic", 500, spot=1)
    guest.bet("classic", 2500, spot=2)
    view = guest.post("/tables/classic/deal").json()
    while view["status"] == "playing":
        view = guest.act(view["id"], "stand").json()
    slip = guest.get("/tables/classic").json()["slip"]
    assert (slip["can_rebet"], slip["rebet_total"], slip["total"]) == (True, 3000, 0)


def test_x2_needs_the_balance_to_cover_every_bet(guest: Client, operator: Client) -> None:
    guest.bet("single-deck", 100000, bet_type="main", spot=1)  # GBP 1000 of a 1000 balance
    refused = guest.post("/tables/single-deck/double")
    assert refused.json()["detail"] == "Doubling every bet needs £2,000.00 but the balance is £1,000.00."
    assert refused.status_code == 409 and refused.json()["amounts"] == {"needed": 200000, "balance": 100000}


def test_deal_debits_the_stake_and_hides_the_hole_card(guest: Client, service: GameService) -> None:
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    before = guest.balance()
    guest.bet("classic", 500)
    round_view = guest.post("/tables/classic/deal").json()
    assert guest.balance() == before - 500
    assert round_view["dealer"] == {"cards": ["6H"], "total": 6, "soft": False, "hidden": 1, "hidden_at": 1,
                                   "blackjack": False}
    assert round_view["legal_actions"] == ["hit", "stand", "double"]
    settled = guest.act(round_view["id"], "stand").json()
    assert settled["status"] == "settled" and settled["hands"][0]["outcome"] == "win"
    assert settled["dealer"]["cards"] == ["6H", "TC", "8C"]
    assert guest.balance() == before + 500
    assert settled["me"]["balance_before"] == before and settled["me"]["balance_after"] == before + 500
    assert ledger_is_balanced(service)


def test_an_illegal_decision_is_409_with_the_legal_actions_and_changes_nothing(guest: Client,
                                                                            service: GameService) -> None:
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    balance = guest.balance()
    refused = guest.act(round_id, "split")
    assert refused.status_code == 409
    assert refused.json()["legal_actions"] == ["hit", "stand", "double"]
    # Said to the player, in words: not the engine's "Cannot split at seat 1 hand 1 (player '52')" (found by a trial).
    assert refused.json()["detail"] == ("You cannot split now: only a pair of cards of equal value can be split. "
                                        "You can hit, stand or double down.")
    folded = guest.act(round_id, "fold")
    assert folded.status_code == 409
    assert folded.json()["detail"] == "There is no action 'fold'. You can hit, stand or double down."
    assert guest.balance() == balance
    assert guest.get(f"/rounds/{round_id}").json()["legal_actions"] == ["hit", "stand", "double"]


def test_another_players_round_is_not_found(guest: Client, http: TestClient, service: GameService) -> None:
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    bob = new_player(http, "bob")
    assert bob.get(f"/rounds/{round_id}").status_code == 404
    assert bob.act(round_id, "stand").status_code == 404
    assert bob.get(f"/rounds/{round_id}/replay").status_code == 404


def test_double_and_split_debit_their_extra_stakes(guest: Client, service: GameService) -> None:
    service.stacked.append(["8S", "6H", "8D", "TC", "3C", "2H", "KD", "9S"])
    before = guest.balance()
    guest.bet("classic", 500)
    dealt = guest.post("/tables/classic/deal").json()
    round_id = dealt["id"]
    # What each would take, from the engine, for the clients to tell one the balance cannot cover before it is sent.
    assert dealt["offers"]["costs"] == {"double": 500, "split": 500}
    split = guest.act(round_id, "split").json()
    assert guest.balance() == before - 1000
    assert split["offers"]["costs"] == {"double": 500}  # no resplit at this hand's 3
    guest.act(round_id, "double")  # 8+3 = 11 doubles with the K
    final = guest.act(round_id, "double").json()  # 8+2 = 10 doubles with the 9: 19
    assert [h["stake"] for h in final["hands"]] == [1000, 1000]
    assert final["status"] == "settled" and final["dealer"]["cards"][:2] == ["6H", "TC"]
    assert guest.balance() == before - 2000 + sum(h["returned"] for h in final["hands"])


def test_a_retried_request_returns_the_first_answer_and_moves_no_money(guest: Client) -> None:
    guest.bet("classic", 500)
    first = guest.post("/tables/classic/deal", key="deal-1")
    balance = guest.balance()
    again = guest.post("/tables/classic/deal", key="deal-1")
    assert again.status_code == first.status_code and again.json() == first.json()
    assert guest.balance() == balance
    reused = guest.post("/tables/first-person/deal", key="deal-1")
    assert reused.status_code == 422 and "different request" in reused.json()["detail"]
    missing = guest.http.post("/tables/classic/deal", headers=guest.headers)
    assert missing.status_code == 400 and "Idempotency-Key" in missing.json()["detail"]
    # Any malformed key is a 400 in the same words, one too long included (it was a 422 of the header's schema,
    # which a retry layer reads as a key reused on another request: an integrator's trial).
    for malformed in ("", "k" * 129):
        refused = guest.http.post("/tables/classic/deal", headers={**guest.headers, "Idempotency-Key": malformed})
        assert (refused.status_code, refused.json()) == (
            400, {"detail": "An Idempotency-Key is 1 to 128 printable ASCII characters."}), malformed
    assert guest.balance() == balance


def test_each_seats_bet_keeps_the_spot_it_was_placed_on(guest: Client) -> None:
    """Bets on the third and fifth circles deal as seats 1 and 2: each keeps its spot, in the round and in the
    history, so that the page names the hands as the circles are (a trial of players saw spot 3 called "Hand 1")."""
    guest.bet("first-person", 100, spot=3)
    guest.bet("first-person", 500, spot=5)
    dealt = guest.post("/tables/first-person/deal").json()
    assert dealt["me"]["bets"] == [{"bet": 100, "side_bets": {}, "spot": 3}, {"bet": 500, "side_bets": {}, "spot": 5}]
    assert sorted({hand["seat"] for hand in dealt["hands"]}) == [1, 2]
    assert guest.get("/me/history").json()["rounds"][0]["bets"] == dealt["me"]["bets"]
    # The replay says it too, on each seat's bets, and where each card went by seat and hand as well as in words.
    replay = guest.get(f"/rounds/{dealt['id']}/replay").json()
    operations = replay["operations"]
    assert replay["shared"] is False  # the page names a private round's hands by circle
    assert [(op["seat"], op["spot"]) for op in operations if op["type"] == "bets"] == [(1, 3), (2, 5)]
    first = next(op for op in operations if op["type"] == "card")
    assert (first["seat"], first["hand"], first["to"]) == (1, 1, "seat 1 hand 1")


def test_history_newest_first_with_paging_and_a_replay(guest: Client) -> None:
    ids = []
    for _ in range(12):
        guest.bet("classic", 100)
        view = guest.post("/tables/classic/deal").json()
        while view["status"] == "playing":
            view = guest.act(view["id"], "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
                             ).json()
        ids.append(view["id"])
    page = guest.get("/me/history").json()
    assert [r["id"] for r in page["rounds"]] == ids[::-1][:10] and page["has_more"]
    assert [r["id"] for r in guest.get("/me/history", page=2).json()["rounds"]] == ids[::-1][10:]
    assert page["next_before"] == ids[::-1][9]
    latest = page["rounds"][0]
    for field in ("bets", "dealer", "hands", "decisions", "staked", "returned", "balance_before", "balance_after"):
        assert field in latest
    assert latest["balance_after"] == latest["balance_before"] - latest["staked"] + latest["returned"]
    replay = guest.get(f"/rounds/{ids[-1]}/replay").json()
    kinds = [op["type"] for op in replay["operations"]]
    assert kinds[0] == "bets" and "card" in kinds and kinds[-1] == "settled"


def test_shuffle_commitment_is_published_before_the_deal_and_verifies_after(guest: Client, tmp_path) -> None:
    assert guest.get("/tables/classic").json()["next_shoe"] is None  # a first visit: no shoe yet
    bet = guest.bet("classic", 100)
    published = guest.get("/tables/classic").json()["next_shoe"]["commitment"]
    assert bet.json()["next_shoe"]["commitment"] == published
    view = guest.post("/tables/classic/deal").json()
    assert view["commitment"] == published
    assert guest.get(f"/rounds/{view['id']}/verify").status_code in (200, 409)
    while view["status"] == "playing":
        view = guest.act(view["id"], "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]).json()
    proof = guest.get(f"/rounds/{view['id']}/verify").json()
    assert proof["valid"] and proof["commitment"] == published
    assert commitment(proof["salt"], proof["cards"]) == published
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(proof))
    cli = subprocess.run([sys.executable, "-m", "twentyone.cli.main", "verify", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0 and "verified" in cli.stdout

    def verdict(record: dict[str, Any]) -> str:
        path.write_text(json.dumps(record))
        checked = subprocess.run([sys.executable, "-m", "twentyone.cli.main", "verify", str(path)],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == 1 and checked.stderr.count("\n") == 1, checked
        return checked.stderr

    # Each way a record can fail is named: the shoe's order (move a card unlike the top one: two identical
    # cards could swap unseen), the round's cards, where they start, and a record of no cards at all.
    other = next(i for i, card in enumerate(proof["cards"]) if card != proof["cards"][0])
    swapped = list(proof["cards"])
    swapped[0], swapped[other] = swapped[other], swapped[0]
    assert "NOT verified: the shoe and salt do not hash" in verdict({**proof, "cards": swapped})
    assert len(set(proof["drawn"])) > 1  # so that the reversed cards differ
    assert "are not the shoe's from card" in verdict({**proof, "drawn": proof["drawn"][::-1]})
    assert "do not fit in a shoe" in verdict({**proof, "first_card": len(proof["cards"])})
    assert "do not fit in a shoe" in verdict({**proof, "first_card": -1})
    assert "lists no cards drawn" in verdict({**proof, "drawn": []})


def test_reading_a_table_never_writes_and_the_next_shoe_is_committed_as_the_last_one_finishes(
        guest: Client, service: GameService, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads are served without a write transaction: the next shoe is shuffled at a write (the first bet
    control of a visit to a private table, or the settlement that finishes a shoe), never by a GET."""
    def refuse_writes() -> None:
        raise AssertionError("reading the table opened a write transaction")

    def read_table() -> dict:
        with monkeypatch.context() as patch:
            patch.setattr(service.store, "write", refuse_writes)
            response = guest.get("/tables/classic")
        assert response.status_code == 200, response.json()
        return response.json()

    assert read_table()["next_shoe"] is None  # a first visit
    first = guest.bet("classic", 100).json()["next_shoe"]
    assert read_table()["next_shoe"] == first
    view = guest.post("/tables/classic/deal").json()
    assert view["commitment"] == first["commitment"]
    while view["status"] == "playing":
        view = guest.act(view["id"], "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]).json()
    following = read_table()["next_shoe"]  # classic shuffles every round: the settlement committed the next
    assert following is not None and following["id"] != first["id"] and following["commitment"] != first["commitment"]
    guest.bet("classic", 100)
    assert guest.post("/tables/classic/deal").json()["commitment"] == following["commitment"]


@pytest.mark.parametrize("table", ["classic", "multiplayer"])
def test_during_a_round_at_a_table_that_shuffles_every_round_the_next_shoe_is_the_next_rounds(
        http: TestClient, service: GameService, clock: Any, table: str) -> None:
    """The table publishes, during a round, the shoe the next round will use, and keeps the shoe in play secret.

    Before, a shoe that serves one round stayed the table's newest unfinished one until that round settled, so
    ``next_shoe`` during the round was the shoe in play: its commitment, which no later round used (found by a
    trial of an attacker)."""
    from integrity import stack_for
    from server_helpers import dealt_shared_round, joined_shared_round

    ann = new_player(http, "ann")
    service.stacked.append(stack_for(table, [1], up="9D", hands=[["TS", "6H"]]))  # 16 against 9: in play
    if table == "classic":
        ann.bet(table, 100)
        round_id = ann.post(f"/tables/{table}/deal").json()["id"]
    else:
        round_id = dealt_shared_round(service, clock, [ann], table)
    view = ann.get(f"/rounds/{round_id}").json()
    assert view["status"] == "playing"
    published = ann.get(f"/tables/{table}").json()["next_shoe"]
    assert published is not None and published["commitment"] != view["commitment"]
    assert ann.get(f"/rounds/{round_id}/verify").status_code == 409  # the shoe in play is not revealed
    if table == "classic":  # a bet control during the round names the same next shoe
        assert ann.bet(table, 100).json()["next_shoe"] == published
    while view["status"] == "playing":
        view = ann.act(round_id, "stand").json()
    assert ann.get(f"/tables/{table}").json()["next_shoe"] == published  # the settlement made no other
    assert ann.get(f"/rounds/{round_id}/verify").json()["commitment"] == view["commitment"]
    if table == "classic":
        following = ann.post(f"/tables/{table}/deal").json()
    else:  # its shoe is shuffled, never stacked: a blackjack may settle it at the deal, which is as good here
        joined = joined_shared_round(service, clock, [ann], table)[0].json()
        service.tick()
        following = ann.get(f"/rounds/{joined['id']}").json()
        assert following["status"] in ("playing", "settled"), following
    assert following["commitment"] == published["commitment"]


def test_two_stacked_shoes_go_to_the_next_two_deals_at_a_table_that_shuffles_every_round(http: TestClient,
                                                                                        service: GameService) -> None:
    """The next shoe a deal makes there (Shoes.following) is shuffled, never taken from the stack a test or a
    certification laid for the next deal anywhere (found by review: bob's stacked shoe went to ann's next round)."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    for player in (ann, bob):
        player.bet("classic-premium", 500)
    service.stacked.extend([["TS", "6H", "9D", "TC", "8C"], ["9S", "6C", "TD", "TH", "8H"]])
    dealt = [player.post("/tables/classic-premium/deal").json() for player in (ann, bob)]
    assert [[card for hand in view["hands"] for card in hand["cards"]] for view in dealt] == [["TS", "9D"],
                                                                                           ["9S", "TD"]]


def test_a_shared_tables_first_shoe_is_committed_to_at_its_first_bet_control(http: TestClient) -> None:
    """Not in the DEAL that joins the first round: the first player sees the commitment before betting on it."""
    ann, bob = (new_player(http, name) for name in ("ann", "bob"))
    assert ann.get("/tables/multiplayer").json()["next_shoe"] is None  # a table's first visit, and a read
    first = ann.bet("multiplayer", 500).json()["next_shoe"]
    assert bob.get("/tables/multiplayer").json()["next_shoe"] == first  # one shoe for the table, not one each
    assert bob.bet("multiplayer", 500).json()["next_shoe"] == first
    assert ann.post("/tables/multiplayer/deal").json()["commitment"] == first["commitment"]


def test_a_live_shoe_past_its_cut_card_is_followed_in_the_settling_transaction(
        http: TestClient, service: GameService, clock) -> None:  # type: ignore[no-untyped-def]
    """Power deals one shoe round after round; the round that passes its cut card shuffles the next."""
    from server_helpers import dealt_shared_round
    from sqlalchemy import select, update

    from twentyone.server.models import Round, Shoe

    service.stacked.append(["5S", "7H", "6D", "8C", "KD"])  # no Ace up: no insurance; 11 against 7 + 8
    ann = new_player(http, "ann")
    round_id = dealt_shared_round(service, clock, [ann])
    before = ann.get("/tables/power").json()["next_shoe"]
    with service.db.transaction() as session:  # as if this round's cards reach the cut card
        shoe_id = session.get(Round, round_id).shoe_id  # type: ignore[union-attr]
        session.execute(update(Shoe).where(Shoe.id == shoe_id).values(cut_card=1))
    assert before["id"] == shoe_id
    view = ann.get(f"/rounds/{round_id}").json()
    while view["status"] == "playing":
        view = ann.act(round_id, "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]).json()
    after = ann.get("/tables/power").json()["next_shoe"]
    assert after is not None and after["id"] != shoe_id and after["commitment"] != before["commitment"]
    with service.db.sessions() as session:
        unfinished = session.scalars(select(Shoe.id).where(Shoe.table_id == "power", Shoe.finished.is_(False))).all()
        assert unfinished == [after["id"]]


def test_a_shoe_still_in_play_is_not_revealed(guest: Client) -> None:
    guest.bet("classic", 100)
    view = guest.post("/tables/classic/deal").json()
    if view["status"] == "playing":
        assert guest.get(f"/rounds/{view['id']}/verify").status_code == 409
        assert "revealed" not in view


def test_a_hint_ranks_the_legal_actions_of_my_decision(guest: Client, service: GameService) -> None:
    service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    hint = guest.get(f"/rounds/{round_id}/hint").json()
    actions = [entry["action"] for entry in hint["actions"]]
    assert sorted(actions) == ["double", "hit", "stand"] and actions[0] == "stand"  # hard 16 v 6 stands
    evs = [entry["ev"] for entry in hint["actions"]]
    assert evs == sorted(evs, reverse=True)


def test_a_hint_at_an_offer_ranks_both_answers(guest: Client, service: GameService) -> None:
    """At insurance's decision the hint ranks taking it against declining it (declining first: insurance costs the
    player in a fresh shoe); at even money's, taking it against playing the blackjack on. Before, it listed the offer
    alone (found by a trial)."""
    service.stacked.append(["TS", "AH", "6D", "9C", "8C"])  # 16 against an Ace
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    hint = guest.get(f"/rounds/{round_id}/hint").json()["actions"]
    assert [entry["action"] for entry in hint] == ["no-insurance", "insurance"]
    assert hint[0]["ev"] == 0.0 and hint[1]["ev"] < 0
    guest.act(round_id, "no-insurance")
    assert guest.act(round_id, "stand").json()["status"] == "settled"  # the dealer's Ace and 9: 20
    service.stacked.append(["AS", "AH", "KD", "9C"])  # a blackjack against an Ace
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    hint = guest.get(f"/rounds/{round_id}/hint").json()["actions"]
    assert [entry["action"] for entry in hint] == ["no-even-money", "even-money"]  # 3:2 unless the dealer has one
    assert hint[1]["ev"] == 1.0 and 1.0 < hint[0]["ev"] < 1.5


def test_a_hint_ranks_every_hands_offer_each_as_its_own(http: TestClient, service: GameService) -> None:
    """Insurance asked of two hands at once: the page showed the EVs of the pending hand's row alone (a trial of
    players). The hint ranks every offer waiting, within what the player's daily loss limit leaves: $5.00 on hand 1
    and $25.00 on hand 2 with $30.00 a day to lose leave $0.00 to stake, so neither insurance is ranked. Insurance
    pays on the one hole card, so it is valued once, from every card the player has seen (a review: valued from each
    hand's own cards, 9,9 read as worth more than 10,9)."""
    ann = new_player(http, "ann")
    service.stacked.append(["TS", "9H", "AH", "9D", "9C", "7C", "5S"])  # 19 and 9,9 against an Ace; no blackjack
    ann.bet("classic", 500)
    ann.bet("classic", 2500, spot=2)
    round_id = ann.post("/tables/classic/deal").json()["id"]
    hint = ann.get(f"/rounds/{round_id}/hint").json()
    assert [(offer["seat"], offer["hand"], offer["kind"]) for offer in hint["offers"]] == [
        (1, 1, "insurance"), (2, 1, "insurance")]
    first, second = ({entry["action"]: entry["ev"] for entry in offer["actions"]} for offer in hint["offers"])
    assert first == second == {entry["action"]: entry["ev"] for entry in hint["actions"]}
    # Six decks less 10,9 9,9 and the Ace: 95 tens among 307 cards; half the bet pays 2 to 1 on one.
    assert first["no-insurance"] == 0.0 and first["insurance"] == pytest.approx(0.5 * (2 * 95 - 212) / 307)
    bob = new_player(http, "bob")
    bob.put("/me/limits", {"daily_loss_limit": 3000})
    service.stacked.append(["TS", "9H", "AH", "9D", "9C", "7C", "5S"])
    bob.bet("classic", 500)
    bob.bet("classic", 2500, spot=2)
    round_id = bob.post("/tables/classic/deal").json()["id"]
    offers = bob.get(f"/rounds/{round_id}/hint").json()["offers"]
    assert [[entry["action"] for entry in offer["actions"]] for offer in offers] == [["no-insurance"]] * 2


def test_a_request_that_wrote_nothing_keeps_its_answer_for_a_retry(service: GameService, guest: Client) -> None:
    """A keyed request whose work wrote nothing still records its answer: a retry gets it back, not a new one."""
    caller = service.authenticate(guest.token)
    answers = iter([{"n": 1}, {"n": 2}])
    first = service.idempotent(caller, "nothing-written", "POST /x", 200, lambda: next(answers))
    again = service.idempotent(caller, "nothing-written", "POST /x", 200, lambda: next(answers))
    assert first == again == (200, {"n": 1})


def test_a_change_its_key_and_its_answer_commit_together(guest: Client, service: GameService) -> None:
    """A server that fails after the commit but before answering sends the first answer on a retry."""
    service.stacked.append(["2S", "6H", "3D", "TC", "2C", "2D", "9S"])
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    original = service.events.publish

    def fails_after_commit(table_id, event):  # type: ignore[no-untyped-def]
        raise RuntimeError("server stopped before answering")

    service.events.publish = fails_after_commit  # type: ignore[method-assign]
    try:  # a 500 that does not say nothing changed (app.Unexpected)
        failed = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-1")
        assert failed.status_code == 500 and "may have been applied" in failed.json()["detail"]
    finally:
        service.events.publish = original  # type: ignore[method-assign]
    first = guest.get(f"/rounds/{round_id}").json()
    assert len(first["hands"][0]["cards"]) == 3
    retry = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-1")
    assert retry.status_code == 200 and retry.json()["hands"] == first["hands"]  # the first answer, again
    assert len(guest.get(f"/rounds/{round_id}").json()["hands"][0]["cards"]) == 3  # no second hit


def test_the_balance_kept_on_each_account_is_the_sum_of_its_ledger(guest: Client, service: GameService) -> None:
    """Balances are read from the account, not summed from the ledger, so every transfer must keep them equal:
    stakes, doubles, splits, wins and a voided round's refund."""
    from sqlalchemy import func, select

    from twentyone.server.models import Account, LedgerEntry
    from twentyone.server.wallet import ledger_balance, unreconciled_accounts

    service.stacked.append(["8S", "6H", "8D", "TC", "3C", "2D", "KS", "9H"])  # split eights, double one
    service.stacked.append(["9S", "6H", "5D", "TC", "2C"])  # the round voided below: 14 against a 6
    guest.bet("classic", 500)
    view = guest.post("/tables/classic/deal").json()
    for action in ("split", "double", "stand"):
        view = guest.act(view["id"], action).json()
    guest.bet("classic", 500)
    view = guest.post("/tables/classic/deal").json()

    def broken(stage: str) -> None:
        raise RuntimeError("card reader failure")

    service.fault = broken
    voided = guest.act(view["id"], "hit").json()
    service.fault = lambda stage: None
    assert voided["status"] == "void"
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []
        kept = session.scalar(select(func.sum(Account.balance)).where(Account.owner != "house"))
        house = session.scalar(select(func.sum(LedgerEntry.amount)).join(
            Account, Account.id == LedgerEntry.account_id).where(Account.owner == "house"))
        assert kept == -house  # the house's balance is minus the players'
        assert ledger_balance(session, guest.get("/me").json()["id"], "USD") == guest.balance()


def test_history_pages_by_before_stay_put_while_rounds_are_played(guest: Client) -> None:
    def play() -> int:
        guest.bet("classic", 100)
        view = guest.post("/tables/classic/deal").json()
        while view["status"] == "playing":
            view = guest.act(view["id"], "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
                             ).json()
        return int(view["id"])

    ids = [play() for _ in range(7)]
    first = guest.get("/me/history", size=3).json()
    assert [r["id"] for r in first["rounds"]] == ids[::-1][:3] and first["next_before"] == ids[4]
    newer = play()  # a round played while the player reads their history, in another tab
    second = guest.get("/me/history", size=3, before=first["next_before"]).json()
    assert [r["id"] for r in second["rounds"]] == ids[::-1][3:6] and second["has_more"]
    assert first["page"] == 1 and second["page"] is None  # paged by before: no page number to claim
    last = guest.get("/me/history", size=3, before=second["next_before"]).json()
    assert [r["id"] for r in last["rounds"]] == ids[:1] and not last["has_more"] and last["next_before"] is None
    # By page number the same read shifts by the round played meanwhile: it shows a round again.
    assert [r["id"] for r in guest.get("/me/history", size=3, page=2).json()["rounds"]] == ids[::-1][2:5]
    assert guest.get("/me/history", size=3).json()["rounds"][0]["id"] == newer
    both = guest.get("/me/history", page=2, before=ids[3])
    assert both.status_code == 422 and "not both" in both.json()["detail"]
