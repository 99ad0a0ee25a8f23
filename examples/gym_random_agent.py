"""The Gymnasium loop on a real blackjack game: a random agent that only picks legal actions.

Install the extra first (``pip install 'twentyone[gym]'``), then run:

    python examples/gym_random_agent.py [GAME] [EPISODES]

Swap ``choose`` for your agent: the observation holds the hands, the dealer's up card, the
decision asked for and (``counts=True``) the cards of each rank seen since the shuffle;
``info["action_mask"]`` marks the legal actions.
"""

from __future__ import annotations

import sys

import gymnasium
import numpy as np

import twentyone.gym  # noqa: F401  (registers twentyone/<game>-v0)
from twentyone.gym import ACTIONS


def choose(observation: dict, mask: np.ndarray, rng: np.random.Generator) -> int:
    """A random legal action (an agent would use the observation here)."""
    return int(rng.choice(np.flatnonzero(mask)))


def main() -> None:
    game = sys.argv[1] if len(sys.argv) > 1 else "power"
    episodes = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    env = gymnasium.make(f"twentyone/{game}-v0", counts=True)
    rng = np.random.default_rng(0)
    returns = []
    taken = dict.fromkeys(ACTIONS, 0)
    observation, info = env.reset(seed=0)
    for _ in range(episodes):
        total = 0.0
        done = False
        while not done:
            action = choose(observation, info["action_mask"], rng)
            taken[ACTIONS[action]] += 1
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        observation, info = env.reset()
    mean = float(np.mean(returns))
    se = float(np.std(returns, ddof=1) / np.sqrt(len(returns)))
    print(f"{game}: {episodes} rounds, mean return {mean:+.4f} ± {1.96 * se:.4f} main bets per round (random play)")
    print("actions taken:", {name: count for name, count in taken.items() if count})


if __name__ == "__main__":
    main()
