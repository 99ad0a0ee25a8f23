"""Properties of every game over random shoes, random bets and random legal decisions."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strategies import Table, seat, tables
from twentyone.core.operations import Action, BetsPlaced, Settled
from twentyone.core.round import Phase, replay
from twentyone.core.shoe import Shoe

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
