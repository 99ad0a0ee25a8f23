"""The compiled kernel against the pure engine: same shoe order, same strategy, identical rounds.

Each case traces thousands of seeded kernel rounds, then replays every round's cards
through :class:`twentyone.core.round.Round` with the same player, and compares the cards
drawn, every decision (offers included) and the money staked and returned.
"""

from __future__ import annotations

import pytest

from twentyone.core.operations import ActionTaken
from twentyone.core.rules import rules_from_toml
from twentyone.sim import kernel
from twentyone.sim.chunk import chunk_seed, trace_chunk
from twentyone.sim.optimal import optimal_tables
from twentyone.sim.reference import engine_round
from twentyone.sim.strategy import load_strategy, strategy_tables
from twentyone.sim.tables import SimOptions, code_card, compile_game
from twentyone.variants import VARIANTS, _tables, builtin_rules

ACTIONS = ("hit", "stand", "double", "triple", "quadruple", "split", "surrender", "cash-out",
           "insurance", "no-insurance", "even-money", "no-even-money", "no-surrender")

# Rules files that switch on what the five games leave off (each within what the exact
# analysis models, since the strategies come from it): late surrender, resplits (aces too),
# hitting soft 17, peek under every ten with "original bets only", x2/x3 on 10-11 only, 6:5.
OTHER_RULES = """
id = "other"
name = "Other"
[shoe]
decks = 2
[dealer]
hits_soft_17 = true
peek = "ace-ten"
no_peek_blackjack_takes = "original"
[deal]
hands_per_player = 3
[double]
totals = "10-11"
multipliers = [2, 3]
after_split = true
[split]
max_hands = 4
aces_one_card = true
resplit_aces = true
[player]
surrender = "late"
blackjack_pays = "6:5"
"""

# European no hole card with "original bets only", early surrender, rank-matched splits,
# split aces that may hit, auto-stand on soft 21 only, and insurance settled at the end.
EUROPEAN_RULES = """
id = "european"
name = "European"
[shoe]
decks = 2
[dealer]
peek = "none"
no_peek_blackjack_takes = "original"
[deal]
order = ["hands", "dealer-up", "hands"]
hands_per_player = 4
[split]
match = "rank"
max_hands = 2
aces_one_card = false
[insurance]
to_blackjack = true
[player]
surrender = "early"
auto_stand = "soft-21"
"""


def _rules(name: str):  # type: ignore[no-untyped-def]
    if name == "other":
        return rules_from_toml(OTHER_RULES)
    if name == "european":
        return rules_from_toml(EUROPEAN_RULES, _tables())
    return builtin_rules(name)


def _cases() -> list[tuple[str, str, SimOptions]]:
    cases = []
    for variant in VARIANTS:
        rules = builtin_rules(variant)
        sides = tuple(rules.side_bets)
        cases.append((variant, "basic", SimOptions(hands=1)))
        cases.append((variant, "basic", SimOptions(hands=3, side_bets=sides, insurance=True, even_money=True)))
        cases.append((variant, "optimal", SimOptions(hands=2)))
    cases.append(("first-person", "basic", SimOptions(hands=2, cash_out=True, side_bets=("perfect_pairs",))))
    cases.append(("power", "basic", SimOptions(hands=1, side_bets=("bust_it", "hot_3"), insurance=True)))
    cases.append(("other", "basic", SimOptions(hands=3, insurance=True)))
    cases.append(("other", "optimal", SimOptions(hands=2)))
    cases.append(("european", "basic", SimOptions(hands=4, insurance=True)))
    cases.append(("european", "optimal", SimOptions(hands=3)))
    cases.append(("european", "basic", SimOptions(hands=2, bet=2)))  # a tiny bet: no insurance offered
    return cases


def _splits_per_round(trace) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [[ACTIONS[int(code)] for code in trace.actions[r, :trace.money[r, 3]]] for r in range(len(trace.money))]


@pytest.mark.parametrize(("variant", "play", "options"), _cases(), ids=lambda value: str(value)[:40])
def test_kernel_and_engine_play_identical_rounds(variant: str, play: str, options: SimOptions) -> None:
    rules = _rules(variant)
    strategy = load_strategy(rules, "basic")
    optimal = optimal_tables(rules) if play == "optimal" else None
    game = compile_game(rules, options)
    rounds = 1000
    summary, trace = trace_chunk(game, strategy_tables(strategy, optimal), chunk_seed(2024, 0, 1), rounds)
    decisions_seen = set()
    outcomes = dict.fromkeys(kernel.OUTCOMES, 0)
    for r in range(rounds):
        n_cards, n_actions = trace.money[r, 2], trace.money[r, 3]
        cards = [code_card(int(code)) for code in trace.cards[r, :n_cards]]
        kernel_actions = [ACTIONS[int(code)] for code in trace.actions[r, :n_actions]]
        engine = engine_round(rules, cards, strategy, options, optimal)
        where = f"round {r}: cards {[str(c) for c in cards]}"
        assert engine.shoe.position == n_cards, where
        if rules.deal.common_draw:
            # Identical players on common cards: the kernel plays one and scales the money.
            player = engine.players[0]
            taken = [str(op.action) for op in engine.operations if isinstance(op, ActionTaken) and op.player == player]
            assert len(engine.players) * len(taken) == len(engine.actions), where
        else:
            taken = [str(action) for action in engine.actions]
        assert taken == kernel_actions, where
        assert (engine.staked, engine.returned) == (trace.money[r, 0], trace.money[r, 1]), where
        decisions_seen.update(kernel_actions)
        for hand in engine.hands:
            outcomes[hand.outcome] += 1
    # Hands by outcome: the kernel's counts equal the engine's.
    counted = summary.stats[kernel.S_OUTCOMES:kernel.S_OUTCOMES + len(kernel.OUTCOMES)]
    assert dict(zip(kernel.OUTCOMES, counted.astype(int).tolist(), strict=True)) == outcomes
    # The case exercised the decisions it was meant to (a test that plays nothing proves nothing).
    if rules.surrender == "early" and play == "basic":
        assert {"surrender", "no-surrender"} <= decisions_seen
    if rules.split.max_hands > 2:
        assert any(kernel_actions.count("split") >= 2 for kernel_actions in _splits_per_round(trace))
    if options.cash_out:
        assert "cash-out" in decisions_seen
    else:
        assert {"hit", "stand", "split"} <= decisions_seen
        assert decisions_seen & {"double", "triple", "quadruple"} or rules.double.totals != "any"
    if options.insurance and rules.insurance.offered:
        assert "insurance" in decisions_seen
