"""The return-to-player report of a game: main bet, side bets and cash out, beside the published figures.

>>> from twentyone.variants import builtin_rules
>>> report = rtp_report(builtin_rules("power"))
>>> round(report["main"]["optimal"], 2), report["main"]["published"]
(98.8, 98.8)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from twentyone.core.rules import Rules

if TYPE_CHECKING:
    from twentyone.analysis.game import GameAnalysis

UP_NAMES = {1: "A", 10: "10"}


def rtp_report(rules: Rules, analysis: GameAnalysis | None = None, split_strategy: str = "cdp") -> dict[str, Any]:
    """Every return of ``rules`` as percentages (4+ decimals), with the published ones where known.

    ``split_strategy`` (``cdz-``, ``cdp1``, ``cdp``) is how split hands are played under optimal play.
    """
    # Imported here: comparison_rows, below, serves a cached report without loading numpy or numba.
    from twentyone.analysis.cashout import cash_out_table
    from twentyone.analysis.game import GameAnalysis
    from twentyone.analysis.sidebets import side_bet_return

    analysis = analysis or GameAnalysis(rules, split_strategy=split_strategy)
    main = analysis.main_return()
    published = dict(rules.published)
    report: dict[str, Any] = {
        "variant": rules.id,
        "name": rules.name,
        "main": {
            "split_strategy": analysis.split_strategy,
            "optimal": main.optimal * 100,
            "basic": main.basic * 100,
            "by_up_optimal": {UP_NAMES.get(up, str(up)): value * 100 for up, value in main.by_up_optimal.items()},
            "by_up_basic": {UP_NAMES.get(up, str(up)): value * 100 for up, value in main.by_up_basic.items()},
        },
        "side_bets": {},
        "side_bet_lines": {},
        "cash_out": None,
        "published": {"main": published.get("main"),
                      "side_bets": {name: published[name] for name in rules.side_bets if name in published},
                      "cash_out": published.get("cash_out"),
                      "fitted": sorted(rules.fitted)},
    }
    if "main" in published:
        report["main"]["published"] = published["main"]
    for name in rules.side_bets:
        side = side_bet_return(rules, name)
        report["side_bets"][name] = side.percent
        report["side_bet_lines"][name] = {
            line: {"probability": p, "pays": pays, "contribution": contribution * 100}
            for line, (p, pays, contribution) in side.lines.items()
        }
        if isinstance(side.rtp, type(side.rtp)) and hasattr(side.rtp, "numerator"):
            report["side_bet_lines"][name]["exact"] = str(side.rtp)
    if rules.insurance.even_money:
        taken = even_money_gain(rules, analysis)
        if taken > 0:  # basic strategy declines every offer: here taking even money is worth more (a 6:5 game, say)
            report["main"]["basic_with_even_money"] = report["main"]["basic"] + taken * 100
    if rules.cash_out.enabled and rules.cash_out.target_return is not None:
        table = cash_out_table(rules, analysis)
        report["cash_out"] = table.always_cash_out * 100
        report["cash_out_table"] = {"margin": table.margin * 100, "span": [table.span[0], table.span[1]]}
    if rules.cash_out.enabled:
        # Optimal play that also cashes out wherever the offer beats playing on. With the offers priced from the
        # lowest hand of each total (cash_out.fair_value = "lowest", the default) none does (one hand from the shoe as
        # dealt, as every figure here is valued), and it is the main game's
        # optimal return; priced from the two-card hands' average ("optimal"), a hand that hit, and can no longer
        # double or split, is paid more than it is worth, and it returned 99.4966 % at first person (a trial of an
        # analyst). Either way it is the game's best return, set against the sheet's optimal figure.
        with_cash_out = GameAnalysis(rules, analysis.counts, analysis.split_strategy, cash_out=True)
        report["cash_out_optimal"] = with_cash_out.optimal_return() * 100
    return report


def even_money_gain(rules: Rules, analysis: GameAnalysis) -> float:
    """What taking even money on every blackjack against an Ace adds to the return (per unit of the main bet, over
    every deal) against playing it on, as basic strategy does: negative where declining is better, as with 3:2.
    An analyst's trial found basic strategy's figure a 6:5 game's without even money, where taking it pays more.

    >>> from twentyone.variants import builtin_rules
    >>> from twentyone.analysis.game import GameAnalysis
    >>> classic = builtin_rules("classic")
    >>> even_money_gain(classic, GameAnalysis(classic)) < 0
    True
    """
    payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
    return sum(p * (1.0 - (1.0 - analysis.hand_ev(cards, up).dealer_blackjack) * payout)
               for up, cards, p in analysis.deals() if up == 1 and sorted(cards) == [1, 10])


def rounds_to(computed: float, published: float) -> bool:
    """Whether ``computed`` (a percentage) rounds to ``published``, which a sheet gives to two decimals.

    >>> rounds_to(99.2926, 99.29), rounds_to(99.4420, 99.52), rounds_to(96.2961, 96.30)
    (True, False, True)
    """
    return abs(computed - published) <= 0.005 + 1e-9


def _sourced_rows(report: dict[str, Any]) -> list[tuple[str, float, float | None, str]]:
    """:func:`comparison_rows`, each with the name of the published figure it is set against (``[published]``)."""
    published = report["published"]
    rows: list[tuple[str, float, float | None, str]] = [
        ("Main game, optimal play", report["main"]["optimal"], published["main"], "main"),
        ("Main game, basic strategy", report["main"]["basic"], published["main"], "main"),
    ]
    if report["main"].get("basic_with_even_money") is not None:  # only where taking it is worth more than declining
        rows.append(("Basic strategy, taking even money", report["main"]["basic_with_even_money"], published["main"],
                     "main"))
    for name, value in report["side_bets"].items():
        rows.append((f"Side bet {name}", value, published["side_bets"].get(name), name))
    if report["cash_out"] is not None:
        rows.append(("Always take the first cash out", report["cash_out"], published["cash_out"], "cash_out"))
    if report.get("cash_out_optimal") is not None:  # the sheet's optimal figure is for the game as played: cash out too
        rows.append(("Optimal play with cash out", report["cash_out_optimal"], published["main"], "main"))
    return rows


def comparison_rows(report: dict[str, Any]) -> list[tuple[str, float, float | None]]:
    """(label, computed %, published % or None) for the table the CLI prints."""
    return [(label, value, published) for label, value, published, _ in _sourced_rows(report)]


def met_by_construction(report: dict[str, Any]) -> list[str]:
    """The labels of :func:`comparison_rows` whose published figure the rules were chosen to meet (``[published]
    fitted`` in the rules file: a paytable or cash-out margin the sheet does not print), so that their agreement is
    no check of the maths.

    >>> met_by_construction({"main": {"optimal": 99.3, "basic": 99.2}, "cash_out": 96.8,
    ...                      "published": {"main": 99.29, "fitted": ["21+3", "cash_out"], "cash_out": 96.8,
    ...                                    "side_bets": {"21+3": 96.3}}, "side_bets": {"21+3": 96.3, "pp": 95.9}})
    ['Side bet 21+3', 'Always take the first cash out']
    """
    fitted = set(report["published"].get("fitted", ()))
    return [label for label, _, published, source in _sourced_rows(report) if published is not None
            and source in fitted]
