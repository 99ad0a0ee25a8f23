"""Gymnasium environments for the five games (optional extra ``gym``): ``twentyone/<game>-v0``.

>>> import gymnasium
>>> env = gymnasium.make("twentyone/power-v0")
>>> env.action_space
Discrete(13)
"""

from __future__ import annotations

import gymnasium

from twentyone.gym.env import ACTIONS, BlackjackEnv
from twentyone.variants import VARIANTS

__all__ = ["ACTIONS", "BlackjackEnv"]

for _variant in VARIANTS:
    if f"twentyone/{_variant}-v0" not in gymnasium.registry:
        gymnasium.register(f"twentyone/{_variant}-v0", entry_point=BlackjackEnv, kwargs={"rules": _variant})
