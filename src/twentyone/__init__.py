"""twentyone: a blackjack platform that plays, serves, analyses and simulates casino games."""

__version__ = "0.1.0"
