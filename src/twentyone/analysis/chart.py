"""The basic-strategy chart: as data, in the terminal with colours, and as a printable picture.

>>> from twentyone.analysis.game import GameAnalysis
>>> from twentyone.variants import builtin_rules
>>> chart = strategy_chart(GameAnalysis(builtin_rules("classic")).basic_strategy())
>>> chart["hard"]["16"]["10"], chart["soft"]["18"]["9"], chart["pairs"]["8,8"]["10"]  # no peek under a ten
('H', 'H', 'H')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twentyone.analysis.game import STRATEGY_UPS, BasicStrategy
from twentyone.core.hand import value_of_points

UP_LABELS = {1: "A", 10: "10"}
LEGEND = {
    "H": "Hit", "S": "Stand", "D": "Double (else hit)", "Ds": "Double (else stand)",
    "T": "Triple (else hit)", "Ts": "Triple (else stand)", "Q": "Quadruple (else hit)",
    "Qs": "Quadruple (else stand)", "P": "Split", "R": "Surrender (else hit)", "Rs": "Surrender (else stand)",
}
COLOURS = {"H": "#e74c3c", "S": "#f1c40f", "D": "#2ecc71", "T": "#27ae60", "Q": "#1e8449", "P": "#3498db",
           "R": "#bdc3c7"}
TERMINAL_STYLES = {"H": "bold white on red", "S": "bold black on yellow", "D": "bold black on green",
                   "T": "bold white on dark_green", "Q": "bold white on dark_green", "P": "bold white on blue",
                   "R": "bold black on white"}


def strategy_chart(strategy: BasicStrategy) -> dict[str, Any]:
    """Rows of hard totals (5-20), soft totals (13-20) and pairs, each with one code per dealer up card.

    A total no two cards make (power has no 9s nor tens: no hard 19, no soft 20) is still reached by drawing
    (7, 2, K), so its row says the hit-or-stand play; before, the row was missing (an analyst's trial).

    >>> from twentyone.analysis.game import GameAnalysis
    >>> from twentyone.variants import builtin_rules
    >>> chart = strategy_chart(GameAnalysis(builtin_rules("power")).basic_strategy())
    >>> chart["hard"]["19"]["A"], chart["soft"]["20"]["6"]
    ('S', 'S')
    """
    ups = [up for up in STRATEGY_UPS if up in strategy.two_card_by_up]
    chart: dict[str, Any] = {"up_cards": [UP_LABELS.get(up, str(up)) for up in ups], "hard": {}, "soft": {},
                             "pairs": {}, "legend": LEGEND}
    for section, soft, totals in (("hard", False, range(5, 21)), ("soft", True, range(13, 21))):
        for total in totals:
            chart[section][str(total)] = {
                UP_LABELS.get(up, str(up)): strategy.two_card_by_up[up].get(
                    (total, soft), "H" if strategy.hit_by_up[up].get((total, soft)) else "S")
                for up in ups}
    for pair in (1, 10, 9, 8, 7, 6, 5, 4, 3, 2):
        if not any(pair in strategy.pairs_by_up.get(up, {}) for up in ups):
            continue
        label = "A,A" if pair == 1 else f"{pair},{pair}"
        total, soft = value_of_points([pair, pair])
        chart["pairs"][label] = {
            UP_LABELS.get(up, str(up)): "P" if strategy.pairs_by_up[up].get(pair) else
            strategy.two_card_by_up[up].get((total, soft), "H")
            for up in ups
        }
    return chart


def terminal_chart(chart: dict[str, Any], title: str) -> Any:
    """A rich renderable of the chart (one table per section) with colour and letters."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    tables: list[Any] = [Text(title, style="bold")]
    for section, heading in (("hard", "Hard totals"), ("soft", "Soft totals"), ("pairs", "Pairs")):
        table = Table(title=heading, title_justify="left", padding=(0, 0), show_edge=False)
        table.add_column("", justify="right", style="bold")
        for up in chart["up_cards"]:
            table.add_column(up, justify="center", min_width=3)
        for label, row in chart[section].items():
            table.add_row(label, *[Text(f"{code:^3}", style=TERMINAL_STYLES[code[0]]) for code in row.values()])
        tables.append(table)
    legend = Text("  ".join(f"{code} {text}" for code, text in LEGEND.items()
                            if any(code in row.values() for part in ("hard", "soft", "pairs")
                                   for row in chart[part].values())), style="dim")
    tables.append(legend)
    return Group(*tables)


def save_png(chart: dict[str, Any], title: str, path: Path) -> None:
    """Draw the chart as a picture a player would print (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    sections = [("Hard", chart["hard"]), ("Soft", chart["soft"]), ("Pairs", chart["pairs"])]
    rows = sum(len(rows) + 2 for _, rows in sections) + 2
    ups = chart["up_cards"]
    figure, axes = plt.subplots(figsize=(7.5, rows * 0.28 + 1.2))
    axes.set_xlim(0, len(ups) + 1.6)
    axes.set_ylim(rows + 1, 0)
    axes.axis("off")
    axes.set_title(title, fontsize=13, fontweight="bold")
    y = 0.5
    for heading, section in sections:
        axes.text(0, y + 0.5, heading, fontsize=10, fontweight="bold", va="center")
        for column, up in enumerate(ups):
            axes.text(column + 1.6 + 0.5, y + 0.5, up, ha="center", va="center", fontsize=9, fontweight="bold")
        y += 1
        for label, row in section.items():
            axes.text(1.4, y + 0.5, label, ha="right", va="center", fontsize=9)
            for column, code in enumerate(row.values()):
                axes.add_patch(Rectangle((column + 1.6, y), 1, 1, facecolor=COLOURS[code[0]], edgecolor="white"))
                axes.text(column + 2.1, y + 0.5, code, ha="center", va="center", fontsize=8, fontweight="bold")
            y += 1
        y += 1
    used = [code for code in LEGEND if any(code in row.values() for _, s in sections for row in s.values())]
    legend = "   ".join(f"{code} = {LEGEND[code]}" for code in used)
    axes.text(0, y + 0.3, legend, fontsize=7, va="top", wrap=True)
    figure.tight_layout()
    figure.savefig(path, dpi=150)
    plt.close(figure)
