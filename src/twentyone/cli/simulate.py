"""``twentyone simulate``: Monte Carlo rounds of a game on the compiled kernel, locally or on Dask.

The simulator (numba, matplotlib, Dask) is imported inside the command, so
``twentyone --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from twentyone.cli import png_path_refusal

if TYPE_CHECKING:
    from twentyone.sim.result import SimulationResult


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def simulate(
    variant: Annotated[str | None, typer.Argument(help="A built-in game.")] = None,
    rules_file: Annotated[Path | None, typer.Option("--rules", help="A rules file instead of a built-in game.")] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="Rounds to play.")] = 1_000_000,
    strategy: Annotated[str, typer.Option(
        help="basic, optimal, or a chart file written by `twentyone strategy --json`.")] = "basic",
    side_bets: Annotated[str, typer.Option("--side-bets", help="Comma-separated side bets on every hand, or all.")
                         ] = "",
    hands: Annotated[int, typer.Option(help="Spots played each round (players, in a one-hand game).")] = 1,
    workers: Annotated[int | None, typer.Option(help="Local processes (default: every core).")] = None,
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786.")] = None,
    seed: Annotated[int, typer.Option(help="The same seed gives the same result for any number of workers.")] = 0,
    insurance: Annotated[bool, typer.Option("--insurance", help="Take insurance whenever offered.")] = False,
    even_money: Annotated[bool, typer.Option("--even-money", help="Take even money whenever offered.")] = False,
    cash_out: Annotated[bool, typer.Option("--cash-out", help="Take the first cash-out offer on every hand.")
                        ] = False,
    fresh_shoe: Annotated[bool, typer.Option("--fresh-shoe", help="Reshuffle every round even in a cut-card game.")
                          ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of the RTP converging on the exact value.")] = None,
) -> None:
    """Simulate rounds on the compiled kernel: RTP with standard errors beside the exact maths."""
    from twentyone.core.rules import RulesError
    from twentyone.variants import VARIANTS, resolve_rules

    if variant is None and rules_file is None:
        _fail(f"name a game ({', '.join(VARIANTS)}) or give --rules FILE.")
    if variant is not None and rules_file is not None:  # the game named was dropped without a word (a trial)
        _fail(f"name a game or give --rules FILE, not both: the file is its own game (got {variant!r} too).")
    try:
        rules = resolve_rules(variant, rules_file)
    except RulesError as error:
        _fail(str(error))
    if rounds < 1:
        _fail(f"--rounds must be at least 1, got {rounds}.")
    if workers is not None and workers < 1:
        _fail(f"--workers must be at least 1, got {workers}.")
    if seed < 0:
        _fail(f"--seed must be 0 or more, got {seed}.")
    if plot is not None and (refusal := png_path_refusal(plot, "--plot")):
        _fail(refusal)
    names = tuple(rules.side_bets) if side_bets == "all" else tuple(n for n in side_bets.split(",") if n)

    from twentyone.sim.tables import SimOptions, SimulationError

    options = SimOptions(hands=hands, side_bets=names, insurance=insurance, even_money=even_money,
                         cash_out=cash_out, fresh_shoe=fresh_shoe)
    try:
        result = _run_with_progress(rules, rounds, strategy, options, seed, workers, scheduler, quiet=as_json)
    except SimulationError as error:
        _fail(str(error))
    if plot is not None:
        from twentyone.sim.plot import save_convergence_png

        try:
            save_convergence_png(result, plot)
        except OSError as error:
            _fail(f"cannot write {str(plot)!r} ({error.strerror}).")
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
    else:
        _report(result)


def _run_with_progress(rules: Any, rounds: int, strategy: str, options: Any, seed: int, workers: int | None,
                       scheduler: str | None, quiet: bool) -> SimulationResult:
    from twentyone.sim.run import simulate as run_simulation

    if quiet or not sys.stderr.isatty():
        return run_simulation(rules, rounds, strategy, options, seed, workers, scheduler)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[speed]}"), TimeRemainingColumn(), TextColumn("{task.fields[rtp]}"))
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(rules.id, total=rounds, speed="", rtp="")

        def update(done: int, partial: SimulationResult) -> None:
            main = partial.main
            speed = f"{partial.rounds / partial.seconds:,.0f} rounds/s" if partial.seconds > 0 else ""
            bar.update(task, completed=done, speed=speed, rtp=f"RTP {main.rtp:.3f} % ± {1.96 * main.se:.3f}")

        return run_simulation(rules, rounds, strategy, options, seed, workers, scheduler, progress=update)


def _report(result: SimulationResult) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    data = result.as_dict()
    rules = result.game.rules
    # A rules file's name is the user's text: escaped, a "[...]" in it is printed, not taken for a style.
    console.print(f"[bold]{escape(rules.name)}[/bold]: {data['rounds']:,} rounds x {data['hands']} hand(s), "
                  f"{result.strategy} strategy, seed {result.seed}, {result.chunks} chunks on {result.workers} "
                  f"worker(s), {data['seconds']:.2f} s ({data['rounds_per_second']:,.0f} rounds/s)", highlight=False)
    table = Table(title="Return to player (%)", title_justify="left")
    for column in ("bet", "simulated", "SE", "95 % interval", "exact", "difference / SE"):
        table.add_column(column, justify="left" if column == "bet" else "right")
    rows = [("main", data["main"], data["exact"].get("main"))]
    if "first_hand" in data:
        rows.append(("main, 1st hand of shoe", data["first_hand"], data["exact"].get("main")))
    rows += [(name, side, data["exact"]["side_bets"].get(name)) for name, side in data["side_bets"].items()]
    for label, e, exact in rows:
        low, high = e["ci95"]
        diff = "" if exact is None or not e["se"] else f"{(e['rtp'] - exact) / e['se']:+.2f}"
        table.add_row(label, f"{e['rtp']:.4f}", f"{e['se']:.4f}", f"{low:.4f} – {high:.4f}",
                      "" if exact is None else f"{exact:.4f}", diff)
    console.print(table)
    console.print("Main bet, share of hands by outcome: "
                  + ", ".join(f"{name} {share * 100:.4f} %" for name, share in data["outcomes"].items()),
                  highlight=False)
    for name, side in data["side_bets"].items():
        lines = ", ".join(f"{line} {p * 100:.4f} %" for line, p in side["lines"].items())
        console.print(f"{name} line frequencies: {lines}", highlight=False)
    if "by_depth" in data:
        console.print(f"Whole shoes: {data['shoes']:,}; RTP by depth of the shoe dealt before the round: "
                      + ", ".join(f"{row['depth'][0]:.0%}-{row['depth'][1]:.0%} {row['rtp']:.3f}±{row['se']:.3f}"
                                  for row in data["by_depth"]), highlight=False)
    distribution = sorted(data["net_distribution"].items(), key=lambda item: -item[1])[:8]
    console.print("Net result per round (main bets, most frequent): "
                  + ", ".join(f"{net} {share * 100:.2f} %" for net, share in distribution), highlight=False)
    console.print(f"Largest win in one round: {data['largest_win']:g} main bets.", highlight=False)
