"""Write the placeholder first-person cash-out table (until the exact maths lands).

The formula, documented in README.md and docs/variants.md:

    offer(total, soft, up) = round((1 + EV) * (1 - MARGIN), 2)

where EV is the infinite-deck expected value of the hand under the best of hit
and stand (no double, no split: a cash-out hand can still only hit or stand),
against the dealer's up card: under an Ace the dealer has already peeked (no
blackjack), under a ten there is no peek and a dealer blackjack takes the hand.
MARGIN is the operator's single margin, 3 %. Run:

    python scripts/placeholder_cash_out.py > src/twentyone/variants_data/first-person-cash-out.toml
"""

from __future__ import annotations

from functools import cache

MARGIN = 0.03
VALUES = range(1, 11)  # Ace as 1, then 2..10


def p(value: int) -> float:
    return 4 / 13 if value == 10 else 1 / 13


def add(total: int, soft: bool, value: int) -> tuple[int, bool]:
    hard = total - (10 if soft else 0) + value
    if (soft or value == 1) and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


@cache
def dealer_final(total: int, soft: bool) -> dict[int, float]:
    """Final dealer totals (22 = bust) from a dealer hand standing on all 17s."""
    if total >= 17:
        return {min(total, 22): 1.0}
    out: dict[int, float] = {}
    for value in VALUES:
        for final, q in dealer_final(*add(total, soft, value)).items():
            out[final] = out.get(final, 0.0) + p(value) * q
    return out


def dealer_after_up(up: int) -> dict[int, float]:
    """Dealer outcomes given the up card; 0 stands for a dealer blackjack."""
    out: dict[int, float] = {}
    total, soft = add(0, False, up)
    holes = {value: p(value) for value in VALUES}
    if up == 1:  # peeked: the hole card is not a ten
        holes = {value: q / (1 - p(10)) for value, q in holes.items() if value != 10}
    for hole, q in holes.items():
        t, s = add(total, soft, hole)
        if t == 21:
            out[0] = out.get(0, 0.0) + q
            continue
        for final, r in dealer_final(t, s).items():
            out[final] = out.get(final, 0.0) + q * r
    return out


def stand_ev(total: int, dealer: dict[int, float]) -> float:
    ev = 0.0
    for final, q in dealer.items():
        if final == 0:
            ev -= q
        elif final == 22 or total > final:
            ev += q
        elif total < final:
            ev -= q
    return ev


def best_ev(total: int, soft: bool, dealer: dict[int, float], memo: dict[tuple[int, bool], float]) -> float:
    if total > 21:
        return -1.0
    key = (total, soft)
    if key not in memo:
        hit = sum(p(v) * best_ev(*add(total, soft, v), dealer, memo) for v in VALUES)
        memo[key] = max(stand_ev(total, dealer), hit)
    return memo[key]


def main() -> None:
    ups = [2, 3, 4, 5, 6, 7, 8, 9, 10, 1]
    dealers = {up: dealer_after_up(up) for up in ups}
    memos: dict[int, dict[tuple[int, bool], float]] = {up: {} for up in ups}
    print("# Placeholder cash-out offers for First Person Blackjack, written by")
    print("# scripts/placeholder_cash_out.py: (1 + infinite-deck hit/stand EV) x (1 - 3 % margin).")
    print("# Rows: the hand's total; columns: dealer up card 2, 3, 4, 5, 6, 7, 8, 9, 10, A.")
    print('source = "placeholder: infinite-deck hit/stand EV with a 3 % margin"')
    for kind, totals in (("hard", range(4, 21)), ("soft", range(12, 21))):
        print(f"\n[{kind}]")
        for total in totals:
            row = []
            for up in ups:
                ev = best_ev(total, kind == "soft", dealers[up], memos[up])
                row.append(f"{(1 + ev) * (1 - MARGIN):.2f}")
            print(f'"{total}" = [{", ".join(row)}]')


if __name__ == "__main__":
    main()
