"""Properties of every game over random shoes, random bets and random legal decisions."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strategies import Table, seat, tables
from twentyone.core.hand import hand_value, is_natural
from twentyone.core.operations import Action, ActionTaken, BetsPlaced, CardDealt, HandStatus, Settled
from twentyone.core.round import Phase, Round, replay
from twentyone.core.shoe import Shoe
from twentyone.core.view import HandState, mask_operations

ALL_ACTIONS = tuple(Action)
# TWENTYONE_EXAMPLES=3000 runs a deeper search (it passed at 3,000 examples per property).
SETTINGS = settings(max_examples=int(os.environ.get("TWENTYONE_EXAMPLES", "300")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def play_randomly(table: Table, data: st.DataObject):  # type: ignore[no-untyped-def]
    game = seat(table)
    game.deal()
    steps = 0
    while game.decision() is not None:
        legal = game.legal_actions()
        assert legal, "a pending decision always has a legal action"
        for action in ALL_ACTIONS:
            assert game.can(action) == (action in legal)
        game.act(data.draw(st.sampled_from(legal)))
        steps += 1
        assert steps < 60, "a round always ends"
    return game


@SETTINGS
@given(tables(), st.data())
def test_every_round_terminates_settled_with_legal_actions_only(table: Table, data: st.DataObject) -> None:
    game = play_randomly(table, data)
    assert game.phase is Phase.SETTLED
    assert all(hand.outcome is not None and hand.returned is not None for hand in game.hands)


@SETTINGS
@given(tables(), st.data())
def test_money_is_conserved_every_stake_settled_exactly_once(table: Table, data: st.DataObject) -> None:
    game = play_randomly(table, data)
    settlements = [op for op in game.operations if isinstance(op, Settled)]
    # Everything staked is accounted for by exactly one settlement.
    assert sum(s.stake for s in settlements) == game.staked
    main = sum(op.bet for op in game.operations if isinstance(op, BetsPlaced))
    assert sum(hand.stake for hand in game.hands) >= main
    assert sum(s.stake for s in settlements if s.item == "hand") == sum(hand.stake for hand in game.hands)
    # The house result is what was staked less what came back.
    house = game.staked - game.returned
    assert game.staked == game.returned + house
    for s in settlements:
        assert s.returned >= 0
        if s.item == "hand":
            assert s.returned <= s.stake * 5 // 2
        elif s.item == "insurance":
            assert s.returned in (0, 3 * s.stake)
        else:
            best = max(table.rules.side_bets[s.item].paytable.values())
            assert s.returned <= s.stake * (1 + best)


@SETTINGS
@given(tables(), st.data())
def test_replaying_the_log_reproduces_the_round(table: Table, data: st.DataObject) -> None:
    game = play_randomly(table, data)
    again = replay(table.rules, Shoe(table.order, table.rules.shoe.composition), table.bets, game.actions)
    assert again.operations == game.operations
    assert again.hands == game.hands


@SETTINGS
@given(tables(("power",)), st.data())
def test_common_draw_players_share_first_cards_and_the_draw_sequence(table: Table, data: st.DataObject) -> None:
    game = play_randomly(table, data)
    firsts = {hand.cards[:2] for hand in game.hands if not hand.from_split}
    assert len(firsts) <= 1
    # Each player's drawn cards, in the order drawn, are a prefix of one common sequence.
    sequences = []
    for player in game.players:
        drawn = [op.card for op in game.operations
                 if type(op).__name__ == "CardDealt" and op.seat > 0
                 and game.hands[[h.seat for h in game.hands].index(op.seat)].player == player]
        sequences.append(drawn)
    longest = max(sequences, key=len)
    assert all(sequence == longest[: len(sequence)] for sequence in sequences)


def _withheld_by_filtering(game: Round, player: str) -> tuple:  # type: ignore[type-arg]
    """What a player of a common draw in play may see, worked out the plain way: the whole log and every
    hand, filtered (the reference for the engine's indexed view)."""
    owners = {hand.seat: hand.player for hand in game.hands}

    def others(op: object) -> bool:
        if isinstance(op, CardDealt):
            return op.seat >= 1 and owners[op.seat] != player
        return isinstance(op, ActionTaken | Settled) and op.player != player

    operations = tuple(op for op in mask_operations(game.operations) if not others(op))
    common = tuple(op.card for op in game.operations if isinstance(op, CardDealt) and op.seat == -1)[:2]
    dealt = HandStatus.BLACKJACK if is_natural(list(common)) else HandStatus.PLAYING
    hands = tuple(hand if hand.player == player else
                  HandState(hand.player, hand.seat, 1, common, hand_value(common), hand.bet, hand.bet, dealt,
                            False, None, None)
                  for hand in game.hands if hand.player == player or hand.hand == 1)
    settlements = tuple(op for op in game.settlements if op.player == player)
    staked = sum(op.bet + sum(amount for _, amount in op.side_bets) if isinstance(op, BetsPlaced) else op.amount
                 for op in operations if isinstance(op, BetsPlaced | ActionTaken))
    return operations, hands, settlements, staked, sum(op.returned for op in settlements)


@SETTINGS
@given(tables(("power",)), st.data())
def test_a_common_draw_view_is_the_log_without_the_other_players_play(table: Table, data: st.DataObject) -> None:
    """Each view of a common draw in play, after every decision, is what filtering the whole log and every
    hand gives: the engine indexes its log by player, so this holds that indexing to the plain filter."""
    game = seat(table)
    game.deal()
    players = [name for name, _ in table.bets]
    for _ in range(80):
        for name in players:
            seen = game.view(name)
            assert seen.others_withheld == (game.phase is not Phase.SETTLED)
            if seen.others_withheld:
                among = game.view(name, among=players[:1])
                assert (seen.operations, seen.hands, seen.settlements, seen.staked, seen.returned) == \
                    _withheld_by_filtering(game, name)
                assert among.hands == tuple(hand for hand in seen.hands if hand.player in (name, players[0]))
        deciding = [name for name in players if game.decision(name) is not None]
        if not deciding:
            break
        name = data.draw(st.sampled_from(deciding))
        game.act(data.draw(st.sampled_from(game.legal_actions(name))), name)
    assert game.phase is Phase.SETTLED
