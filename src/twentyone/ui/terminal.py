"""Terminal play: sit at any of the games in a terminal, one key per action.

The screen is drawn with rich and fits 80×24. Keys are read one at a time from
a terminal (raw mode), or character by character from a pipe, so a session can
be scripted: ``printf 'bdsq' | twentyone play classic --seed 1``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from twentyone.core.betting import MAIN, BetLimits, BetSlip, BetSlipError
from twentyone.core.cards import Card
from twentyone.core.hand import format_total, hand_value
from twentyone.core.operations import Action
from twentyone.core.round import IllegalActionError, Phase, Round
from twentyone.core.rules import SIDE_BET_LINE_WORDS, SIDE_BET_TITLES, Rules
from twentyone.core.shoe import RandomBits, Shoe, system_rng

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
PLAY_KEYS = {
    "h": Action.HIT, "s": Action.STAND, "d": Action.DOUBLE, "t": Action.TRIPLE,
    "f": Action.QUADRUPLE, "p": Action.SPLIT, "r": Action.SURRENDER, "c": Action.CASH_OUT,
}
OFFER_KEYS = {
    "insurance": {"y": Action.INSURANCE, "n": Action.NO_INSURANCE},
    "even-money": {"y": Action.EVEN_MONEY, "n": Action.NO_EVEN_MONEY},
    "surrender": {"y": Action.SURRENDER, "n": Action.NO_SURRENDER},
}
SIDE_BET_KEYS = {"perfect_pairs": "p", "any_pair": "a", "21+3": "t", "hot_3": "o", "bust_it": "k"}


def money(amount: int) -> str:
    """Minor units as a currency amount: ``123456`` -> ``'1,234.56'``.

    >>> money(123456), money(-50)
    ('1,234.56', '-0.50')
    """
    sign = "-" if amount < 0 else ""
    whole, cents = divmod(abs(amount), 100)
    return f"{sign}{whole:,}.{cents:02d}"


def signed(amount: int) -> str:
    """What a result did to the balance: ``+4.00``, ``−1.00``, or ``even``.

    >>> signed(400), signed(-100), signed(0)
    ('+4.00', '−1.00', 'even')
    """
    if amount == 0:
        return "even"
    return f"+{money(amount)}" if amount > 0 else f"\u2212{money(-amount)}"


def card_text(card: Card | None) -> Text:
    """A card with its suit symbol, red for hearts and diamonds; None is a face-down card."""
    if card is None:
        return Text("▒▒", style="bold white on blue")
    rank = "10" if card.rank == "T" else card.rank
    style = "bold red on white" if card.is_red else "bold black on white"
    return Text(f"{rank}{SUIT_SYMBOLS[card.suit]}", style=style)


def cards_text(cards: tuple[Card | None, ...]) -> Text:
    text = Text()
    for index, card in enumerate(cards):
        if index:
            text.append(" ")
        text.append_text(card_text(card))
    return text


def read_keys(stream: object = None) -> Iterator[str]:
    """Yield single keys: raw mode on a terminal, one character at a time from a pipe."""
    stdin = stream or sys.stdin
    if hasattr(stdin, "isatty") and stdin.isatty():
        import termios
        import tty

        fd = stdin.fileno()
        saved = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd)
            while True:
                key = stdin.read(1)
                if key in ("", "\x03", "\x04"):
                    return
                yield key
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    else:
        while True:
            key = stdin.read(1)
            if key == "":
                return
            if not key.isspace():
                yield key


@dataclass
class TerminalTable:
    """One player at one table in a terminal: betting, playing and results, round after round."""

    rules: Rules
    balance: int
    rng: RandomBits
    console: Console
    chips: tuple[int, ...] = (100, 500, 2500, 10000)
    limits: BetLimits = field(default_factory=lambda: BetLimits({MAIN: (100, 50000)}))
    message: str = ""
    last_bets: dict[tuple[int, str], int] = field(default_factory=dict)
    shoe: Shoe | None = None
    game: Round | None = None
    selected_spot: int = 1
    rounds: int = 0
    shoe_source: Callable[[], Shoe] | None = None  # tests stack the shoe; play shuffles


    def __post_init__(self) -> None:
        side_limits = {name: (100, 10000) for name in self.rules.side_bets}
        self.limits = BetLimits({**side_limits, **self.limits.per_type})
        self.slip = self._new_slip()

    def _new_slip(self) -> BetSlip:
        return BetSlip(self.limits, self.chips, self.balance, self.rules.deal.hands_per_player,
                       tuple(self.rules.side_bets))

    # ------------------------------------------------------------ the loop
    def run(self, keys: Iterator[str]) -> None:
        self.draw()
        for key in keys:
            if not self.press(key):
                break
            self.draw()
        self.console.print(f"Goodbye. Final balance {money(self.balance)} after {self.rounds} rounds.")

    def press(self, key: str) -> bool:
        """Handle one key; False means quit."""
        self.message = ""
        try:
            if self.game is None or self.game.phase is Phase.SETTLED:
                return self._betting_key(key)
            self._playing_key(key)
        except BetSlipError as error:
            self.message = error.sentence(money)  # amounts written as money, not minor units
        except IllegalActionError as error:
            self.message = str(error)
        return True

    def _betting_key(self, key: str) -> bool:
        slip = self.slip
        if key == "q":
            return False
        if self.game is not None:  # a settled round on screen: any key starts betting again
            self.game = None
        if key.isdigit() and 1 <= int(key) <= slip.spots:
            self.selected_spot = int(key)
        elif key == "c":
            enabled = slip.enabled_chips() or slip.chips
            later = [chip for chip in enabled if chip > slip.chip]
            slip.select_chip(later[0] if later else enabled[0])
        elif key == "b":
            slip.place(self.selected_spot)
        elif key in self._side_keys():
            slip.place(self.selected_spot, self._side_keys()[key])
        elif key == "u":
            slip.undo()
        elif key == "x":
            slip.double_all()
        elif key == "r":
            slip.rebet(self.last_bets)
        elif key == "d":
            self._deal()
        else:
            self.message = f"Key {key!r} does nothing while betting; see the keys below."
        return True

    def _side_keys(self) -> dict[str, str]:
        return {SIDE_BET_KEYS[side.kind]: name for name, side in self.rules.side_bets.items()}

    def _deal(self) -> None:
        hand_bets = self.slip.hand_bets()
        if self.shoe is None or self.shoe.needs_shuffle or self.shoe.remaining < 40:
            if self.shoe_source is not None:
                self.shoe = self.shoe_source()
            else:
                self.shoe = Shoe.shuffled(self.rules.shoe.composition, self.rng, self.rules.shoe.cut_card)
        self.last_bets = dict(self.slip.bets)
        self.game = Round(self.rules, self.shoe)
        self.game.place_bets("you", hand_bets)
        self.balance -= self.slip.total
        self.game.deal()
        self._after_action()

    def _playing_key(self, key: str) -> None:
        game = self.game
        assert game is not None
        decision = game.decision()
        assert decision is not None
        keys = OFFER_KEYS.get(decision.kind, PLAY_KEYS)
        if key == "?":
            self.message = self._hint_text()
            return
        if key not in keys:
            self.message = f"Key {key!r} is not an action here; legal: {self._legal_keys_text()}."
            return
        action = keys[key]
        game.verify(action)
        cost = game.cost_of(action)
        if cost > self.balance:
            self.message = f"Cannot {action}: it needs {money(cost)} and the balance is {money(self.balance)}."
            return
        self.balance -= cost
        game.act(action)
        self._after_action()

    def _after_action(self) -> None:
        game = self.game
        assert game is not None
        if game.phase is Phase.SETTLED:
            self.balance += game.returned
            self.rounds += 1
            net = game.returned - game.staked
            self.message = f"Round over: {'won' if net > 0 else 'lost' if net < 0 else 'even'} {money(abs(net))}."
            self.slip = self._new_slip()

    def _hint_text(self) -> str:
        """The EV of each legal action (per unit bet), best first, from the exact maths."""
        from twentyone.analysis.hints import hint

        game = self.game
        assert game is not None
        decision = game.decision()
        assert decision is not None
        hand = next(h for h in game.hands if (h.seat, h.hand) == (decision.seat, decision.hand))
        legal = [str(action) for action in game.legal_actions()]
        first = len(hand.cards) == 2 and not hand.from_split
        ranked = hint(game.rules, hand.cards, game.dealer_up, legal, first_decision=first)
        if not ranked:
            return "No hint for this offer."
        return "Hint (EV per unit bet): " + "  ".join(f"{action} {ev:+.3f}" for action, ev in ranked)

    def _legal_keys_text(self) -> str:
        game = self.game
        assert game is not None
        decision = game.decision()
        assert decision is not None
        keys = OFFER_KEYS.get(decision.kind, PLAY_KEYS)
        return ", ".join(f"[{key}] {action}" for key, action in keys.items() if action in game.legal_actions())

    # ------------------------------------------------------------ drawing
    def draw(self) -> None:
        self.console.clear()
        self.console.print(self.render())

    def render(self) -> Group:
        rules = self.rules
        header = Table.grid(expand=True)
        header.add_column()
        header.add_column(justify="right")
        header.add_row(Text(rules.name, style="bold green"),
                       Text(f"Balance {money(self.balance)}", style="bold yellow"))
        parts: list[object] = [header]
        if self.game is not None:
            parts += self._render_round(self.game)
        else:
            parts += self._render_betting()
        parts.append(Text(self.message or " ", style="bold cyan"))
        parts.append(self._render_keys())
        return Group(*parts)  # type: ignore[arg-type]

    def _render_round(self, game: Round) -> list[object]:
        shown: tuple[Card | None, ...] = game.dealer_cards
        if game.rules.deal.hole_card and len(shown) == 1:
            shown = (*shown, None)
        dealer = Text("Dealer  ")
        dealer.append_text(cards_text(shown))
        dealer_value = hand_value(game.dealer_cards)
        dealer.append(f"   {'BUST ' if dealer_value.bust else ''}{format_total(dealer_value)}")
        if game.dealer_blackjack:
            dealer.append("  BLACKJACK", style="bold red")
        table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
        for column in ("", "Hand", "Cards", "Total", "Stake", "Result"):
            table.add_column(column)
        decision = game.decision()
        for hand in game.hands:
            active = decision is not None and decision.seat == hand.seat and decision.hand == hand.hand
            total = "BJ" if hand.status == "blackjack" else format_total(hand.value)
            if hand.value.bust:
                total = f"BUST {total}"
            result = ""
            if hand.outcome is not None:
                result = f"{hand.outcome} {signed(hand.returned - hand.stake)}"
            table.add_row("▶" if active else "", f"{hand.seat}" + (f".{hand.hand}" if hand.from_split else ""),
                          cards_text(hand.cards), total, money(hand.stake), result,
                          style="bold" if active else None)
        sides = [f"{SIDE_BET_TITLES[game.rules.side_bets[s.item].kind]} #{s.seat}: "
                 f"{SIDE_BET_LINE_WORDS[game.rules.side_bets[s.item].kind].get(s.result, s.result)}, "
                 f"{signed(s.returned - s.stake)}"
                 for s in game.settlements if s.item in game.rules.side_bets]
        sides += [f"Insurance #{s.seat}: {'paid 2:1' if s.result == 'win' else 'lost'}, {signed(s.returned - s.stake)}"
                  for s in game.settlements if s.item == "insurance"]
        parts: list[object] = [Panel(dealer, title="Dealer", border_style="green"), table]
        if sides:
            parts.append(Text("  ".join(sides), style="magenta"))
        return parts

    def _render_betting(self) -> list[object]:
        slip = self.slip
        table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
        table.add_column("Spot")
        table.add_column("Main")
        for name in self.rules.side_bets:
            table.add_column(SIDE_BET_TITLES.get(self.rules.side_bets[name].kind, name))
        for spot in range(1, slip.spots + 1):
            row = ["▶ " + str(spot) if spot == self.selected_spot else "  " + str(spot),
                   money(slip.bets.get((spot, MAIN), 0))]
            row += [money(slip.bets.get((spot, name), 0)) for name in self.rules.side_bets]
            table.add_row(*row)
        chips = Text("Chips: ")
        for chip in slip.chips:
            style = "bold reverse" if chip == slip.chip else ("" if chip in slip.enabled_chips() else "dim")
            chips.append(f" {money(chip)} ", style=style)
        chips.append(f"   TOTAL BET {money(slip.total)}", style="bold")
        low, high = self.limits.of(MAIN)
        limits = Text(f"BET LIMITS main {money(low)}–{money(high)}", style="dim")
        summary = Text(self.rules.summary, style="dim")
        return [Panel(table, title="Place your bets", border_style="green"), chips, limits, summary]

    def _render_keys(self) -> Text:
        game = self.game
        if game is None or game.phase is Phase.SETTLED:
            side = "  ".join(f"[{key}] {SIDE_BET_TITLES[self.rules.side_bets[name].kind]}"
                             for key, name in self._side_keys().items())
            spots = f"[1-{self.slip.spots}] spot  " if self.slip.spots > 1 else ""
            keys = f"{spots}[c] chip  [b] bet  [u] undo  [x] x2  [r] rebet  [d] deal  [q] quit"
            return Text(keys + (f"\nSide bets on this spot: {side}" if side else ""), style="bold")
        decision = game.decision()
        assert decision is not None
        if decision.kind != "play":
            cost = game.cost_of(OFFER_KEYS[decision.kind]["y"])
            price = f" for {money(cost)}" if cost else ""
            offer = decision.kind.replace("-", " ").title()
            return Text(f"{offer}{price} on hand {decision.seat}? [y]es [n]o  [?] hint", style="bold")
        labels = []
        for key, action in PLAY_KEYS.items():
            if action in game.legal_actions():
                label = f"[{key}] {action}"
                if action is Action.CASH_OUT:
                    label += f" {money(game.offer_amount(Action.CASH_OUT))}"
                labels.append(label)
        return Text("  ".join(labels) + "  [?] hint", style="bold")


def play(rules: Rules, balance: int, seed: int | None, console: Console | None = None,
         keys: Iterator[str] | None = None, rng_factory: Callable[[int], RandomBits] | None = None) -> int:
    """Run terminal play until the player quits or input ends; returns the final balance."""
    rng: RandomBits = (rng_factory or random.Random)(seed) if seed is not None else system_rng()
    table = TerminalTable(rules, balance, rng, console or Console())
    table.run(keys if keys is not None else read_keys())
    return table.balance
