"""Terminal play: sit at any of the games in a terminal, one key per action.

The screen is drawn with rich and fits 80×24. Keys are read one at a time from
a terminal (raw mode), or character by character from a pipe, so a session can
be scripted: ``printf 'bdsq' | twentyone play classic --seed 1``.

Why one module: the screen, its keys and the round it drives are one small program; its parts
share the table's state and would only pass it around if split.
"""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TextIO, TypedDict

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from twentyone.core.betting import MAIN, BetLimits, BetSlip, BetSlipError
from twentyone.core.cards import Card, parse_card
from twentyone.core.hand import HandValue, format_total
from twentyone.core.money import format_money
from twentyone.core.operations import OFFER_ANSWERS, Action
from twentyone.core.round import ACTION_WORDS, IllegalActionError, Phase, Round
from twentyone.core.rules import Rules
from twentyone.core.shoe import RandomBits, Shoe, system_rng
from twentyone.core.sidebets import SIDE_BETS
from twentyone.core.view import dealer_json, hand_json

PLAYER = "you"  # the one player at a terminal table
SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
PLAY_KEYS = {
    "h": Action.HIT, "s": Action.STAND, "d": Action.DOUBLE, "t": Action.TRIPLE,
    "f": Action.QUADRUPLE, "p": Action.SPLIT, "r": Action.SURRENDER, "c": Action.CASH_OUT,
}
# [y]es and [n]o answer each offer with the engine's own accept and decline.
OFFER_KEYS = {kind: {"y": accept, "n": decline} for kind, (accept, decline) in OFFER_ANSWERS.items()}
SIDE_BET_KEYS = {"perfect_pairs": "p", "any_pair": "a", "21+3": "t", "hot_3": "o", "bust_it": "k"}
INSURANCE_WORDS = {"win": "dealer blackjack", "lose": "no dealer blackjack"}


def side_bet_title(kind: str) -> str:
    """A side bet's name as the table shows it, from the one registry of side-bet kinds.

    >>> side_bet_title("bust_it"), side_bet_title("21+3")
    ('Bust It', '21+3')
    """
    spec = SIDE_BETS.get(kind)
    return spec.title if spec else kind


def side_bet_words(kind: str, result: str) -> str:
    """A side bet's result as a player reads it: the registry's words for the line hit.

    >>> side_bet_words("bust_it", "bust_4"), side_bet_words("perfect_pairs", "lose")
    ('dealer busts with 4 cards', 'no win')
    """
    spec = SIDE_BETS.get(kind)
    return result_words(spec.line_titles if spec is not None else {}, result)


def result_words(line_titles: Mapping[str, str], result: str) -> str:
    """A side bet's result in the words of its paytable's lines (``line_titles``; a server's table gives them as
    ``side_bet_lines``); a loss or a push in the same words whatever the bet.

    >>> result_words({"perfect": "perfect pair"}, "perfect"), result_words({}, "lose"), result_words({}, "bust_3")
    ('perfect pair', 'no win', 'bust 3')
    """
    if result in line_titles:
        return line_titles[result]
    return {"lose": "no win", "push": "stake returned"}.get(str(result), str(result).replace("_", " "))


def insurance_taken_text(seat: int, stake: str, odds: str | None) -> str:
    """An insurance taken and not yet settled (single deck settles it with the hands), as the round shows it:
    before, the local table said nothing of it until the round settled, though the balance had paid for it.

    >>> insurance_taken_text(1, "$2.50", "2:1")
    'Insurance #1: taken, $2.50, paid 2:1 on a dealer blackjack'
    """
    return f"Insurance #{seat}: taken, {stake}" + (f", paid {odds} on a dealer blackjack" if odds else "")


def balance_text(balance: int, on_table: int, currency: str) -> str:
    """The header's balance, less the bets on the table not yet taken from it (the slip's, or those held in a round
    still forming), said beside it, as the web page's header says them. Before, the terminal showed the balance
    whole while the page took the bets off it as they were placed (a trial of players).

    >>> balance_text(100000, 1500, "USD"), balance_text(100000, 0, "GBP")
    ('Balance $985.00 ($15.00 on the table)', 'Balance £1,000.00')
    """
    text = f"Balance {format_money(balance - on_table, currency)}"
    return f"{text} ({format_money(on_table, currency)} on the table)" if on_table else text


def net_text(net: int, currency: str) -> str:
    """What a bet won or lost: ``+$4.00``, ``−$1.00``, or ``even``.

    >>> net_text(400, "USD"), net_text(-100, "GBP"), net_text(0, "EUR")
    ('+$4.00', '−£1.00', 'even')
    """
    return "even" if net == 0 else format_money(net, currency, signed=True)


# A number of minutes or days after those words is no amount: "a session time limit of 1 minute" read "$0.01 minute"
# (a trial of players).
_BARE_AMOUNT = re.compile(r"\b(of|another|needs|is|a) (\d+)\b(?! (?:minutes?|days?|seconds?)\b)")


def amounts_in_currency(message: str, currency: str) -> str:
    """The amounts in a bet control's refusal (minor units after "of", "needs", ...) in ``currency``.

    >>> amounts_in_currency("Your session time limit of 1 minute is reached: after a break of 30 minutes", "USD")
    'Your session time limit of 1 minute is reached: after a break of 30 minutes'
    >>> amounts_in_currency("The maximum bet of 30000 is reached on this spot.", "USD")
    'The maximum bet of $300.00 is reached on this spot.'
    >>> amounts_in_currency("Doubling every bet needs 2000 but the balance is 1500.", "GBP")
    'Doubling every bet needs £20.00 but the balance is £15.00.'
    """
    return _BARE_AMOUNT.sub(lambda match: f"{match[1]} {format_money(int(match[2]), currency)}", message)


def short_money(amount: int, currency: str) -> str:
    """An amount without a zero minor part, the currency where it is written.

    >>> short_money(2500, "USD"), short_money(2500, "CHF"), short_money(250, "USD")
    ('$25', '25 CHF', '$2.50')
    """
    text = format_money(amount, currency)
    return text.replace(".00", "", 1) if amount % 100 == 0 else text


def pays_text(lines: Sequence[Sequence[Any]]) -> str:
    """What a side bet pays, best line first, as the table lists it under its column (the PAYOUTS panel of the web
    table names each line).

    >>> pays_text([("perfect", 25), ("colored", 12), ("mixed", 6)])
    '25/12/6:1'
    """
    return "/".join(str(pays) for _, pays in lines) + ":1"


def paytable_text(title: str, lines: Sequence[Sequence[Any]], line_titles: Mapping[str, str]) -> str:
    """A side bet's paytable with each line named, best first, as ``?`` tells it while betting: the pays line under
    the bets gives the odds alone ("21+3 100/40/30/10/5:1"), and nothing said which hand paid 100 (a terminal trial).

    >>> paytable_text("Perfect Pairs", [("perfect", 25), ("colored", 12)], {"perfect": "perfect pair"})
    'Perfect Pairs: perfect pair 25:1, colored 12:1'
    """
    return f"{title}: " + ", ".join(f"{result_words(line_titles, line)} {pays}:1" for line, pays in lines)


PAYTABLES_KEY = "[?] paytables"  # the betting keys' own, where the table has side bets


@dataclass(frozen=True)
class PaysLine:
    """Entries on a line, `` · `` between them, wrapped between entries and never inside one (a bet's name and its
    odds stay together) to the width it is drawn in; an entry wider than that folds."""

    entries: tuple[str, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        lines = [""]
        for entry in self.entries:
            joined = f"{lines[-1]} · {entry}" if lines[-1] else entry
            if lines[-1] and cell_len(joined) > options.max_width:
                lines.append(f"· {entry}")
            else:
                lines[-1] = joined
        for line in lines:
            yield Text(line, style="dim", overflow="fold")


def pays_line(blackjack: str, side_pays: Sequence[tuple[str, str]]) -> Padding:
    """What each bet pays, on a line under the bets: a blackjack, then each side bet's lines, best first, and where
    there are side bets the key that names their lines (:data:`PAYTABLES_KEY`). A line, not a row under the columns,
    so that it wraps between bets: as a row, the longer paytables were cut at 80 columns ("100/35/25/8/5:…") and
    folded mid-number at 60; wrapped as words, a bet's name was left at a line's end and its odds on the next
    (terminal trials).

    >>> console = Console(width=40, color_system=None)
    >>> with console.capture() as shown:
    ...     console.print(pays_line("3:2", [("21+3", "100/40/30/10/5:1"), ("Perfect Pairs", "30/10/5:1")]))
    >>> print("\\n".join(line.rstrip() for line in shown.get().splitlines()))
     Pays  BJ 3:2 · 21+3 100/40/30/10/5:1
     · Perfect Pairs 30/10/5:1
     · [?] paytables
    """
    entries = (f"Pays  BJ {blackjack}", *(f"{title} {pays}" for title, pays in side_pays),
               *([PAYTABLES_KEY] if side_pays else []))
    return Padding(PaysLine(entries), (0, 1))  # in line with the table's cells, wrapped lines too


def limits_text(low: int, high: int, currency: str) -> str:
    """A bet's limits as the table lists them under its column: the currency code once, where it is written after.

    >>> limits_text(100, 500000, "USD"), limits_text(100, 20000, "CHF")
    ('$1–$5,000', '1–200 CHF')
    """
    low_text, high_text = short_money(low, currency), short_money(high, currency)
    code = f" {currency}"
    if low_text.endswith(code) and high_text.endswith(code):  # "1–5,000 CHF", not "1 CHF–5,000 CHF"
        low_text = low_text.removesuffix(code)
    return f"{low_text}–{high_text}"


def bets_table(side_titles: Sequence[str]) -> Table:
    """The betting panel's table: a row a spot, a column a bet (the main bet, then each side bet). A cell too wide
    for a narrow terminal folds onto a second line: cut with an ellipsis, the limits read "€1–€5,0…" and the pays
    "100/35…" at 60 columns (a terminal trial).

    >>> [column.header for column in bets_table(["21+3"]).columns]
    ['Spot', 'Main', '21+3']
    """
    table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
    for title in ("Spot", "Main", *side_titles):
        table.add_column(title, overflow="fold")
    return table


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


def dealer_text(dealer: Mapping[str, Any]) -> Text:
    """The dealer's line from a round view's ``dealer`` (``core.view.dealer_json``, which the server sends too): the
    face-down card where it lies (multiplayer deals it first: it turns over in place), the visible total, BLACKJACK.

    >>> dealer_text({"cards": ["8S"], "total": 8, "soft": False, "hidden": 1, "hidden_at": 0, "blackjack": False}).plain
    'Dealer  ▒▒ 8♠   8'
    >>> dealer_text({"cards": ["AS", "KH"], "total": 21, "soft": True, "hidden": 0, "hidden_at": None,
    ...              "blackjack": True}).plain
    'Dealer  A♠ K♥   21  BLACKJACK'
    >>> dealer_text({"cards": ["AS", "9H"], "total": 20, "soft": True, "hidden": 0, "hidden_at": None,
    ...              "blackjack": False}).plain  # played out: its best total, not 10/20 (a trial)
    'Dealer  A♠ 9♥   20'
    """
    cards: list[Card | None] = [parse_card(text) for text in dealer["cards"]]
    at = len(cards) if dealer.get("hidden_at") is None else int(dealer["hidden_at"])
    shown = (*cards[:at], *[None] * int(dealer.get("hidden") or 0), *cards[at:])
    line = Text("Dealer  ")
    line.append_text(cards_text(shown))
    if cards:  # none yet while a shared round takes bets
        value = HandValue(int(dealer["total"]), bool(dealer["soft"]))
        # Both totals of a soft hand only while a card lies face down; turned over, the dealer's play is done.
        total = format_total(value) if dealer.get("hidden") else str(value.total)
        line.append(f"   {'BUST ' if value.bust else ''}{total}")
    if dealer.get("blackjack"):
        line.append("  BLACKJACK", style="bold red")
    return line


def hand_cells(hand: Mapping[str, Any], currency: str) -> tuple[Text, str, str]:
    """A hand's cards, total and result as the hands' table shows them, from a round view's hand
    (``core.view.hand_json``, which the server sends too).

    >>> cards, total, result = hand_cells({"cards": ["TS", "QH", "5D"], "total": 25, "soft": False, "stake": 100,
    ...                                    "status": "bust", "outcome": "lose", "returned": 0}, "USD")
    >>> cards.plain, total, result
    ('10♠ Q♥ 5♦', 'BUST 25', 'lose −$1.00')
    >>> [hand_cells({"cards": ["AS", "8H"], "total": 19, "soft": True, "stake": 100, "status": status,
    ...              "outcome": None, "returned": None}, "USD")[1] for status in ("playing", "stood")]
    ['9/19', '19']
    >>> hand_cells({"cards": ["AS", "KH"], "total": 21, "soft": True, "stake": 100, "status": "even-money",
    ...             "outcome": "even-money", "returned": 200}, "USD")[1:]
    ('BJ', 'even-money +$1.00')
    """
    value = HandValue(int(hand["total"]), bool(hand["soft"]))
    # A soft total reads as two numbers (7/17) while the hand is played; a hand done counts its best one.
    # Even money is taken on a blackjack alone: that hand is one still (it read "21": a terminal trial).
    total = "BJ" if hand["status"] in ("blackjack", "even-money") else format_total(value) \
        if hand["status"] == "playing" else str(value.total)
    if value.bust:
        total = f"BUST {total}"
    result = ""
    if hand["outcome"] is not None:
        result = f"{hand['outcome']} {net_text(int(hand['returned'] or 0) - int(hand['stake']), currency)}"
    return cards_text(tuple(parse_card(text) for text in hand["cards"])), total, result


@contextmanager
def single_keys(stream: TextIO | None = None) -> Iterator[None]:
    """A terminal in single-key mode (no Enter needed, no echo) for the whole session, from its first screen; left as
    it was at the end. :func:`read_keys` set the mode at its first key: until then the terminal stayed in line mode,
    so at a server's table, whose screen follows the table before the first key, every key waited for Enter, and
    the mode's switch then dropped the line typed (found by a terminal trial). A pipe is left alone.

    >>> import io
    >>> with single_keys(io.StringIO("bds")):
    ...     pass
    """
    stdin = stream or sys.stdin
    if not is_terminal(stdin):
        yield
        return
    import termios
    import tty

    fd = stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # keys typed already are kept, not flushed
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def read_keys(stream: TextIO | None = None) -> Iterator[str]:
    """Yield single keys: raw mode on a terminal, one character at a time from a pipe."""
    stdin = stream or sys.stdin
    if is_terminal(stdin):
        import termios
        import tty

        fd = stdin.fileno()
        saved = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd, termios.TCSANOW)  # already so under single_keys: nothing typed is flushed
            while True:
                # The file descriptor, not the text stream: a stream would read ahead into a buffer of its own, where
                # discard_typed_ahead and key_waiting could not see what was typed.
                key = read_char(fd)
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


def is_terminal(stream: TextIO) -> bool:
    """Whether keys come from a person at a terminal (not a pipe or a file).

    >>> import io
    >>> is_terminal(io.StringIO("bds"))
    False
    """
    return bool(hasattr(stream, "isatty") and stream.isatty())


def key_waiting(stream: TextIO) -> str | None:
    """A key typed at a terminal and not yet read, taken without waiting; None where none is (or from a pipe)."""
    import select

    if not is_terminal(stream) or not select.select([stream.fileno()], [], [], 0)[0]:
        return None
    return read_char(stream.fileno())


def key_ready(stream: TextIO, seconds: float) -> bool:
    """Whether a key typed at a terminal waits to be read, waiting ``seconds`` at most for one (none taken)."""
    import select

    return bool(select.select([stream.fileno()], [], [], seconds)[0])


def read_char(fd: int) -> str:
    """One character from a file descriptor, its UTF-8 bytes read together (a £ is one key, not two); "" at the end.

    >>> reading, writing = os.pipe()
    >>> _ = os.write(writing, "b£".encode()); os.close(writing)
    >>> read_char(reading), read_char(reading), read_char(reading)
    ('b', '£', '')
    >>> os.close(reading)
    """
    first = os.read(fd, 1)
    if not first:
        return ""
    lead = first[0]
    more = 1 if lead >> 5 == 0b110 else 2 if lead >> 4 == 0b1110 else 3 if lead >> 3 == 0b11110 else 0
    return (first + (os.read(fd, more) if more else b"")).decode("utf-8", errors="replace")


def discard_typed_ahead(stream: TextIO) -> None:
    """Drop the keys typed at a terminal before a new screen showed (a second ``d`` typed with the deal would
    double a hand its player has not seen); a pipe's keys are a script, and are kept."""
    if is_terminal(stream):
        import termios

        termios.tcflush(stream.fileno(), termios.TCIFLUSH)


@dataclass
class TerminalTable:
    """One player at one table in a terminal: betting, playing and results, round after round."""

    rules: Rules
    balance: int
    rng: RandomBits
    console: Console
    chips: tuple[int, ...] = (100, 500, 2500, 10000)
    limits: BetLimits = field(default_factory=lambda: BetLimits({MAIN: (100, 50000)}))
    currency: str = "USD"
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

    def money(self, amount: int) -> str:
        """An amount (minor units) in the table's currency."""
        return format_money(amount, self.currency)

    def _new_slip(self) -> BetSlip:
        return BetSlip(self.limits, self.chips, self.balance, self.rules.deal.hands_per_player,
                       tuple(self.rules.side_bets))

    # ------------------------------------------------------------ the loop
    def run(self, keys: Iterator[str]) -> None:
        """Play until ``q`` or the end of the keys; a round still open then stands and settles."""
        self.draw()
        reason = "The input ended"
        try:
            for key in keys:
                if not self.press(key):
                    reason = "You quit"
                    break
                self.draw()
        except KeyboardInterrupt:  # as q does: before, Ctrl-C left the round unsettled and said nothing (a trial)
            reason = "You quit (Ctrl-C)"
        if self.finish_round(reason):
            self.draw()
        rounds = f"{self.rounds} round{'s' if self.rounds != 1 else ''}"
        self.console.print(f"Goodbye. Final balance {self.money(self.balance)} after {rounds}.")

    def finish_round(self, reason: str) -> bool:
        """Settle a round left open: every open hand stands and every open offer is declined.

        This is the server's policy for a player who leaves mid-round (the auto
        decision after the decision timeout), so a stake is never left unsettled.
        Returns whether there was a round to finish.
        """
        game = self.game
        if game is None or game.phase is Phase.SETTLED:
            return False
        stood = declined = 0
        while (decision := game.decision()) is not None:
            if decision.kind == "play":
                game.act(Action.STAND)
                stood += 1
            else:
                game.act(OFFER_KEYS[decision.kind]["n"])
                declined += 1
        self._after_action()
        done = [f"{stood} open hand{'s' if stood != 1 else ''} stood" if stood else "",
                f"{declined} offer{'s' if declined != 1 else ''} declined" if declined else ""]
        self.message = (f"{reason} mid-round: {' and '.join(part for part in done if part)}, as the server does "
                        f"for a player who leaves. {self.message}")
        return True

    def press(self, key: str) -> bool:
        """Handle one key; False means quit (``q`` mid-round too: :meth:`run` then settles the round)."""
        self.message = ""
        try:
            if self.game is None or self.game.phase is Phase.SETTLED:
                return self._betting_key(key)
            if key == "q":
                return False
            self._playing_key(key)
        except BetSlipError as error:  # its amounts written in the currency, any left bare in its words too
            self.message = amounts_in_currency(error.sentence(lambda amount: format_money(amount, self.currency)),
                                               self.currency)
        except IllegalActionError as error:
            self.message = error.plain
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
        elif key == "?" and self.rules.side_bets:
            self.message = " · ".join(paytable_text(side_bet_title(side.kind), side.pays(),
                                                    SIDE_BETS[side.kind].line_titles)
                                      for side in self.rules.side_bets.values())
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
        self.game.place_bets(PLAYER, hand_bets)
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
            self.message = (f"You cannot {ACTION_WORDS[Action(action)]} now: it needs {self.money(cost)} and the "
                            f"balance is {self.money(self.balance)}.")
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
            result = f"won {self.money(net)}" if net > 0 else f"lost {self.money(-net)}" if net < 0 else "even"
            self.message = f"Round over: {result}."
            chip = self.slip.chip
            self.slip = self._new_slip()
            self._keep_chip(chip)

    def _keep_chip(self, chip: int) -> None:
        """Keep the chip the player had selected for the next round, as the web table does; if the balance no
        longer covers it, the largest chip it covers (the slip starts on the smallest)."""
        covered = [value for value in self.slip.enabled_chips() if value <= chip]
        if covered:
            self.slip.select_chip(covered[-1])

    def _hint_text(self) -> str:
        """The EV of each legal action (per unit bet), best first, from the exact maths."""
        from twentyone.analysis.hints import hint

        game = self.game
        assert game is not None
        seen = game.view(PLAYER)
        hand = seen.pending_hand
        assert hand is not None
        legal = [str(action) for action in seen.legal_actions]
        ranked = hint(game.rules, hand.cards, seen.dealer_cards[0], legal, first_decision=hand.first_decision)
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
                       Text(balance_text(self.balance, 0 if self.game is not None else self.slip.total,
                                         self.currency), style="bold yellow"))
        parts: list[RenderableType] = [header]
        if self.game is not None:
            parts += self._render_round(self.game)
        else:
            parts += self._render_betting()
        parts.append(Text(self.message or " ", style="bold cyan"))
        parts.append(self._render_keys())
        return Group(*parts)

    def _render_round(self, game: Round) -> list[RenderableType]:
        seen = game.view(PLAYER)  # what the player may see: the hole card stays face down until turned
        dealer = dealer_text(dealer_json(seen))
        table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
        for column in ("", "Hand", "Cards", "Total", "Stake", "Result"):
            table.add_column(column)
        decision = seen.decision
        for hand in seen.hands:
            active = decision is not None and decision.seat == hand.seat and decision.hand == hand.hand
            cards, total, result = hand_cells(hand_json(hand), self.currency)
            table.add_row("▶" if active else "", f"{hand.seat}" + (f".{hand.hand}" if hand.from_split else ""),
                          cards, total, self.money(hand.stake), result, style="bold" if active else None)
        sides = []
        for s in seen.settlements:
            if s.item in game.rules.side_bets:
                kind = game.rules.side_bets[s.item].kind
                title, words = side_bet_title(kind), side_bet_words(kind, s.result)
            elif s.item == "insurance":
                title, words = "Insurance", INSURANCE_WORDS.get(s.result, s.result)
            else:
                continue
            sides.append(f"{title} #{s.seat}: {words}, {net_text(s.returned - s.stake, self.currency)}")
        odds = "{}:{}".format(*game.rules.insurance.payout)
        sides += [insurance_taken_text(seat, self.money(stake), odds) for seat, stake in seen.insurance_taken]
        parts: list[RenderableType] = [Panel(dealer, title="Dealer", border_style="green"), table]
        if sides:
            parts.append(Text("  ".join(sides), style="magenta"))
        return parts

    def _render_betting(self) -> list[RenderableType]:
        slip = self.slip
        table = bets_table([side_bet_title(side.kind) for side in self.rules.side_bets.values()])
        for spot in range(1, slip.spots + 1):
            row = ["▶ " + str(spot) if spot == self.selected_spot else "  " + str(spot),
                   self.money(slip.bets.get((spot, MAIN), 0))]
            row += [self.money(slip.bets.get((spot, name), 0)) for name in self.rules.side_bets]
            table.add_row(*row)
        # Every bet's limits under its column, as the web table lists them: the side bets' too (only the main's were
        # shown, found by a trial).
        table.add_row("Limits", *(self._limits_text(name) for name in (MAIN, *self.rules.side_bets)), style="dim")
        sides = self.rules.side_bets.values()
        pays = pays_line("{}:{}".format(*self.rules.blackjack_payout),
                         [(side_bet_title(side.kind), pays_text(side.pays())) for side in sides])
        chips = Text("Chips: ")
        for chip in slip.chips:
            style = "bold reverse" if chip == slip.chip else ("" if chip in slip.enabled_chips() else "dim")
            chips.append(f" {self.money_short(chip)} ", style=style)
        chips.append(f"   TOTAL BET {self.money(slip.total)}", style="bold")
        summary = Text(self.rules.summary, style="dim")
        return [Panel(Group(table, pays), title="Place your bets", border_style="green"), chips, summary]

    def _limits_text(self, bet_type: str) -> str:
        return limits_text(*self.limits.of(bet_type), self.currency)

    def money_short(self, amount: int) -> str:
        """An amount without a zero minor part, the currency where it is written: "$25", "25 CHF", "$2.50"."""
        return short_money(amount, self.currency)

    def _render_keys(self) -> Text:
        game = self.game
        if game is None or game.phase is Phase.SETTLED:
            side = "  ".join(f"[{key}] {side_bet_title(self.rules.side_bets[name].kind)}"
                             for key, name in self._side_keys().items())
            spots = f"[1-{self.slip.spots}] spot  " if self.slip.spots > 1 else ""
            keys = f"{spots}[c] chip  [b] bet  [u] undo  [x] x2  [r] rebet  [d] deal  [q] quit"
            return Text(keys + (f"\nSide bets on this spot: {side}" if side else ""), style="bold")
        decision = game.decision()
        assert decision is not None
        if decision.kind != "play":
            cost = game.cost_of(OFFER_KEYS[decision.kind]["y"])
            price = f" for {self.money(cost)}" if cost else ""
            offer = decision.kind.replace("-", " ").title()
            return Text(f"{offer}{price} on hand {decision.seat}? [y]es [n]o  [?] hint  [q] quit", style="bold")
        labels = []
        for key, action in PLAY_KEYS.items():
            if action in game.legal_actions():
                label = f"[{key}] {action}"
                if action is Action.CASH_OUT:
                    label += f" {self.money(game.offer_amount(Action.CASH_OUT))}"
                labels.append(label)
        # Quitting mid-round is a key too (it stands every hand, as the server does for a player who leaves).
        return Text("  ".join(labels) + "  [?] hint  [q] quit", style="bold")


class _Setting(TypedDict, total=False):
    """A table's setting as :class:`TerminalTable` takes it; what is left out keeps its default."""

    currency: str
    chips: tuple[int, ...]
    limits: BetLimits


def play(rules: Rules, balance: int, seed: int | None, console: Console | None = None,
         keys: Iterator[str] | None = None, rng_factory: Callable[[int], RandomBits] | None = None,
         currency: str = "USD", chips: tuple[int, ...] | None = None, limits: BetLimits | None = None) -> int:
    """Run terminal play until the player quits or input ends; returns the final balance.

    ``currency``, ``chips`` and ``limits`` are the table's setting (a server table's, when
    the command line finds one for the game); without them the table plays in dollars
    with 1-5-25-100 chips and a 1-500 main bet.
    """
    rng: RandomBits = (rng_factory or random.Random)(seed) if seed is not None else system_rng()
    setting: _Setting = {"currency": currency}
    if chips:
        setting["chips"] = tuple(chips)
    if limits is not None:
        setting["limits"] = limits
    table = TerminalTable(rules, balance, rng, console or Console(), **setting)
    with single_keys() if keys is None else nullcontext():
        table.run(keys if keys is not None else read_keys())
    return table.balance
