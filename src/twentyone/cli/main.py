"""``twentyone``: variants, replay and terminal play.

Every user error (bad input, bad rules file, illegal decision) ends with a
one-line message on standard error and exit code 2, never a traceback.

Start-up is kept short: this module imports typer and the standard library only.
Everything else (the engine, rich, the analysis with numpy and numba, the server with
FastAPI and SQLAlchemy, matplotlib) is imported inside the command that uses it, so
``twentyone variants`` or ``twentyone replay`` never load what ``serve`` needs.
``tests/test_cli_startup.py`` holds this to account.

Why one module: each verb is a few lines of option checking around a library call, and one
file per command would hide how alike they are; longer commands (simulate, rng-dump) have their own.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, NotRequired, TypedDict, TypeVar

import typer

from twentyone.cli import png_path_refusal
from twentyone.cli.simulate import simulate
from twentyone.variants import VARIANTS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from twentyone.core.rules import Rules
    from twentyone.server.config import Settings
    from twentyone.server.context import Caller
    from twentyone.server.db import Database
    from twentyone.server.service import GameService

Checked = TypeVar("Checked", bound="BaseModel")

app = typer.Typer(
    name="twentyone",
    help="A blackjack platform: play, replay and inspect the published casino games.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str) -> NoReturn:
    """Print a one-line error and exit with code 2."""
    line = " ".join(str(message).splitlines())
    typer.echo(f"error: {line}", err=True)
    raise typer.Exit(2)


def read_input(source: str, what: str) -> str:
    """The text of file ``source`` (standard input for ``-``), which must be UTF-8 (a BOM is allowed)."""
    try:
        if source == "-":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
        else:
            data = Path(source).read_bytes()
    except OSError as error:
        fail(f"cannot read {source!r} ({error.strerror}).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        fail(f"{what} is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}).")


def parse_json(text: str, what: str) -> Any:
    """JSON text as Python data; every way it can be unreadable is a one-line error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"{what} is not valid JSON ({error.msg} at line {error.lineno} column {error.colno}).")
    except RecursionError:
        fail(f"{what} nests arrays or objects too deeply to read.")
    except ValueError as error:  # an integer longer than Python converts (4300 digits)
        fail(f"{what} cannot be read ({str(error).split(':')[0]}).")


def _validated(model: type[Checked], data: dict[str, Any]) -> Checked:
    """``data`` checked by the server's own request model (what an endpoint takes), or the first fault in the words
    the endpoint's 422 uses ("decision_timeout: Input should be greater than or equal to 1.")."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the request"
        fail(f"{where}: {str(first['msg']).removeprefix('Value error, ')}.")


def check_amount(amount: int, name: str) -> None:
    """Refuse an amount (minor units) beyond the cap every stored amount keeps to."""
    from twentyone.core.money import MAX_AMOUNT

    if abs(amount) > MAX_AMOUNT:
        fail(f"{name} is {amount} but amounts are capped at {MAX_AMOUNT} (10^15) minor units.")


def rules_summary(rules: Rules) -> dict[str, object]:
    """The key rules of a game as plain data, one entry per fact a player compares."""
    return {
        "id": rules.id,
        "name": rules.name,
        "seed": rules.seed,
        "decks": rules.shoe.decks,
        "removed_ranks": sorted(rules.shoe.removed_ranks),
        "cards": rules.shoe.composition.size,
        "reshuffle": rules.shoe.reshuffle,
        "dealer": "hits soft 17" if rules.dealer.hits_soft_17 else "stands on all 17s",
        "hole_card": rules.deal.hole_card,
        "peek": rules.dealer.peek,
        "no_peek_blackjack_takes": rules.dealer.no_peek_blackjack_takes,
        "double": rules.double.totals,
        "double_multipliers": list(rules.double.multipliers),
        "double_after_split": rules.double.after_split,
        "max_hands_after_split": rules.split.max_hands,
        "surrender": rules.surrender,
        "blackjack_pays": str(rules.blackjack_payout),
        "insurance": rules.insurance.offered,
        "even_money": rules.insurance.even_money,
        "cash_out": rules.cash_out.enabled,
        "side_bets": sorted(rules.side_bets),
        "hands_per_player": rules.deal.hands_per_player,
        "seats": rules.deal.seats or "unlimited",
        "common_draw": rules.deal.common_draw,
        "rules": describe(rules),
    }


def describe(rules: Rules) -> str:
    """One line of a game's key rules.

    >>> from twentyone.variants import builtin_rules
    >>> describe(builtin_rules("single-deck"))
    '1 deck · S17 · no hole card · double 9-11 · no DAS · no resplit · BJ 3:2 · insurance · even money'
    >>> describe(builtin_rules("multiplayer")).split(" · ")[2:7]
    ['peek ace-ten', 'double any', 'no DAS', 'no resplit', 'split aces hit']
    """
    shoe = rules.shoe
    decks = f"{shoe.decks} deck{'s' if shoe.decks > 1 else ''}"
    if shoe.removed_ranks:
        decks += f" without {'/'.join(sorted(shoe.removed_ranks))} ({shoe.composition.size} cards)"
    parts = [decks, "H17" if rules.dealer.hits_soft_17 else "S17"]
    if not rules.deal.hole_card:
        parts.append("no hole card")
    else:
        parts.append("no peek" if rules.dealer.peek == "none" else f"peek {rules.dealer.peek}")
    doubles = "/".join(f"x{m}" for m in rules.double.multipliers)
    parts.append(f"double {rules.double.totals}" if doubles == "x2" else f"{doubles} {rules.double.totals}")
    parts.append("DAS" if rules.double.after_split else "no DAS")
    parts.append("no resplit" if rules.split.max_hands <= 2 else f"split to {rules.split.max_hands}")
    if not rules.split.aces_one_card:  # worth about 0.1 % at multiplayer, whose sheet is silent (an analyst's trial)
        parts.append("split aces hit")
    if rules.surrender != "none":
        parts.append(f"{rules.surrender} surrender")
    parts.append(f"BJ {rules.blackjack_payout}")
    if rules.insurance.offered:
        parts.append("insurance")
    if rules.insurance.even_money:
        parts.append("even money")
    if rules.cash_out.enabled:
        parts.append("cash out")
    if rules.deal.common_draw:
        parts.append("common draw")
    if rules.side_bets:
        parts.append("side bets " + ", ".join(rules.side_bets))
    return " · ".join(parts)


@app.command()
def variants(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the five games with their key rules, a line each."""
    from twentyone.variants import builtin_rules

    rows = [rules_summary(builtin_rules(variant)) for variant in VARIANTS]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for variant in VARIANTS:  # typer's colours (stripped when piped): no need to load rich for five lines
        typer.echo(f"{typer.style(f'{variant:<13}', fg='green', bold=True)} {describe(builtin_rules(variant))}")


@app.command()
def replay(
    file: Annotated[str, typer.Argument(help="Scenario JSON file, or - for standard input.")],
) -> None:
    """Play a stacked-shoe scenario through the real engine and print the result as JSON."""
    from twentyone.scenario import ScenarioError, run_scenario

    scenario = parse_json(read_input(file, "the scenario"), "the scenario")
    try:
        result = run_scenario(scenario)
    except ScenarioError as error:
        fail(str(error))
    typer.echo(json.dumps(result, indent=2))


@app.command()
def play(
    variant: Annotated[str, typer.Argument(help=f"One of: {', '.join(VARIANTS)}; with --server, a table's id.")
                       ] = "first-person",
    balance: Annotated[int | None, typer.Option(help="Starting balance in whole currency units (default 1000).")
                       ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed the shuffle (repeatable games).")] = None,
    rules_file: Annotated[Path | None, typer.Option("--rules", help="Play a rules file instead.")] = None,
    currency: Annotated[str | None, typer.Option(help="Currency code, like GBP (default: the game's table's, "
                                                 "else USD).")] = None,
    server: Annotated[str | None, typer.Option(help="Sit at this table of a running server instead, like "
                                               "http://localhost:8000: its deal, balance and history.")] = None,
    name: Annotated[str | None, typer.Option(help="With --server: sign in as this player (password from "
                                             "TWENTYONE_PASSWORD, else asked for); default the guest kept on this "
                                             "machine for that server, else a new one (kept).")] = None,
    new_guest: Annotated[bool, typer.Option("--new-guest", help="With --server: play as a new guest, and keep it "
                                            "in place of the one kept for that server.")] = False,
) -> None:
    """Play a game in the terminal: bet, deal, decide with single keys.

    On this machine by default, by the engine itself, set as the server's table of that name is.

    A rules file plays in dollars with 1-5-25-100 chips.

    With --server URL the same keys play at that server's table: its deal, balance and history."""
    if server is not None:
        given = [option for option, value in (("--balance", balance), ("--seed", seed), ("--rules", rules_file),
                                              ("--currency", currency)) if value is not None]
        if given:
            fail(f"{', '.join(given)} cannot be used with --server: the server's table sets its game and balance.")
        if new_guest and name is not None:
            fail("--new-guest and --name cannot be used together: a guest has no name to sign in with.")
        _play_at_server(server, variant, name, new_guest)
        return
    if name is not None or new_guest:
        fail(f"{'--name' if name is not None else '--new-guest'} signs in at a server: give --server URL too.")
    if seed is not None and seed < 0:  # as rng-dump's and simulate's: -3 would deal the games of 3
        fail(f"--seed must be 0 or more, got {seed}.")
    from twentyone.core.money import MAX_AMOUNT, minor_units
    from twentyone.core.rules import RulesError
    from twentyone.ui.terminal import play as play_terminal
    from twentyone.variants import resolve_rules

    # Whole units of the currency played in: ¥50 is 50 minor units, $50 is 5,000 (before, ¥50 was played as ¥5,000:
    # a trial of a terminal player).
    unit = minor_units(currency) if currency else 100
    balance = 1000 if balance is None else balance
    if balance < 1:
        fail(f"--balance must be at least 1, got {balance}.")
    if balance * unit > MAX_AMOUNT:
        fail(f"--balance is at most {MAX_AMOUNT // unit} whole units (amounts are capped at 10^15 minor units), "
             f"got {balance}.")
    try:
        rules = resolve_rules(variant, rules_file)
    except RulesError as error:
        fail(str(error))
    table = None
    if rules_file is None:
        from twentyone.server.config import shipped_tables

        table = shipped_tables().get(variant)
    # An empty --currency '' is a mistake to name, not a request for the default (found by a trial).
    code = (currency if currency is not None else (table.currency if table else "USD")).upper()
    if not (len(code) == 3 and code.isascii() and code.isalpha()):
        fail(f"--currency must be a three-letter code like USD or GBP, got {currency!r}.")
    play_terminal(rules, balance * minor_units(code), seed, currency=code, chips=table.chips if table else None,
                  limits=table.bet_limits if table else None)


def _play_at_server(url: str, table_id: str, name: str | None, new_guest: bool = False) -> None:
    """``play --server``: sign in, sit at the table, play; a server that cannot be reached, a sign-in it refuses or
    a table it does not have is one line and exit code 2, before anything is played."""
    import getpass
    import os

    import httpx

    from twentyone.ui.kept_guests import KeptGuests
    from twentyone.ui.remote import ServerError, play_at_server

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as error:
        fail(f"--server must be an http:// or https:// URL, got {url!r}: {error}.")
    if parsed.scheme not in ("http", "https") or not parsed.host:
        fail(f"--server must be an http:// or https:// URL, got {url!r}.")
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment or parsed.userinfo:
        fail(f"--server is the server's own address, like http://localhost:8000, with no path, query or user; "
             f"got {url!r}.")
    password = None
    if name is not None:
        password = os.environ.get("TWENTYONE_PASSWORD")
        if password is None:
            if not sys.stdin.isatty():  # the keys come from standard input: the password cannot
                fail("--name: set TWENTYONE_PASSWORD when the keys come from a pipe.")
            password = getpass.getpass(f"Password for {name}: ")
    try:  # --new-guest: the kept guest is replaced only once the new one has signed in (a server away keeps it)
        play_at_server(url, table_id, name, password, guests=KeptGuests.default(), resume=not new_guest)
    except ServerError as error:
        fail(str(error))


RulesOption = Annotated[Path | None, typer.Option("--rules", help="A rules file instead of a built-in game.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _rules(variant: str | None, rules_file: Path | None) -> Rules:
    from twentyone.core.rules import RulesError
    from twentyone.variants import resolve_rules

    if variant is None and rules_file is None:
        fail(f"name a game ({', '.join(VARIANTS)}) or give --rules FILE.")
    if variant is not None and rules_file is not None:  # the game named was dropped without a word (a trial)
        fail(f"name a game or give --rules FILE, not both: the file is its own game (got {variant!r} too).")
    try:
        return resolve_rules(variant, rules_file)
    except RulesError as error:
        fail(str(error))


def _defaulted(variant: str | None, rules_file: Path | None, default: str = "first-person") -> str | None:
    """The game a command with a default game plays: the one named, else ``default`` where no rules file is given.
    Before, a game named beside --rules was dropped without a word, as ``rtp``'s was (a researcher's trial)."""
    return variant if variant is not None or rules_file is not None else default


SplitStrategyOption = Annotated[str, typer.Option(
    "--split-strategy", help="How split hands are played: cdz-, cdp1 or cdp (see docs/maths.md).")]


@app.command()
def rtp(
    variant: Annotated[str | None, typer.Argument(help="A built-in game.")] = None,
    rules_file: RulesOption = None,
    as_json: JsonOption = False,
    split_strategy: SplitStrategyOption = "cdp",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Compute afresh; do not read or keep a cached report.")]
    = False,
) -> None:
    """Exact return to player: main game (optimal and basic), side bets, cash out, beside the published."""
    # Only light modules until a report must be computed: a cached one is served without numpy or numba.
    from twentyone.analysis import cache
    from twentyone.analysis.report import comparison_rows, met_by_construction, rounds_to

    rules = _rules(variant, rules_file)
    if split_strategy not in ("cdz-", "cdp1", "cdp"):
        fail(f"--split-strategy must be cdz-, cdp1 or cdp, got {split_strategy!r}.")
    key = cache.report_key(rules, split_strategy)
    report = None if no_cache else cache.load(key)
    if report is None:
        from twentyone.analysis.report import rtp_report
        from twentyone.analysis.support import UnsupportedRules

        try:
            report = rtp_report(rules, split_strategy=split_strategy)
        except UnsupportedRules as error:
            fail(str(error))
        if not no_cache:
            cache.store(key, report)
    rows = comparison_rows(report)
    beyond = [label for label, value, published in rows if published is not None and not rounds_to(value, published)]
    fitted = met_by_construction(report)
    if as_json:
        typer.echo(json.dumps({**report, "beyond_rounding": beyond, "met_by_construction": fitted}, indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # The name escaped: a rules file's "Classic [H17]" lost its "[H17]" to rich's markup.
    table = Table(title=f"{escape(rules.name)}: return to player (split hands: {split_strategy})",
                  title_justify="left")
    for column in ("", "computed %", "published %", "difference"):
        table.add_column(column, justify="right" if column else "left")
    for label, value, published in rows:
        difference = "" if published is None else f"{value - published:+.4f}" + (" *" if label in fitted else "")
        table.add_row(label, f"{value:.4f}", "" if published is None else f"{published:.2f}", difference)
    console = Console()
    console.print(table)
    if beyond and rules_file is not None:  # the file's own [published]: docs/maths.md speaks of the built-in games
        # only (an analyst's trial, with a copy of classic's file at H17, was sent there for a game of their own)
        console.print(f"Beyond the rounding of the figure the rules file publishes ([published]): {'; '.join(beyond)}. "
                      "A copy of a built-in game's file keeps its sheet's figures, which other rules need not meet.",
                      highlight=False, markup=False)
    elif beyond:  # a trial of an analyst: the table showed them with no word of why
        console.print(f"Beyond the published figure's rounding: {'; '.join(beyond)}. docs/maths.md (\"Results\") "
                      "gives the reading of the sheet kept and the readings that would meet the published figure.",
                      highlight=False)
    if fitted:  # an analyst's trial read these as checks: the sheet prints no paytable (or margin) for them
        console.print("* Met by construction, not a check: the sheet prints no paytable (or cash-out margin) for "
                      "these rows, and the rules file's were chosen to meet its published returns (docs/maths.md).",
                      highlight=False)
    by_up = report["main"]["by_up_optimal"]
    console.print("Contribution of each dealer up card to the main game's expected value (optimal, %): "
                  + ", ".join(f"{up} {value:+.4f}" for up, value in by_up.items()), highlight=False)


@app.command()
def strategy(
    variant: Annotated[str | None, typer.Argument(help="A built-in game.")] = None,
    rules_file: RulesOption = None,
    png: Annotated[Path | None, typer.Option("--png", help="Also draw the chart to this PNG file.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The basic-strategy chart: hard totals, soft totals and pairs against each dealer up card."""
    from twentyone.analysis.chart import save_png, strategy_chart, terminal_chart
    from twentyone.analysis.game import GameAnalysis
    from twentyone.analysis.support import UnsupportedRules

    if png is not None and (refusal := png_path_refusal(png, "--png")):
        fail(refusal)
    rules = _rules(variant, rules_file)
    try:
        chart = strategy_chart(GameAnalysis(rules).basic_strategy())
    except UnsupportedRules as error:
        fail(str(error))
    title = f"{rules.name}: basic strategy"
    if png is not None:
        try:
            save_png(chart, title, png)
        except (OSError, ValueError) as error:
            fail(f"cannot write {str(png)!r} ({getattr(error, 'strerror', None) or error}).")
    if as_json:
        typer.echo(json.dumps(chart, indent=2))
    else:
        from rich.console import Console

        Console().print(terminal_chart(chart, title))
        if png is not None:
            typer.echo(f"chart written to {png}")


@app.command()
def hint(
    variant: Annotated[str, typer.Argument(help="A built-in game; left out with --rules.", show_default=False)],
    cards: Annotated[list[str], typer.Argument(help="The player's cards, like 8S 3D.")],
    dealer: Annotated[str, typer.Option("--dealer", help="The dealer's up card, like KH.")],
    rules_file: RulesOption = None,
    as_json: JsonOption = False,
    seen: Annotated[str | None, typer.Option(
        "--seen", help="Cards already dealt from a live shoe since its shuffle (other hands, earlier rounds), "
        "like '5H KD 9C'; the hint then plays for the cards still unseen.")] = None,
) -> None:
    """The EV of every legal action for a hand against the dealer's up card, best first."""
    from collections import Counter

    from twentyone.analysis.hints import hint_decisions
    from twentyone.core.cards import CardError, parse_card, parse_cards

    game: str | None = variant
    if rules_file is not None:
        # With --rules the game is the file, as at rtp and strategy: the first word is then the first card. Before,
        # it was taken for a game's name and dropped ("hint --rules FILE AS 7D" was a hand of one card, and
        # "hint classic --rules FILE" played the file's game without a word: an analyst's trial).
        try:
            cards, game = [str(parse_card(variant)), *cards], None
        except CardError as error:
            if variant not in VARIANTS:  # neither a card nor a game: a card mistyped ("AX"), as review found
                fail(f"{error} (with --rules FILE the first word is the player's first card).")
    rules = _rules(game, rules_file)
    try:
        hand = parse_cards(cards)
        up = parse_card(dealer)
        earlier = parse_cards(seen.replace(",", " ").split()) if seen else []
        rules.shoe.composition.check_stack([*hand, up, *earlier])
    except (CardError, ValueError) as error:
        fail(str(error))
    if len(hand) < 2:
        fail("give at least the player's two cards.")
    unseen = None
    if earlier:
        left = rules.shoe.composition.counts() - Counter([*hand, up, *earlier])
        unseen = list(left.elements())
    try:
        decisions = hint_decisions(rules, hand, up, unseen=unseen)
    except ValueError as error:
        fail(str(error))
    offers = [decision for decision in decisions if decision != "play"]
    if as_json:  # each entry names its decision: the offers answered before the play, in the engine's order, then it
        typer.echo(json.dumps([{"action": action, "ev": value, "decision": decision}
                               for decision in [*offers, "play"] for action, value in decisions[decision]], indent=2))
        return
    basis = {"insurance": "the insurance bet's own EV, per unit of the main bet",
             "even-money": "the hand's EV, per unit bet", "surrender": "the hand's EV before the peek, per unit bet"}
    for decision in [*offers, "play"]:  # in the engine's order: the offers are answered first
        if offers:
            typer.echo(f"{decision}, offered first ({basis[decision]}):" if decision != "play" else "then the play:")
        for position, (action, value) in enumerate(decisions[decision]):
            marker = "best" if position == 0 else ""
            typer.echo(f"{action:<15}{value:+.4f}  {marker}".rstrip())
    if up.value in (1, 10):  # whether the plays' values already know the dealer has no blackjack (an analyst's trial)
        peeked = rules.checks_for_blackjack(up.rank)
        typer.echo("The plays' EVs are given that the dealer has no blackjack: it checks under this card first."
                   if peeked else "The dealer does not check for blackjack under this card: the plays' EVs count "
                   "its chance of one.")


@app.command("cash-out-table")
def cash_out_table_command(
    variant: Annotated[str | None, typer.Argument(
        help="A game with cash out (default: first-person, unless --rules gives one).", show_default=False)] = None,
    rules_file: RulesOption = None,
    output: Annotated[Path | None, typer.Option("--output", help="Write the table file here.")] = None,
) -> None:
    """Derive the cash-out offer table from the exact fair values (prints it, or writes --output)."""
    from twentyone.analysis.cashout import cash_out_table

    if output is not None and not output.parent.is_dir():
        fail(f"cannot write {str(output)!r} (no folder {str(output.parent)!r}).")
    rules = _rules(_defaulted(variant, rules_file), rules_file)
    try:
        table = cash_out_table(rules)
    except ValueError as error:  # UnsupportedRules is a ValueError too
        fail(str(error))
    if output is None:
        typer.echo(table.to_toml(), nl=False)
        return
    try:
        output.write_text(table.to_toml(), "utf-8")
    except OSError as error:
        fail(f"cannot write {str(output)!r} ({error.strerror}).")
    typer.echo(f"wrote {output}: margin {table.margin * 100:.4f} %, always cash out "
               f"{table.always_cash_out * 100:.4f} %, offers {table.span[0]:.2f}-{table.span[1]:.2f}x")


@app.command("rng-dump")
def rng_dump(
    variant: Annotated[str | None, typer.Argument(
        help="The game whose shoe is shuffled (default: first-person, unless --rules gives one).",
        show_default=False)] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="How many shoes to shuffle, one per round.")] = 1000,
    output: Annotated[Path | None, typer.Option("--output", help="Write here instead of standard output.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="indices (a shoe per line, the unshuffled position of "
                                     "each card), cards (a shoe per line as card codes) or binary (the raw bits "
                                     "drawn, as little-endian 32-bit words for dieharder -g 201 or TestU01).")]
    = "indices",
    seed: Annotated[int | None, typer.Option(help="Use a seeded generator (reproducible, not the production "
                                             "source); default: the system CSPRNG that play and the server use.")]
    = None,
    rules_file: RulesOption = None,
) -> None:
    """Write raw shuffle output for an outside lab's RNG test batteries (see README, "Randomness")."""
    import random

    from twentyone.cli.rng_dump import FORMATS, dump_binary, dump_text
    from twentyone.core.shoe import system_rng

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}.")
    if rounds < 1:
        fail(f"--rounds must be at least 1, got {rounds}.")
    if seed is not None and seed < 0:  # Python's generator seeds -3 as 3: two seeds, one output (an analyst's trial)
        fail(f"--seed must be 0 or more, got {seed}.")
    if output is None and fmt == "binary" and sys.stdout.isatty():
        fail("binary output goes to a file (--output FILE) or a pipe, not to the terminal.")
    if output is not None and not output.parent.is_dir():
        fail(f"cannot write {str(output)!r} (no folder {str(output.parent)!r}).")
    composition = _rules(_defaulted(variant, rules_file), rules_file).shoe.composition
    rng = random.Random(seed) if seed is not None else system_rng()
    try:
        if fmt == "binary":
            with (open(output, "wb") if output else open(sys.stdout.fileno(), "wb", closefd=False)) as out:
                dump_binary(composition, rng, rounds, out)
        else:
            with (open(output, "w", encoding="ascii") if output else open(sys.stdout.fileno(), "w",
                  encoding="ascii", closefd=False)) as text:
                dump_text(composition, rng, rounds, fmt, text)
    except BrokenPipeError:  # the reader (head, dieharder) had enough: not an error
        pass
    except OSError as error:
        fail(f"cannot write {str(output or '<stdout>')!r} ({error.strerror}).")


# uvicorn as `serve` runs it (the load benchmark's bare endpoint runs with the same): httptools and uvloop
# (uvicorn[standard]), no access log line per request, and idle connections kept 75 s rather than 5 s, so a
# player who thinks a few seconds between decisions does not reconnect (or race a closing connection).
def _server_settings(database: str | None, data_dir: Path | None, make_token: bool = True,
                     tables: Path | None = None) -> Settings:
    """The server's settings from the options and the environment, or a one-line error (exit 2)."""
    from twentyone.server.config import SettingError, Settings

    try:
        # TWENTYONE_TABLES is serve --tables' own (typer reads it); the operator's commands go by the published tables.
        return Settings.from_environment(database, data_dir, make_token=make_token, tables_file=tables,
                                         tables_from_environment=False)
    except OSError as error:
        fail(f"cannot use the data directory ({error.strerror}: {error.filename}).")
    except SettingError as error:  # it names the variable (before, "invalid literal for int()" named none)
        fail(str(error))


def _cannot_open(settings: Settings, error: Exception) -> NoReturn:
    """A bad URL or an unreachable database: the first line of the error, exit 2, the password hidden in both (an
    error may quote the URL it could not use)."""
    from twentyone.server.config import shown_url, without_secrets

    shown = shown_url(settings.database_url)
    first = without_secrets((str(error).splitlines() or [""])[0], settings.database_url)
    fail(f"cannot open the database {shown!r} ({type(error).__name__}: {first}).")


class _UvicornOptions(TypedDict):
    log_level: str | None
    log_config: NotRequired[dict[str, Any]]  # serve --workers: server.config.workers_logging
    access_log: bool
    timeout_keep_alive: int
    http: str
    ws_per_message_deflate: bool
    ws_max_size: int


# "http": httptools with a bound on the request head (guards.BoundedHead), named as uvicorn imports it.
# "ws_per_message_deflate": off. The events are hints of about 100 bytes (server/events.py); compressing them gains
# nothing worth having, and it cost zlib state of about 40 KB per socket (a power table of 1,000 players: 78 MiB
# against 38) and a compression per socket per event, about a third of the time the fan-out spent in each socket's send.
# "ws_max_size": the most bytes of one message a client may send on a table's socket, which takes none (the server
# reads its messages only to throw them away): uvicorn's 16 MiB let 32 sockets of one address make the server hold
# 560 MB at once (a trial of an attacker). A larger one closes the socket with 1009, and the page connects again.
WS_MOST_BYTES = 4096
UVICORN_OPTIONS: _UvicornOptions = {"log_level": "warning", "access_log": False, "timeout_keep_alive": 75,
                                    "http": "twentyone.server.guards:BoundedHead", "ws_per_message_deflate": False,
                                    "ws_max_size": WS_MOST_BYTES}


def _announce(settings: Settings, host: str, port: int, how: str) -> None:
    """The start-up banner: where the server listens, its database (the password hidden), where its operator token
    is, and whether demo mode is on (guest play, demo balances for new players): a real-money floor sees at its start
    that ``TWENTYONE_DEMO`` took (before, "off" left demo mode on without a word: found by a trial of an operator).

    >>> from twentyone.server.config import Settings
    >>> _announce(Settings("postgresql+psycopg://app:s3cret@db/twentyone", Path("/nowhere"), "token", demo=False),
    ...           "0.0.0.0", 8000, "(API docs at /docs)")
    twentyone is serving the web table at http://localhost:8000/ (API docs at /docs)
    database: postgresql+psycopg://app:***@db/twentyone; operator token from TWENTYONE_OPERATOR_TOKEN
    demo mode off (TWENTYONE_DEMO): no guest play, no demo balances for new players
    """
    from twentyone.server.config import TOKEN_ENV_VAR, shown_url, token_file

    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    typer.echo(f"twentyone is serving the web table at http://{shown}:{port}/ {how}")
    path = token_file(settings.data_dir)  # where the server keeps its token, unless the environment gave one
    kept = path.exists() and path.read_text().strip() == settings.operator_token
    typer.echo(f"database: {shown_url(settings.database_url)}; operator token "
               f"{f'in {path}' if kept else f'from {TOKEN_ENV_VAR}'}")
    typer.echo("demo mode on (TWENTYONE_DEMO): guest play, demo balances for new players" if settings.demo
               else "demo mode off (TWENTYONE_DEMO): no guest play, no demo balances for new players")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    database: Annotated[str | None, typer.Option("--database", help="SQLAlchemy URL; default: SQLite in the "
                                                  "data directory, or TWENTYONE_DATABASE_URL.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Where SQLite and the operator token live.")]
    = None,
    wallet: Annotated[str | None, typer.Option("--wallet", help="An operator's wallet, as module:factory "
                                                "(or TWENTYONE_OPERATOR_WALLET); default: the built-in ledger.")]
    = None,
    tables: Annotated[Path | None, typer.Option(
        "--tables", envvar="TWENTYONE_TABLES", metavar="FILE",
        help="The operator's tables.toml (the shipped one's form: src/twentyone/server/tables.toml); default: the "
             "shipped tables, or the file the latest start was given. Every server process on the database serves "
             "the tables the latest start published (docs/server.md, 'Changing a table').")] = None,
    workers: Annotated[int, typer.Option("--workers", help="Server processes on this port (PostgreSQL only; "
                                         "docs/server.md, 'Several processes').")] = 1,
    pin_cpu: Annotated[bool, typer.Option("--pin-cpu/--no-pin-cpu", envvar="TWENTYONE_PIN_CPU",
                                          help="Keep each server process's threads on one CPU of its own (Linux), "
                                               "for a machine the server has to itself: they share one GIL, and "
                                               "handed between cores it cost a sixth or more of the throughput "
                                               "(docs/server.md, 'One CPU per process').")] = False,
    forwarded_allow_ips: Annotated[str | None, typer.Option(
        "--forwarded-allow-ips", envvar="FORWARDED_ALLOW_IPS", metavar="ADDRESSES",
        help="The proxies (load balancers) whose X-Forwarded-For names the client, as addresses and networks "
             "separated by commas (10.0.0.5,10.1.0.0/16), or * for any: the limits by address (new accounts a "
             "minute, sockets, wrong passwords) count the client named there. Default: uvicorn's, 127.0.0.1 and "
             "::1.")] = None,
) -> None:
    """Run the game server: tables, wallet, history, the web table at /."""
    import os

    import uvicorn

    from twentyone.server.app import create_app, freeze_startup_objects
    from twentyone.server.config import token_file
    from twentyone.server.cpu import pin_to_one_cpu
    from twentyone.server.wallet import load_operator_wallet

    if not 0 < port < 65536:
        fail(f"--port must be 1 to 65535, got {port}.")
    if workers < 1:
        fail(f"--workers must be 1 or more, got {workers}.")
    proxies = _proxies(forwarded_allow_ips)
    # Every refusal comes before anything is written: the data directory and its token are made last (before, a
    # refused --workers on SQLite, a setting in the environment refused, or a database that could not be reached left
    # both behind: found by operator trials).
    planned = _server_settings(database, data_dir, make_token=False, tables=tables)
    if workers > 1 and planned.database_url.startswith("sqlite"):
        fail("--workers > 1 needs PostgreSQL (--database postgresql+psycopg://...); SQLite is one process.")
    spec = wallet or os.environ.get("TWENTYONE_OPERATOR_WALLET")
    try:
        operator_wallet = load_operator_wallet(spec) if spec else None
    except ValueError as error:
        fail(str(error))
    _require_free_port(host, port)
    _require_reachable(planned)
    lock = _sqlite_lock(planned.database_url)
    if lock is not None and lock.parent.is_dir():  # a directory made by this start has no other server in it
        _hold_sqlite_alone(lock)
    made = [path for path in (token_file(planned.data_dir), planned.data_dir) if not path.exists()]
    settings = _server_settings(database, data_dir, tables=tables)
    if lock is not None and not _SQLITE_HELD:  # its directory made by this start (as the database's engine would)
        with contextlib.suppress(OSError):  # one that cannot be made is the database's to refuse, in one line
            lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.parent.is_dir():
            _hold_sqlite_alone(lock)
    if workers > 1:
        _serve_workers(settings, spec, host, port, workers, pin_cpu, proxies, made, tables)
        return
    try:
        application = create_app(settings, operator_wallet=operator_wallet, wallet_spec=spec)
    except Exception as error:  # the database refused the start (its migrations, say): one line, exit 2
        _cannot_start(settings, error, made)
    cpu = pin_to_one_cpu() if pin_cpu else None
    _announce(settings, host, port, "(API docs at /docs)" + (f"; its threads on CPU {cpu}" if cpu is not None else ""))
    freeze_startup_objects()
    uvicorn.run(application, host=host, port=port, forwarded_allow_ips=proxies, **UVICORN_OPTIONS)


def _proxies(allowed: str | None) -> str | None:
    """``--forwarded-allow-ips`` (or ``FORWARDED_ALLOW_IPS``) as uvicorn takes it, each address or network checked:
    uvicorn compares what it cannot read as one with the client's address as text, which never matches, so a
    mistyped proxy, or a network written with its host's bits (10.0.0.5/8), would trust no one without a word. None:
    uvicorn's default (127.0.0.1 and ::1).

    >>> _proxies(" 10.0.0.5, 10.1.0.0/16,::1")
    '10.0.0.5,10.1.0.0/16,::1'
    >>> _proxies("*")
    '*'
    """
    import ipaddress

    if allowed is None:
        return None
    if allowed.strip() == "*":
        return "*"
    proxies = [proxy.strip() for proxy in allowed.split(",")]
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy)  # an address is a network of one
        except ValueError as error:
            fail(f"--forwarded-allow-ips takes * or the proxies' addresses and networks separated by commas, like "
                 f"10.0.0.5,10.1.0.0/16: {error}.")
    return ",".join(proxies)


def _require_reachable(settings: Settings) -> None:
    """Connect to a PostgreSQL server's database once, before the data directory and its token are made: a server that
    is not there, or refuses the user, is one line and exit 2 with nothing left behind (before, the refused start left
    the directory and a token: found by a trial of an operator). An SQLite file is the start's to make; its URL is
    checked without opening it."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    from twentyone.server.db import tcp_keepalives

    try:
        engine = create_engine(settings.database_url, poolclass=NullPool,
                               connect_args=tcp_keepalives(settings.database_url))
        try:
            if engine.dialect.name != "sqlite":
                engine.connect().close()
        finally:
            engine.dispose()
    except Exception as error:  # a bad URL or an unreachable database
        _cannot_open(settings, error)


def _cannot_start(settings: Settings, error: Exception, made: list[Path]) -> NoReturn:
    """A start the database refused after the token was written (a migration that failed, a schema newer than this
    version's): what this start made, its token file and its data directory if nothing else is in it, is taken away
    again, and the error is one line, exit 2. A ``tables.toml`` the database's tables refuse (one that defines a table
    the operator made) says so, not that the database could not be opened."""
    import contextlib

    from twentyone.server.config import TableConfigError

    for path in made:  # the token file, then the directory
        # A token file never made (the token came from the environment) is not there; a directory that holds
        # something now (SQLite's database) is kept.
        with contextlib.suppress(OSError):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()
    if isinstance(error, TableConfigError):
        fail(str(error))
    _cannot_open(settings, error)


def _require_free_port(host: str, port: int) -> None:
    """Bind the address as uvicorn binds it (``SO_REUSEADDR``), and let it go: a port another process listens on is
    one line and exit 2 here, before anything is made or announced. Before, ``serve`` said it was serving, then
    uvicorn logged ``[Errno 98] address already in use`` and exited with 3 (found by an operator trial)."""
    import errno
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            fail(f"Port {port} is in use: another process listens on {host}:{port}; stop it, or choose another "
                 "--port.")
        fail(f"cannot listen on {host}:{port} ({error.strerror or error}).")


_SQLITE_HELD: list[int] = []  # the open lock of the SQLite database this process serves: held until it ends


def _sqlite_lock(url: str) -> Path | None:
    """The lock beside an SQLite database's file that its server holds (``twentyone.db.serve-lock``), by the file's
    real path (a symlink or ``..`` names the same file); None for another database, an in-memory one, or a ``file:``
    URI name, which is left unlocked.

    >>> _sqlite_lock("sqlite:////srv/casino/./twentyone.db")
    PosixPath('/srv/casino/twentyone.db.serve-lock')
    >>> _sqlite_lock("sqlite://") is None, _sqlite_lock("postgresql+psycopg://db/x") is None
    (True, True)
    """
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = parsed.database
    if parsed.get_backend_name() != "sqlite" or not name or name == ":memory:" or name.startswith("file:"):
        return None
    return Path(f"{Path(name).resolve()}.serve-lock")


def _hold_sqlite_alone(lock: Path) -> None:
    """SQLite is served by one process: hold ``lock`` until the process ends (a kill included), and refuse a second
    ``serve`` on the same file in one line, exit 2. Before, a second one started without a word: both ran the tables'
    timers, and each process's sockets heard only the events of its own requests (an operator's trial). A lock file
    of its own: SQLite's locks on the database file are POSIX locks, which any other descriptor of the file closed
    would release."""
    import fcntl
    import os

    try:
        handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        fail(f"cannot open {lock} to serve its database alone ({error.strerror or error}).")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(handle)
        if isinstance(error, BlockingIOError):
            database = str(lock).removesuffix(".serve-lock")
            fail(f"Another twentyone serve is running on {database}: SQLite is served by one process; stop it, or "
                 "use PostgreSQL for several (docs/server.md).")
        fail(f"cannot lock {lock} to serve its database alone ({error.strerror or error}).")
    _SQLITE_HELD.append(handle)


def _serve_workers(settings: Settings, wallet: str | None, host: str, port: int, workers: int,
                   pin_cpu: bool, proxies: str | None, made: list[Path], tables: Path | None) -> None:
    """``serve --workers N``: uvicorn's worker processes, each a full server sharing the PostgreSQL database.

    Migrations run once here, before any worker starts, and where the balances live is recorded (by ``--wallet``'s
    spec: each worker's own start then finds it so and appends nothing); the workers get their settings (the operator
    token included) through the environment. uvicorn's supervisor, this process, logs at INFO that a worker died and
    it started another (:func:`~twentyone.server.config.workers_logging`); the workers at WARNING, as ``serve`` does.
    """
    import os
    from datetime import UTC, datetime

    import uvicorn

    from twentyone.server.cluster import SUPERVISOR_ENV_VAR
    from twentyone.server.config import workers_logging
    from twentyone.server.cpu import PIN_ENV_VAR
    from twentyone.server.db import Database, migrate
    from twentyone.server.store import Store
    from twentyone.server.tables import TableRegistry
    from twentyone.server.wallet import record_wallet_mode

    try:
        migrate(settings.database_url)
        db = Database(settings.database_url)
        try:
            record_wallet_mode(db.transaction, wallet, datetime.now(UTC))
            # Published once here, so that a refusal is one line before any worker starts (each worker's start then
            # finds the file published and appends nothing).
            TableRegistry(Store(db, lambda: datetime.now(UTC)), lambda: datetime.now(UTC),
                          settings.tables).publish(settings.tables, settings.tables_source, settings.tables_given)
        finally:
            db.close()
    except Exception as error:  # the database refused the start (its migrations, say): one line, exit 2
        _cannot_start(settings, error, made)
    if tables is not None:  # the workers read the same file (a relative path from this directory)
        os.environ["TWENTYONE_TABLES"] = str(tables.resolve())
    os.environ.update({"TWENTYONE_DATABASE_URL": settings.database_url, "TWENTYONE_DATA_DIR": str(settings.data_dir),
                       "TWENTYONE_OPERATOR_TOKEN": settings.operator_token,
                       "TWENTYONE_DEMO": "1" if settings.demo else "0", PIN_ENV_VAR: "1" if pin_cpu else "0",
                       SUPERVISOR_ENV_VAR: str(os.getpid())})  # each worker ends with this process (cluster.py)
    if wallet:
        os.environ["TWENTYONE_OPERATOR_WALLET"] = wallet
    _announce(settings, host, port, f"with {workers} worker processes (API docs at /docs)")
    options: _UvicornOptions = {**UVICORN_OPTIONS, "log_level": None, "log_config": workers_logging()}
    uvicorn.run("twentyone.server.cluster:worker_app", factory=True, host=host, port=port, workers=workers,
                forwarded_allow_ips=proxies, **options)


admin_app = typer.Typer(help="Operator tasks on a server's database.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")


def _admin_service(database: str | None, data_dir: Path | None,
                   balances: bool = False) -> tuple[GameService, Caller, Settings]:
    """The server's service on its database, for the operator's commands. ``balances`` (credit, debit): with an
    operator's wallet in its place where the server runs with one (:func:`_operators_wallet_in_use`), so that the
    command refuses as the endpoint does rather than write to a ledger no balance is read from."""
    from twentyone.server.context import Caller
    from twentyone.server.db import Database
    from twentyone.server.service import GameService

    settings = _server_settings(database, data_dir, make_token=False)
    _require_database(settings)
    try:
        db = Database(settings.database_url)
        revision = _schema_revision(db)
    except Exception as error:  # a bad URL or an unreachable database: one line, exit 2
        _cannot_open(settings, error)
    _require_current_schema(settings, *revision)
    try:
        remote = _UnreachableWallet() if balances and _operators_wallet_in_use(db) is not None else None
        service = GameService(db, settings, operator_wallet=remote)
    except Exception as error:  # the database went away meanwhile
        _cannot_open(settings, error)
    return service, Caller(0, "operator", "operator"), settings


def _schema_revision(db: Database) -> tuple[str | None, str | None, bool]:
    """The database's schema revision (None: no twentyone schema, no ``alembic_version``), this version's newest (its
    migrations' head), and whether this version knows the database's (False: a newer version's)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from twentyone.server.db import MIGRATIONS

    with db.engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
    scripts = ScriptDirectory(str(MIGRATIONS))
    return current, scripts.get_current_head(), current in {script.revision for script in scripts.walk_revisions()}


def _require_current_schema(settings: Settings, current: str | None, head: str | None, known: bool) -> None:
    """The operator's commands read and write a server's database as it is: they never make or change its schema.
    A database without one is not a server's (a mistyped name, an empty database, which a command made into a new
    one before: found by a trial of an operator); one at an older revision is upgraded by a start of this version's
    server, not by a command beside a server of the older one still running on it (which would meet a schema it
    does not know); one at a revision this version does not know is a newer version's."""
    from twentyone.server.config import shown_url

    where = f"the database {shown_url(settings.database_url)!r}"
    if current is None:
        fail(f"{where} has no twentyone schema (no migration recorded in it): it is not a server's database; name "
             "the server's with --database or --data-dir, or start `twentyone serve` on it first.")
    if not known:
        fail(f"{where} is at schema revision {current}, which this version of twentyone does not know (a newer "
             "version's): run the operator's commands of the server's version.")
    if current != head:
        fail(f"{where} is at schema revision {current}, older than this version's {head}: start `twentyone serve` of "
             "this version on it to upgrade it (the operator's commands never change the schema), or run the "
             "commands of the server's version.")


def _operators_wallet_in_use(db: Database) -> str | None:
    """Where the server on this database keeps its balances in an operator's wallet, what tells the command line so
    (the end of a refusal's sentence); None where the built-in ledger keeps them.

    Each start of the server records where it keeps them when that changed (``wallet_modes``), and the latest start
    decides: an operator who went back to the built-in ledger credits from here again once the server started so.
    Before any start recorded one (a database upgraded by a start that went no further, or by the commands of an
    earlier version, which upgraded the schema; one that held calls to an operator's wallet got that row from the
    upgrade), the signs read before there was a record:
    ``TWENTYONE_OPERATOR_WALLET`` in the environment (how ``serve`` is told, beside ``--wallet``), or a call to such
    a wallet in the database (the outbox, ``wallet_calls``, which the built-in ledger never writes: a server of the
    version before the record, still running, writes them there).
    """
    import os

    from sqlalchemy import select

    from twentyone.server.models import WALLET_CALLS
    from twentyone.server.wallet import BUILT_IN, latest_wallet_mode

    with db.engine.connect() as connection:
        latest = latest_wallet_mode(connection)
        if latest is not None:
            if latest.mode == BUILT_IN:
                return None
            if latest.wallet is None:  # made by the upgrade (migration 0015): no start recorded since
                return (f"the calls to an operator's wallet in the database, recorded by the upgrade "
                        f"({latest.started_at:%Y-%m-%d %H:%M} UTC): a start of the server with the built-in ledger "
                        "records that in turn")
            return (f"the server's latest start recorded in the database ({latest.started_at:%Y-%m-%d %H:%M} UTC, with "
                    f"the operator's wallet {latest.wallet}): a start with the built-in ledger records that in turn")
        if os.environ.get("TWENTYONE_OPERATOR_WALLET"):
            return "TWENTYONE_OPERATOR_WALLET in its environment (no start of the server is recorded in the database)"
        if connection.execute(select(WALLET_CALLS.c.id).limit(1)).first() is not None:
            return "the calls to an operator's wallet in the database (no start of the server is recorded in it)"
    return None


class _UnreachableWallet:
    """The operator's wallet as the command line has it: none to call. A credit or a debit is refused before any call
    (the ledger's own refusal where an operator's wallet keeps the balances, the endpoint's 409)."""

    def _none(self, *_args: object) -> Any:
        from twentyone.server.wallet import WalletError

        raise WalletError("The operator's wallet is not called from the command line.", 503)

    balance = debit = credit = rollback = _none


def _require_database(settings: Settings) -> None:
    """The operator's commands work on a server's database: an SQLite file that is not there is a mistyped
    ``--data-dir`` (or the wrong working folder), which would otherwise make a new, empty database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(settings.database_url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        return  # not a URL: opening it says so
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database)
        if not path.exists():
            fail(f"there is no server database at {path}: start `twentyone serve` there first, or name the "
                 "server's with --data-dir or --database.")


DatabaseOption = Annotated[str | None, typer.Option("--database", help="SQLAlchemy URL of the server's database.")]
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="The server's data directory.")]


@admin_app.command("token")
def admin_token(
    database: Annotated[str | None, typer.Option("--database", help="Taken as the other commands take it, and not "
                                                  "read: the token is in the data directory, not the database.")]
    = None,
    data_dir: DataDirOption = None,
) -> None:
    """Print the operator token (bearer token for /admin endpoints): TWENTYONE_OPERATOR_TOKEN, else the one the
    server made in its data directory."""
    from twentyone.server.config import TOKEN_ENV_VAR, token_file

    # No database opened: a PostgreSQL server's data directory holds its token and no database (before, the command
    # looked for an SQLite file there and refused: found by a trial of an operator).
    settings = _server_settings(database, data_dir, make_token=False)
    if not settings.operator_token:
        fail(f"no operator token in {token_file(settings.data_dir)}: a server makes it at its first start, unless "
             f"it takes {TOKEN_ENV_VAR} from its environment (then that is the token).")
    typer.echo(settings.operator_token)


# credit and debit read their amount as text (_whole_amount), and take a token click does not know as an option for
# an argument: "-5" is refused as an amount, in one line. Before, typer refused "-5" ("No such option") and "1.5" in
# boxes of several lines (found by a trial of an operator); a mistyped option is now an extra argument, named as such.
AMOUNT_ARGUMENT = {"ignore_unknown_options": True}


@admin_app.command("credit", context_settings=AMOUNT_ARGUMENT)
def admin_credit(
    player: Annotated[str, typer.Argument(help="Player name.")],
    amount: Annotated[str, typer.Argument(help="Amount in minor units (500 is 5.00).")],
    currency: Annotated[str, typer.Option(help="Currency code.")] = "USD",
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Credit a demo balance to a player."""
    _change_balance("credit", player, amount, currency, database, data_dir)


@admin_app.command("debit", context_settings=AMOUNT_ARGUMENT)
def admin_debit(
    player: Annotated[str, typer.Argument(help="Player name.")],
    amount: Annotated[str, typer.Argument(help="Amount in minor units (500 is 5.00), at most the balance.")],
    currency: Annotated[str, typer.Option(help="Currency code.")] = "USD",
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Take an amount from a player's balance (a correction)."""
    _change_balance("debit", player, amount, currency, database, data_dir)


def _whole_amount(text: str) -> int:
    """An amount argument in minor units: digits alone, above 0 (the cap is :func:`check_amount`'s), else one line.

    >>> _whole_amount("500")
    500
    """
    from twentyone.core.money import MAX_AMOUNT

    digits = text.lstrip("0")
    if not text.isascii() or not text.isdigit() or not digits:
        fail(f"the amount must be a whole number of minor units above 0 (500 is 5.00), got {text!r}.")
    if len(digits) > 30:  # int() refuses text past 4,300 digits, and this is far past the cap already
        fail(f"the amount has {len(digits)} digits but amounts are capped at {MAX_AMOUNT} (10^15) minor units.")
    return int(digits)


def _change_balance(kind: str, player: str, text: str, currency: str, database: str | None,
                    data_dir: Path | None) -> None:
    from twentyone.server.service import ServiceError

    amount = _whole_amount(text)
    check_amount(amount, "the amount")
    service, operator, _ = _admin_service(database, data_dir, balances=True)
    try:
        result = (service.credit if kind == "credit" else service.debit)(operator, player, currency, amount)
    except ServiceError as error:
        # With an operator's wallet in the ledger's place, a 409 is its refusal: said with how the command knew.
        why = _operators_wallet_in_use(service.db) if not service.wallet.keeps_balances and error.status == 409 \
            else None
        fail(error.detail + (f" The command line knows it from {why}." if why else ""))
    typer.echo(f"{result['player']}: {currency} balance {result['balance']}")


@admin_app.command("create-table")
def admin_create_table(
    table_id: Annotated[str, typer.Argument(help="New table id.")],
    spec: Annotated[str, typer.Argument(help='Table definition as JSON, like {"name": ..., "variant": ...}.')],
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Add a table (variant, name, currency, chips, limits, seats, timers, theme), checked as POST /admin/tables
    checks it (the same model), before the database is opened."""
    from twentyone.server.service import ServiceError
    from twentyone.server.shapes import TableCreate

    definition = parse_json(spec, "the table definition")
    if not isinstance(definition, dict):
        fail("the table definition must be a JSON object.")
    if definition.get("id", table_id) != table_id:
        fail(f"the table's id is the ID argument, {table_id!r}, but the definition names {definition['id']!r}.")
    checked = _validated(TableCreate, {**definition, "id": table_id}).model_dump(exclude_none=True)
    del checked["id"]
    service, operator, _ = _admin_service(database, data_dir)
    try:
        table = service.create_table(operator, table_id, checked)
    except ServiceError as error:
        fail(error.detail)
    except (TypeError, ValueError, OverflowError) as error:  # a guard: the model's check leaves none through
        fail(f"the table definition has a value of the wrong kind ({error}).")
    typer.echo(f"created table {table['id']} ({table['variant']}, {table['currency']})")


@admin_app.command("remove-table")
def admin_remove_table(
    table_id: Annotated[str, typer.Argument(help="Id of a table made by the operator.")],
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Take a table the operator made out of the lobby, as DELETE /admin/tables/{id} does: its rounds stay readable,
    one dealt there is played out. A table of tables.toml is taken out there."""
    from twentyone.server.service import ServiceError

    service, operator, _ = _admin_service(database, data_dir)
    try:
        table = service.remove_table(operator, table_id)
    except ServiceError as error:
        fail(error.detail)
    still = table["rounds_open"]
    typer.echo(f"removed table {table['id']}" + (f" ({still} round{'s' if still != 1 else ''} open there: a round "
                                                 "dealt is played out, one still taking bets is voided)"
                                                 if still else ""))


@admin_app.command("report")
def admin_report(
    since: Annotated[str | None, typer.Option(help="Only the rounds that ended at or after this moment, ISO 8601 "
                                                   "with an offset (2026-12-01T00:00:00Z), as GET /admin/report's "
                                                   "since.")] = None,
    until: Annotated[str | None, typer.Option(help="Only the rounds that ended before this moment (as since).")]
    = None,
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Rounds, stakes, returns and house result by table: all of them, or those that ended in [since, until)."""
    from twentyone.server.service import ServiceError
    from twentyone.server.shapes import ReportQuery

    period = _validated(ReportQuery, {name: value for name, value in (("since", since), ("until", until))
                                      if value is not None})
    service, operator, _ = _admin_service(database, data_dir)
    try:
        report = service.report(operator, period.since, period.until)
    except ServiceError as error:
        fail(error.detail)
    typer.echo(json.dumps(report, indent=2))


@admin_app.command("wallet-calls")
def admin_wallet_calls(
    after: Annotated[int | None, typer.Option(min=0, help="List from after this call's id (the last page's "
                                                          "next_after).")] = None,
    size: Annotated[int, typer.Option(min=1, max=100, help="Calls to a page.")] = 50,
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Calls to the operator's wallet still pending (refused or unanswered), oldest first, with their totals."""
    service, operator, _ = _admin_service(database, data_dir)
    typer.echo(json.dumps(service.wallet_calls(operator, after, size), indent=2))


@admin_app.command("rounds")
def admin_rounds(
    status: Annotated[str | None, typer.Option(metavar="STATUS", help="open (betting or playing), betting, playing, "
                                                                      "settled or void.")] = None,
    table: Annotated[str | None, typer.Option(metavar="ID", help="Only this table's rounds.")] = None,
    before: Annotated[str | None, typer.Option(metavar="ID", help="List from below this round's id (the last page's "
                                                                   "next_before).")] = None,
    size: Annotated[str | None, typer.Option(metavar="N", help="Rounds to a page, 1 to 100 (20).")] = None,
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """Rounds newest first, with their clocks, seats and money, as GET /admin/rounds lists them: every one, or those of
    a status (open: in play) and/or a table."""
    from twentyone.server.service import ServiceError
    from twentyone.server.shapes import RoundsQuery

    # The endpoint's model, so that what it refuses with a 422 is refused here in its words (typer's own checks of an
    # integer would print a box of several lines).
    query = _validated(RoundsQuery, {name: value for name, value in (("status", status), ("table", table),
                                                                      ("before", before), ("size", size))
                                     if value is not None})
    service, operator, _ = _admin_service(database, data_dir)
    try:
        page = service.list_rounds(operator, query.status, query.table, query.before, query.size)
    except ServiceError as error:
        fail(error.detail)
    typer.echo(json.dumps(page, indent=2))


@admin_app.command("player")
def admin_player(
    name: Annotated[str, typer.Argument(help="The player's name, exactly as registered (as admin credit finds it).")],
    database: DatabaseOption = None, data_dir: DataDirOption = None,
) -> None:
    """A player, as GET /admin/players/NAME shows one: balances, limits, whether signed in now, and their last 10
    rounds as their own history shows them."""
    from twentyone.server.service import ServiceError

    service, operator, _ = _admin_service(database, data_dir)
    # An operator's wallet keeps the balances there, and the command line does not call it: none is shown rather than
    # the built-in ledger's, which no balance is read from on such a server.
    remote = _operators_wallet_in_use(service.db) is not None
    try:
        player = service.player(operator, name, balances=not remote)
    except ServiceError as error:
        fail(error.detail)
    if remote:
        typer.echo("note: balances live in the operator's wallet, which the command line does not call: "
                   "GET /admin/players/NAME asks it.", err=True)
    typer.echo(json.dumps(player, indent=2))


@app.command()
def verify(
    record: Annotated[str, typer.Argument(help="The JSON of GET /rounds/ID/verify, a file or - for stdin.")],
) -> None:
    """Check a past round's shuffle: the revealed shoe hashes to the published commitment, and the
    round's cards are that shoe's cards in order."""
    from twentyone.core.commitment import record_problem

    data = parse_json(read_input(record, "the record"), "the record")
    if not isinstance(data, dict):
        fail("the record must be a JSON object with salt, cards, commitment, first_card and drawn.")
    try:
        problem = record_problem(data)
    except (KeyError, TypeError, ValueError, OverflowError) as error:
        fail(f"the record lacks a field or has a wrong one ({error}); expected salt, cards, commitment, "
             "first_card and drawn.")
    if problem is not None:
        typer.echo(f"round {data.get('round_id')}: NOT verified: {problem}.", err=True)
        raise typer.Exit(1)
    typer.echo(f"round {data.get('round_id')}: verified: SHA-256 of salt and shoe order is {data['commitment']}, "
               f"and its {len(data['drawn'])} cards came out of that shoe in order.")


app.command()(simulate)


# The base of click's errors of usage (an unknown option or command, a missing argument, a value of the wrong kind):
# typer bundles its own click and exports none of its exception classes but BadParameter, one of them.
USAGE_ERROR: type[Exception] = next(base for base in typer.BadParameter.__mro__ if base.__name__ == "ClickException")


def main() -> None:
    """Console-script entry point. A mistyped command line is refused in one line with exit code 2, as every other
    bad input here (:func:`fail`); typer drew it as a box of five lines (noted in an operator's trial)."""
    try:
        code = app(standalone_mode=False)
    except USAGE_ERROR as error:
        message = " ".join(error.format_message().splitlines())  # type: ignore[attr-defined]
        if message:  # none where the command was given no arguments: its help was shown instead
            context = getattr(error, "ctx", None)
            helped = f" (see {context.command_path} --help)" if context is not None else ""
            typer.echo(f"error: {message}{helped}", err=True)
        sys.exit(error.exit_code)  # type: ignore[attr-defined]
    except typer.Abort:  # an interrupted prompt
        typer.echo("Aborted.", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)  # an Exit's code; a command's end, 0


if __name__ == "__main__":
    main()
