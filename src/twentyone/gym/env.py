"""A Gymnasium environment for each game: the real engine, a finite shoe, the full action set.

One episode is one round of :class:`~twentyone.core.round.Round`. The agent answers every
decision the round asks for (insurance and even-money offers included) with one of the
13 actions of :class:`~twentyone.core.operations.Action`; ``info["action_mask"]`` (and
:meth:`BlackjackEnv.action_masks`) marks the legal ones. An illegal action is refused:
nothing changes, the reward is 0 and ``info["illegal"]`` is True.

A round the deal settles on its own (a blackjack, a dealer blackjack found by the peek)
asks for nothing: its observation shows decision ``none`` and the only legal action is
``stand``, which collects the result and ends the episode.

The shoe is finite and real: where the rules deal to a cut card it carries over from one
episode to the next until the cut card comes out; elsewhere it is reshuffled every round.
The reward, paid when the round settles, is the round's net result in main bets (side
bets, insurance, doubles and splits included).

>>> env = BlackjackEnv("classic")
>>> observation, info = env.reset(seed=3)
>>> [ACTIONS[i] for i in range(len(ACTIONS)) if info["action_mask"][i]]
['hit', 'stand', 'double']
>>> observation, reward, terminated, truncated, info = env.step(ACTIONS.index("stand"))
>>> terminated, reward
(True, -1.0)
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from twentyone.core.cards import RANKS, Card
from twentyone.core.hand import hand_value
from twentyone.core.operations import Action
from twentyone.core.round import HandBet, Round
from twentyone.core.rules import Rules
from twentyone.core.shoe import Shoe
from twentyone.variants import builtin_rules

ACTIONS: tuple[str, ...] = tuple(str(action) for action in Action)
DECISIONS = ("none", "play", "insurance", "even-money", "surrender")
MAX_CARDS = 21  # a hand of 21 or less holds at most 21 cards


def _rank_code(card: Card) -> int:
    return RANKS.index(card.rank) + 1


class BlackjackEnv(gymnasium.Env[dict[str, Any], np.int64]):
    """One player at a table of ``rules`` (a built-in game's id or a :class:`Rules`).

    Parameters
    ----------
    rules : str or Rules
        The game.
    hands : int
        Spots the agent plays each round (up to the game's hands per player).
    bet : int
        Main bet per spot, in minor units (the reward is in these bets).
    side_bets : dict, optional
        Side-bet name -> stake placed on every spot each round.
    counts : bool
        Add ``counts``: cards of each rank seen since the last shuffle (A..K), for counters.
    """

    # render_fps: gymnasium's checker asks for one (a frame per decision, for a recorder that plays them back).
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012 (gymnasium.Env declares it)

    def __init__(self, rules: str | Rules = "classic", hands: int = 1, bet: int = 100,
                 side_bets: dict[str, int] | None = None, counts: bool = False,
                 render_mode: str | None = None) -> None:
        self.rules = builtin_rules(rules) if isinstance(rules, str) else rules
        if not 1 <= hands <= self.rules.deal.hands_per_player:
            raise ValueError(f"hands must be from 1 to {self.rules.deal.hands_per_player} in {self.rules.id}.")
        if isinstance(bet, bool) or not isinstance(bet, int) or bet < 1:
            raise ValueError(f"bet must be a whole number of minor units, 1 or more, got {bet!r}.")
        for name, stake in (side_bets or {}).items():  # refused here, not at the first reset (a researcher's trial)
            if name not in self.rules.side_bets:
                raise ValueError(f"no side bet {name!r} in {self.rules.id} (offered: "
                                 f"{', '.join(self.rules.side_bets) or 'none'}).")
            if isinstance(stake, bool) or not isinstance(stake, int) or stake < 1:
                raise ValueError(f"side bet {name!r}: a whole number of minor units, 1 or more, got {stake!r}.")
        self.hands = hands
        self.bet = bet
        self.side_bets = dict(side_bets or {})
        self.counts = counts
        self.render_mode = render_mode
        self.max_hands = hands * self.rules.split.max_hands
        self.action_space = spaces.Discrete(len(ACTIONS))
        observation: dict[str, spaces.Space[Any]] = {
            "cards": spaces.Box(0, len(RANKS), shape=(self.max_hands, MAX_CARDS), dtype=np.int64),
            "totals": spaces.Box(0, 31, shape=(self.max_hands,), dtype=np.int64),
            "soft": spaces.MultiBinary(self.max_hands),
            "current": spaces.Discrete(self.max_hands + 1),  # 0: no hand to play (an offer or the end)
            "dealer_up": spaces.Discrete(len(RANKS) + 1),
            "decision": spaces.Discrete(len(DECISIONS)),
        }
        if counts:
            size = self.rules.shoe.composition.size
            observation["counts"] = spaces.Box(0, size, shape=(len(RANKS),), dtype=np.int64)
        self.observation_space = spaces.Dict(observation)
        self._rng = random.Random(0)
        self._shoe: Shoe | None = None
        self._seen = np.zeros(len(RANKS), dtype=np.int64)
        self.round: Round | None = None
        self._finished = False
        self._dealt_before = 0

    # ------------------------------------------------------------------ gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None or self._shoe is None:
            self._rng = random.Random(int(self.np_random.integers(2**63)))
            self._shoe = None
        shoe = self._shoe
        if shoe is None or shoe.needs_shuffle:
            shoe = Shoe.shuffled(self.rules.shoe.composition, self._rng, self.rules.shoe.cut_card)
            self._seen[:] = 0
        self._shoe = shoe
        self._dealt_before = shoe.position
        game = Round(self.rules, shoe)
        game.place_bets("agent", [HandBet(self.bet, dict(self.side_bets))] * self.hands)
        game.deal()
        self.round = game
        self._finished = False
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        game = self.round
        if game is None or self._finished:
            raise RuntimeError("The round is over: call reset() first.")
        name = ACTIONS[int(action)]
        if not self.action_masks()[int(action)]:
            return self._observation(), 0.0, False, False, {**self._info(), "illegal": True}
        if game.decision() is not None:
            game.act(name)
        terminated = game.decision() is None
        reward = 0.0
        if terminated:
            reward = (game.returned - game.staked) / self.bet
            self._remember_cards()
            self._finished = True
        return self._observation(), reward, terminated, False, self._info()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.round is None:
            return None
        game = self.round
        hands = "  ".join(" ".join(str(card) for card in hand.cards) for hand in game.hands)
        dealer = " ".join(str(card) for card in game.dealer_cards)
        return f"dealer: {dealer} | hands: {hands}"

    # ------------------------------------------------------------------ helpers
    def action_masks(self) -> np.ndarray:
        """Which of the 13 actions are legal now (the MaskablePPO convention)."""
        mask = np.zeros(len(ACTIONS), dtype=np.int8)
        if self.round is not None and not self._finished:
            for action in self.round.legal_actions():
                mask[ACTIONS.index(str(action))] = 1
            if self.round.decision() is None:
                mask[ACTIONS.index("stand")] = 1  # collect a round the deal settled
        return mask

    def _remember_cards(self) -> None:
        """Every card this round dealt is face up by the end: the counts see them."""
        assert self._shoe is not None
        for card in self._shoe.order[self._dealt_before:self._shoe.position]:
            self._seen[RANKS.index(card.rank)] += 1
        self._dealt_before = self._shoe.position

    def _observation(self) -> dict[str, Any]:
        game = self.round
        assert game is not None
        cards = np.zeros((self.max_hands, MAX_CARDS), dtype=np.int64)
        totals = np.zeros(self.max_hands, dtype=np.int64)
        soft = np.zeros(self.max_hands, dtype=np.int8)
        for i, hand in enumerate(game.hands):
            for j, card in enumerate(hand.cards):
                cards[i, j] = _rank_code(card)
            value = hand_value(hand.cards)
            totals[i] = min(value.total, 31)
            soft[i] = value.soft
        decision = game.decision()
        current = 0
        if decision is not None and decision.kind == "play":
            current = 1 + [(h.seat, h.hand) for h in game.hands].index((decision.seat, decision.hand))
        observation: dict[str, Any] = {
            "cards": cards,
            "totals": totals,
            "soft": soft,
            "current": current,
            "dealer_up": _rank_code(game.dealer_up),
            "decision": DECISIONS.index(decision.kind) if decision is not None else 0,
        }
        if self.counts:
            seen = self._seen.copy()
            visible = [card for hand in game.hands for card in hand.cards]
            visible += list(game.dealer_cards) if decision is not None else []
            if decision is None:
                seen[:] = self._seen  # the round's cards were added when it settled
            else:
                for card in visible:
                    seen[RANKS.index(card.rank)] += 1
            observation["counts"] = seen
        return observation

    def _info(self) -> dict[str, Any]:
        game = self.round
        assert game is not None
        mask = self.action_masks()
        return {"action_mask": mask, "legal_actions": [ACTIONS[i] for i in np.flatnonzero(mask)]}
