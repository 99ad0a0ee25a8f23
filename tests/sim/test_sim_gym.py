"""The Gymnasium environment: the checker, real payouts (the engine's, card for card), finite shoes."""

from __future__ import annotations

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from twentyone.core.round import HandBet, replay  # noqa: E402
from twentyone.core.shoe import Shoe  # noqa: E402
from twentyone.gym import ACTIONS, BlackjackEnv  # noqa: E402
from twentyone.variants import VARIANTS  # noqa: E402


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_game_passes_the_environment_checker(variant: str) -> None:
    check_env(BlackjackEnv(variant, counts=True), skip_render_check=True)
    assert gymnasium.make(f"twentyone/{variant}-v0").action_space.n == len(ACTIONS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_random_agent_earns_exactly_what_the_engine_pays(variant: str) -> None:
    rules_env = BlackjackEnv(variant, hands=1 if variant in ("power", "multiplayer") else 2, bet=100,
                             side_bets={name: 10 for name in BlackjackEnv(variant).rules.side_bets})
    rng = np.random.default_rng(1)
    env_returns, engine_returns = [], []
    seen_actions = set()
    _, info = rules_env.reset(seed=5)
    for _ in range(400):
        game = rules_env.round
        assert game is not None
        start = rules_env._dealt_before
        total, done, actions = 0.0, False, []
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            if game.decision() is not None:
                actions.append(ACTIONS[action])
            _, reward, done, _, info = rules_env.step(action)
            total += reward
        seen_actions.update(actions)
        cards = game.shoe.order[start:game.shoe.position]
        bets = [("agent", [HandBet(100, {name: 10 for name in rules_env.side_bets})] * rules_env.hands)]
        engine = replay(rules_env.rules, Shoe.stacked(cards), bets, actions)
        env_returns.append(total)
        engine_returns.append((engine.returned - engine.staked) / 100)
        _, info = rules_env.reset()
    assert env_returns == engine_returns
    assert np.mean(env_returns) == np.mean(engine_returns)
    assert {"hit", "stand", "split"} <= seen_actions


def test_a_cut_card_shoe_carries_over_and_counts_see_every_card() -> None:
    env = BlackjackEnv("power", counts=True)
    observation, info = env.reset(seed=2)
    shoe = env.round.shoe if env.round else None
    rounds_in_shoe = 0
    while env.round is not None and env.round.shoe is shoe:
        done = False
        while not done:
            stand = ACTIONS.index("stand")
            action = stand if info["action_mask"][stand] else int(np.flatnonzero(info["action_mask"])[0])
            observation, _, done, _, info = env.step(action)
        assert observation["counts"].sum() == shoe.position  # every dealt card has been seen
        rounds_in_shoe += 1
        observation, info = env.reset()
    assert rounds_in_shoe > 10  # many rounds from one 352-card shoe, then a new shuffle
    assert observation["counts"].sum() < 20


def test_an_illegal_action_is_refused_without_changing_the_round() -> None:
    env = BlackjackEnv("classic")
    observation, info = env.reset(seed=3)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    after, reward, terminated, _, info = env.step(illegal)
    assert info["illegal"] and reward == 0.0 and not terminated
    assert all(np.array_equal(after[key], observation[key]) for key in observation)


def test_the_checker_warns_of_nothing() -> None:
    """Gymnasium's checker warned of a missing render_fps (a researcher's trial); it passes without a warning now."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(BlackjackEnv("classic"), skip_render_check=True)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"side_bets": {"perfect_pairs": 10}}, "no side bet 'perfect_pairs' in classic"),
    ({"side_bets": {"perfect_pairs": 0}, "rules": "first-person"}, "side bet 'perfect_pairs': a whole number"),
    ({"bet": 0}, "bet must be a whole number"),
])
def test_bad_bets_are_refused_when_the_environment_is_made(kwargs: dict[str, object], message: str) -> None:
    """Before, a side bet the game does not have failed at the first reset, not where it was given."""
    with pytest.raises(ValueError, match=message):
        BlackjackEnv(**kwargs)  # type: ignore[arg-type]
