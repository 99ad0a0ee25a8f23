"""The pure engine playing the simulated player: the reference the compiled kernel is held to.

:func:`engine_round` seats the same spots with the same bets as the kernel and plays a
round of :class:`~twentyone.core.round.Round` on a given shoe order with
:func:`~twentyone.sim.strategy.engine_action`, so the differential test can compare
cards, decisions and money round by round.

>>> from twentyone.variants import builtin_rules
>>> from twentyone.sim.strategy import load_strategy
>>> rules = builtin_rules("classic")
>>> game = engine_round(rules, ["TS", "6H", "7D", "TC", "9C"], load_strategy(rules, "basic"), SimOptions())
>>> [str(a) for a in game.actions], game.staked, game.returned
(['stand'], 10000, 20000)
"""

from __future__ import annotations

from collections.abc import Sequence

from twentyone.core.cards import Card
from twentyone.core.round import HandBet, Round
from twentyone.core.rules import Rules
from twentyone.core.shoe import Shoe
from twentyone.sim.optimal import OptimalTables
from twentyone.sim.strategy import BasicStrategy, engine_action
from twentyone.sim.tables import SimOptions


def seat_players(game: Round, rules: Rules, options: SimOptions) -> list[str]:
    """Place the kernel's bets: one player with ``hands`` spots, or one player per spot where
    the game gives each player a single hand (multiplayer, power)."""
    bet = HandBet(options.bet, {name: options.side_stake for name in options.side_bets})
    if rules.deal.hands_per_player >= options.hands:
        game.place_bets("p1", [bet] * options.hands)
        return ["p1"]
    names = [f"p{i + 1}" for i in range(options.hands)]
    for name in names:
        game.place_bets(name, [bet])
    return names


def engine_round(rules: Rules, cards: Sequence[Card | str], strategy: BasicStrategy, options: SimOptions,
                 optimal: OptimalTables | None = None) -> Round:
    """A settled round of the engine on the shoe ``cards`` (top first), played by ``strategy``
    (or by the ``optimal`` tables)."""
    game = Round(rules, Shoe.stacked(cards, rules.shoe.composition))
    seat_players(game, rules, options)
    game.deal()
    while game.decision() is not None:
        game.act(engine_action(game, strategy, options, optimal))
    return game
