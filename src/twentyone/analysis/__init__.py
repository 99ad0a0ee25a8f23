"""Exact game maths over shoe compositions: dealer outcomes, player EV, strategies, returns.

Everything here is computed, not sampled: dealer outcome distributions by
weighted enumeration of the dealer's final hands, player expected values by
recursion over the player's hand compositions with exact card removal, and
side-bet returns by enumeration of the deals they depend on.
"""
