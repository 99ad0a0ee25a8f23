"""The compiled round: numba code that plays complete rounds of any rules, many millions a second.

Everything here mirrors :class:`twentyone.core.round.Round` step by step (deal order,
offers, peek, splits, doubles, common draw, dealer play, settlement, side bets) on
plain integer arrays, so that the differential test can hold the two side by side.
The layout of the integer parameter vector and of the strategy tables is built by
:mod:`twentyone.sim.tables`; this module only reads them.

Cards are integers ``rank * 4 + suit`` with ranks ``A23456789TJQK`` (0-12) and suits
``SHDC`` (0-3). The shoe is one array: a round draws card ``k`` by swapping a uniformly
chosen card of the undealt part into place ``k`` (a partial Fisher-Yates shuffle), so a
reshuffle before every round costs only the cards the round uses.

Randomness is xoshiro256** seeded from :class:`numpy.random.SeedSequence`, one stream
per chunk, so a chunk's result does not depend on which process plays it.

Why one module: numba compiles the round as one set of functions that call each other
directly; spreading them over modules would cost inlining and the on-disk cache.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---- parameter vector layout (see tables.compile_game) -------------------------------------------
P_CARDS, P_CUT, P_H17, P_PEEK, P_TAKES_ORIGINAL = 0, 1, 2, 3, 4
P_ORDER_LEN, P_ORDER = 5, 6  # up to four deal steps: 0 hands, 1 dealer up, 2 dealer hole
P_COMMON, P_DOUBLE_TOTALS, P_DOUBLE_MASK, P_DAS = 10, 11, 12, 13
P_SPLIT_RANK, P_MAX_HANDS, P_ACES_ONE, P_RESPLIT_ACES = 14, 15, 16, 17
P_INS_OFFERED, P_INS_NUM, P_INS_DEN, P_INS_TO_BJ, P_EVEN_MONEY = 18, 19, 20, 21, 22
P_SURRENDER, P_BJ_NUM, P_BJ_DEN, P_WIN_NUM, P_WIN_DEN, P_AUTO_STAND = 23, 24, 25, 26, 27, 28
P_CASH_OUT, P_HOLE, P_UP_INDEX, P_SPOTS, P_BET = 29, 30, 31, 32, 33
P_TAKE_INSURANCE, P_TAKE_EVEN_MONEY, P_TAKE_CASH_OUT, P_SIDE_STAKE, P_PLAYERS = 34, 35, 36, 37, 38
P_OPTIMAL = 39  # 1: follow the composition-dependent tables (opt_*) instead of the chart
P_SIZE = 40

# ---- actions: the order of twentyone.core.operations.Action -------------------------------------
HIT, STAND, DOUBLE, TRIPLE, QUADRUPLE, SPLIT, SURRENDER, CASH_OUT = 0, 1, 2, 3, 4, 5, 6, 7
INSURANCE, NO_INSURANCE, EVEN_MONEY, NO_EVEN_MONEY, NO_SURRENDER = 8, 9, 10, 11, 12

# ---- hand status -------------------------------------------------------------------------------
PLAYING, STOOD, DOUBLED, BUST, BLACKJACK, SURRENDERED, CASHED_OUT, EVEN_MONEY_TAKEN = 0, 1, 2, 3, 4, 5, 6, 7

# ---- side bets: kinds and line indices in the order of core.rules.SIDE_BET_LINES -----------------
PERFECT_PAIRS, TWENTY_ONE_PLUS_THREE, ANY_PAIR, HOT_3, BUST_IT = 0, 1, 2, 3, 4
LOSE_SLOT, PUSH_SLOT, LINE_SLOTS = 6, 7, 8

# ---- per-chunk statistics (float64 vector) ------------------------------------------------------
S_ROUNDS, S_MAIN_NET, S_MAIN_SQ, S_MAIN_WAGER, S_BIGGEST, S_FIRST_N, S_FIRST_NET, S_FIRST_SQ = 0, 1, 2, 3, 4, 5, 6, 7
S_SHOES, S_STAKED, S_RETURNED = 8, 9, 10
# Hands settled by outcome (the engine's names, in OUTCOMES order), then insurance won and lost.
S_OUTCOMES = 11
OUTCOMES = ("blackjack", "win", "push", "lose", "bust", "surrender", "cash-out", "even-money")
O_BLACKJACK, O_WIN, O_PUSH, O_LOSE, O_BUST, O_SURRENDER, O_CASH_OUT, O_EVEN_MONEY = 0, 1, 2, 3, 4, 5, 6, 7
S_INSURANCE_WON, S_INSURANCE_LOST = 19, 20
STATS_SIZE = 21

MAX_HANDS = 96
MAX_CARDS = 24
HIST_OFFSET = 64  # net result histogram: bins of half a main bet, from -32 to +32 bets
HIST_SIZE = 129


@njit(cache=True, inline="always")
def _rotl(x, k):  # type: ignore[no-untyped-def]
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True)
def next_u64(state):  # type: ignore[no-untyped-def]
    """xoshiro256**: the next 64 random bits; ``state`` is four uint64 words, updated in place."""
    result = _rotl(state[1] * np.uint64(5), 7) * np.uint64(9)
    t = state[1] << np.uint64(17)
    state[2] ^= state[0]
    state[3] ^= state[1]
    state[1] ^= state[2]
    state[0] ^= state[3]
    state[2] ^= t
    state[3] = _rotl(state[3], 45)
    return result


@njit(cache=True)
def below(state, n):  # type: ignore[no-untyped-def]
    """A uniform integer in ``[0, n)`` without modulo bias (Lemire's multiply-and-reject, 32 bits)."""
    m = np.uint64(n)
    product = (next_u64(state) >> np.uint64(32)) * m
    low = product & np.uint64(0xFFFFFFFF)
    if low < m:
        threshold = (np.uint64(0x100000000) - m) % m
        while low < threshold:
            product = (next_u64(state) >> np.uint64(32)) * m
            low = product & np.uint64(0xFFFFFFFF)
    return np.int64(product >> np.uint64(32))


@njit(cache=True, inline="always")
def _value(card):  # type: ignore[no-untyped-def]
    rank = card >> 2
    return 10 if rank >= 9 else rank + 1


@njit(cache=True, inline="always")
def _total(hard, aces):  # type: ignore[no-untyped-def]
    """(best total, soft) from the hard sum and whether the hand holds an Ace."""
    if aces > 0 and hard + 10 <= 21:
        return hard + 10, 1
    return hard, 0


# ---- side-bet evaluators on card codes (line index, or -1 when the bet loses) ---------------------
@njit(cache=True)
def _straight(a, b, c):  # type: ignore[no-untyped-def]
    if a == b or b == c or a == c:  # noqa: SIM109 (plain comparisons compile simplest in numba)
        return False
    low = min(a, b, c)
    high = max(a, b, c)
    if high - low == 2:
        return True
    # Ace high: Q-K-A.
    a2 = 14 if a == 1 else a
    b2 = 14 if b == 1 else b
    c2 = 14 if c == 1 else c
    return max(a2, b2, c2) - min(a2, b2, c2) == 2


@njit(cache=True)
def deal_time_line(kind, first, second, up):  # type: ignore[no-untyped-def]
    """The paytable line a deal-time side bet hits (index into its SIDE_BET_LINES), or -1."""
    r1, r2, r3 = first >> 2, second >> 2, up >> 2
    s1, s2, s3 = first & 3, second & 3, up & 3
    if kind == PERFECT_PAIRS:
        if r1 != r2:
            return -1
        if s1 == s2:
            return 0
        red1 = s1 == 1 or s1 == 2
        red2 = s2 == 1 or s2 == 2
        return 1 if red1 == red2 else 2
    if kind == ANY_PAIR:
        if r1 != r2:
            return -1
        return 0 if s1 == s2 else 1
    suited = s1 == s2 and s2 == s3
    if kind == TWENTY_ONE_PLUS_THREE:
        if r1 == r2 and r2 == r3:
            return 0 if suited else 2
        straight = _straight(r1 + 1, r2 + 1, r3 + 1)
        if straight and suited:
            return 1
        if straight:
            return 3
        if suited:
            return 4
        return -1
    if kind == HOT_3:
        if r1 == 6 and r2 == 6 and r3 == 6:
            return 0
        hard = _value(first) + _value(second) + _value(up)
        aces = (r1 == 0) + (r2 == 0) + (r3 == 0)
        total, _ = _total(hard, aces)
        if total == 21:
            return 1 if suited else 2
        if total == 20:
            return 3
        if total == 19:
            return 4
        return -1
    return -1


@njit(cache=True)
def _bust_it_line(dealer_total, dealer_cards):  # type: ignore[no-untyped-def]
    if dealer_total <= 21:
        return -1
    if dealer_cards >= 8:
        return 0
    return 8 - dealer_cards  # bust_7 is line 1 ... bust_3 is line 5


@njit(cache=True)
def _peeks(peek, up_card):  # type: ignore[no-untyped-def]
    rank = up_card >> 2
    if peek == 0:
        return False
    if rank == 0:
        return True
    if peek == 2:
        return rank >= 9
    if peek == 3:
        return rank >= 10
    return False


@njit(cache=True)
def _draw(deck, pos, n_cards, state):  # type: ignore[no-untyped-def]
    """Deal the card at ``pos``: swap a uniformly chosen undealt card into place (partial Fisher-Yates)."""
    # Never past the array, even for a round that would outlast the shoe (compile_game refuses
    # hands that could). A min, not a branch with a second draw: that branch halved the speed.
    at = min(pos, n_cards - 1)
    j = at + below(state, n_cards - at)
    card = deck[j]
    deck[j] = deck[at]
    deck[at] = card
    return card


@njit(cache=True, inline="always")
def _trace(tracing, trace, r, count, item):  # type: ignore[no-untyped-def]
    """When tracing, record ``item`` (a card or a decision) after the ``count`` of round ``r``; the new count."""
    if tracing:
        trace[r, count] = item
        return count + 1
    return count


@njit(cache=True, inline="always")
def _add_card(h_cards, h_n, h_hard, h_aces, h, card):  # type: ignore[no-untyped-def]
    """Put ``card`` on hand ``h``: its cards, their count, its hard total and its Aces."""
    h_cards[h, h_n[h]] = card
    h_n[h] += 1
    h_hard[h] += _value(card)
    h_aces[h] += card >> 2 == 0


@njit(cache=True, inline="always")
def _hard_aces(cards, n):  # type: ignore[no-untyped-def]
    """The hard total of the first ``n`` ``cards`` and how many of them are Aces."""
    hard = 0
    aces = 0
    for k in range(n):
        hard += _value(cards[k])
        aces += cards[k] >> 2 == 0
    return hard, aces


@njit(cache=True)
def _double_allowed(P, total, n_cards, from_split, split_aces, multiplier):  # type: ignore[no-untyped-def]
    if (P[P_DOUBLE_MASK] >> multiplier) & 1 == 0 or n_cards != 2:
        return False
    if split_aces and P[P_ACES_ONE]:
        return False
    if from_split and not P[P_DAS]:
        return False
    if P[P_DOUBLE_TOTALS] == 1:
        return 9 <= total <= 11
    if P[P_DOUBLE_TOTALS] == 2:
        return 10 <= total <= 11
    return True


@njit(cache=True)
def simulate_chunk(P, fresh_deck, hit_table, two_card, pair_table,  # type: ignore[no-untyped-def]
                   opt_child, opt_action, opt_alt, opt_main, opt_split, side_kind, side_pay, cash_out, state, rounds,
                   stats, histogram, side_sums, side_counts, depth_sums, checkpoints,
                   trace_cards, trace_actions, trace_money):
    """Play ``rounds`` rounds; add their statistics into the output arrays (see tables/run).

    ``trace_*`` arrays with as many rows as ``rounds`` record every card, decision and the
    money of each round for the differential test; with one row they are ignored.
    """
    n_cards = P[P_CARDS]
    cut = P[P_CUT]
    spots = P[P_SPOTS]
    bet = P[P_BET]
    players = P[P_PLAYERS]  # identical players in a common-draw game: money scales by their number
    side_stake = P[P_SIDE_STAKE]
    n_side = side_kind.shape[0]
    tracing = trace_cards.shape[0] == rounds and rounds > 1
    deck = fresh_deck.copy()
    pos = n_cards  # so that the first round starts a new shoe
    deck_pos_start = 0

    h_cards = np.zeros((MAX_HANDS, MAX_CARDS), dtype=np.int16)
    h_n = np.zeros(MAX_HANDS, dtype=np.int64)
    h_hard = np.zeros(MAX_HANDS, dtype=np.int64)
    h_aces = np.zeros(MAX_HANDS, dtype=np.int64)
    h_spot = np.zeros(MAX_HANDS, dtype=np.int64)
    h_stake = np.zeros(MAX_HANDS, dtype=np.int64)
    h_split = np.zeros(MAX_HANDS, dtype=np.int64)
    h_split_aces = np.zeros(MAX_HANDS, dtype=np.int64)
    h_original = np.zeros(MAX_HANDS, dtype=np.int64)
    h_status = np.zeros(MAX_HANDS, dtype=np.int64)
    h_returned = np.zeros(MAX_HANDS, dtype=np.int64)
    h_state = np.zeros(MAX_HANDS, dtype=np.int64)  # composition state in the optimal tables
    optimal = P[P_OPTIMAL] == 1
    order = np.zeros(MAX_HANDS, dtype=np.int64)  # hands in playing order (split hands in place)
    spot_hands = np.zeros(16, dtype=np.int64)
    insurance = np.zeros(16, dtype=np.int64)
    insurance_settled = np.zeros(16, dtype=np.int64)
    pending_bust = np.zeros((16, 8), dtype=np.int64)
    side_round = np.zeros(8, dtype=np.int64)
    d_cards = np.zeros(MAX_CARDS, dtype=np.int16)
    n_checkpoints = checkpoints.shape[0]
    every = max(1, rounds // n_checkpoints) if n_checkpoints > 0 else rounds + 1
    n_depth = depth_sums.shape[0]

    for r in range(rounds):
        # ---------------- shoe: a new shuffle every round, or at the cut card
        first_of_shoe = False
        if cut < 0 or pos >= cut:
            pos = 0
            first_of_shoe = True
            stats[S_SHOES] += 1
        deck_pos_start = pos
        t_cards = 0
        t_actions = 0
        n_hands = 0
        for s in range(spots):
            spot_hands[s] = 1
            insurance[s] = 0
            insurance_settled[s] = 0
            h = n_hands
            order[h] = h
            h_n[h] = 0
            h_hard[h] = 0
            h_aces[h] = 0
            h_spot[h] = s
            h_stake[h] = bet
            h_split[h] = 0
            h_split_aces[h] = 0
            h_original[h] = 1
            h_status[h] = PLAYING
            h_returned[h] = -1
            n_hands += 1
        dn = 0
        staked = spots * bet + spots * n_side * side_stake
        for i in range(n_side):
            side_round[i] = 0

        # ---------------- deal in the game's order
        for step_i in range(P[P_ORDER_LEN]):
            step = P[P_ORDER + step_i]
            if step == 0:
                if P[P_COMMON]:
                    card = _draw(deck, pos, n_cards, state)
                    pos += 1
                    t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                    for h in range(n_hands):
                        _add_card(h_cards, h_n, h_hard, h_aces, h, card)
                else:
                    for h in range(n_hands):
                        card = _draw(deck, pos, n_cards, state)
                        pos += 1
                        t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                        _add_card(h_cards, h_n, h_hard, h_aces, h, card)
            else:
                card = _draw(deck, pos, n_cards, state)
                pos += 1
                t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                d_cards[dn] = card
                dn += 1
        up = d_cards[P[P_UP_INDEX]]
        up_value = _value(up)
        peeked = 1 if P[P_HOLE] and _peeks(P[P_PEEK], up) else 0
        for h in range(n_hands):
            total, soft = _total(h_hard[h], h_aces[h])
            if total == 21:
                h_status[h] = BLACKJACK
            if optimal:
                h_state[h] = opt_main[up_value, peeked, _value(h_cards[h, 0]), _value(h_cards[h, 1])]

        # ---------------- deal-time side bets; Bust It waits for the dealer (and pushes on a blackjack)
        for s in range(spots):
            for i in range(n_side):
                pending_bust[s, i] = 0
                if side_stake == 0:
                    continue
                if side_kind[i] == BUST_IT:
                    if h_status[s] == BLACKJACK:
                        side_round[i] += side_stake
                        side_counts[i, PUSH_SLOT] += players
                    else:
                        pending_bust[s, i] = 1
                    continue
                line = deal_time_line(side_kind[i], h_cards[s, 0], h_cards[s, 1], up)
                if line >= 0 and side_pay[i, line] >= 0:
                    side_round[i] += side_stake * (1 + side_pay[i, line])
                    side_counts[i, line] += players
                else:
                    side_counts[i, LOSE_SLOT] += players

        # ---------------- offers: early surrender, then insurance / even money under an Ace
        if P[P_SURRENDER] == 2:
            for h in range(n_hands):
                if h_status[h] != PLAYING:
                    continue
                # The chart surrenders early where its code is R and the pair is not split (the
                # optimal player declines: the simulator does not value that offer).
                take = False
                if not optimal:
                    total, soft = _total(h_hard[h], h_aces[h])
                    c1, c2 = h_cards[h, 0], h_cards[h, 1]
                    pair = (c1 >> 2) == (c2 >> 2) if P[P_SPLIT_RANK] else _value(c1) == _value(c2)
                    take = (two_card[up_value, 0, total + 22 * soft] & 7) == SURRENDER and not (
                        pair and P[P_MAX_HANDS] >= 2 and pair_table[up_value, _value(c1)])
                if take:
                    h_status[h] = SURRENDERED
                    h_returned[h] = h_stake[h] // 2
                t_actions = _trace(tracing, trace_actions, r, t_actions, SURRENDER if take else NO_SURRENDER)
        if up >> 2 == 0:
            for h in range(n_hands):
                if h_status[h] == SURRENDERED:
                    continue
                if h_status[h] == BLACKJACK:
                    if P[P_EVEN_MONEY]:
                        if P[P_TAKE_EVEN_MONEY]:
                            h_status[h] = EVEN_MONEY_TAKEN
                            h_returned[h] = 2 * h_stake[h]
                        t_actions = _trace(tracing, trace_actions, r, t_actions,
                                           EVEN_MONEY if P[P_TAKE_EVEN_MONEY] else NO_EVEN_MONEY)
                        continue
                    if not (P[P_INS_OFFERED] and P[P_INS_TO_BJ] and bet // 2 > 0):
                        continue
                elif not (P[P_INS_OFFERED] and bet // 2 > 0):
                    continue
                if P[P_TAKE_INSURANCE]:
                    insurance[h_spot[h]] = bet // 2
                    staked += bet // 2
                t_actions = _trace(tracing, trace_actions, r, t_actions,
                                   INSURANCE if P[P_TAKE_INSURANCE] else NO_INSURANCE)

        dealer_natural = False
        if dn >= 2:
            d_hard, d_aces = _hard_aces(d_cards, 2)
            dealer_natural = d_hard == 11 and d_aces > 0
        checked = False
        settled_early = False
        if P[P_HOLE] and _peeks(P[P_PEEK], up):
            checked = True
            for s in range(spots):
                insurance_settled[s] = 1  # paid or taken at settlement below, with the same result
            settled_early = dealer_natural

        # ---------------- players' turns
        if not settled_early:
            while True:
                current = -1
                for k in range(n_hands):
                    if h_status[order[k]] == PLAYING:
                        current = order[k]
                        break
                if current < 0:
                    break
                h = current
                total, soft = _total(h_hard[h], h_aces[h])
                n = h_n[h]
                two = n == 2
                # Legal actions, exactly as Round._play_refusal decides them.
                can_hit = not (h_split_aces[h] and P[P_ACES_ONE])
                can_split = False
                if two:
                    c1, c2 = h_cards[h, 0], h_cards[h, 1]
                    same = (c1 >> 2) == (c2 >> 2) if P[P_SPLIT_RANK] else _value(c1) == _value(c2)
                    can_split = same and spot_hands[h_spot[h]] < P[P_MAX_HANDS] and not (
                        h_split_aces[h] and not P[P_RESPLIT_ACES])
                can_surrender = P[P_SURRENDER] == 1 and two and not h_split[h]
                cash_amount = -1
                if P[P_CASH_OUT] and not h_split[h] and h_stake[h] == bet and total < 21:
                    factor = cash_out[soft, total, up_value]
                    if factor >= 0:
                        cash_amount = factor * bet // 1000000
                # ---- the strategy's choice
                action = STAND
                decided = False
                if cash_amount >= 0 and P[P_TAKE_CASH_OUT]:
                    action = CASH_OUT
                    decided = True
                elif optimal:
                    state_now = h_state[h]
                    if h_split[h]:
                        # Split hands follow the plan for the spot as it is now (CDP): walk the hand's
                        # cards through the states of its pair and number of hands.
                        others = min(spot_hands[h_spot[h]] - 1, opt_split.shape[3] - 1)
                        state_now = opt_split[up_value, peeked, _value(h_cards[h, 0]), others]
                        k = 1
                        while state_now >= 0 and k < n:
                            state_now = opt_child[state_now, _value(h_cards[h, k]) - 1]
                            k += 1
                    if h_split[h] and can_split:
                        action = SPLIT  # a pair card on a split hand is split again, as the maths plays it
                        decided = True
                    elif state_now >= 0:
                        action = opt_action[state_now]
                        if action == SPLIT and not can_split:
                            action = opt_alt[state_now]  # tens of different ranks where ranks must match
                        # A play the tables chose that is not open here (never, with the five games) hits.
                        doubling = DOUBLE <= action <= QUADRUPLE
                        if ((action == SPLIT and not can_split) or (action == SURRENDER and not can_surrender)
                                or (doubling and not _double_allowed(P, total, n, h_split[h], h_split_aces[h],
                                                                     action))):
                            action = HIT
                        decided = True
                if decided:
                    pass
                elif two:
                    # A pair card on a split hand is split again while the rules allow, as the maths plays it.
                    if can_split and (h_split[h] or pair_table[up_value, _value(h_cards[h, 0])]):
                        action = SPLIT
                    else:
                        code = two_card[up_value, h_split[h], total + 22 * soft]
                        primary = code & 7
                        else_stand = code >= 8
                        if primary == DOUBLE or primary == TRIPLE or primary == QUADRUPLE:  # noqa: SIM109
                            if _double_allowed(P, total, n, h_split[h], h_split_aces[h], primary):
                                action = primary
                            else:
                                action = STAND if else_stand else HIT
                        elif primary == SURRENDER:
                            action = SURRENDER if can_surrender else (STAND if else_stand else HIT)
                        else:
                            action = primary
                else:
                    action = HIT if hit_table[up_value, total + 22 * soft] else STAND
                if action == HIT and not can_hit:
                    action = STAND
                t_actions = _trace(tracing, trace_actions, r, t_actions, action)
                # ---- act
                if action == STAND:
                    h_status[h] = STOOD
                elif action == CASH_OUT:
                    h_status[h] = CASHED_OUT
                    h_returned[h] = cash_amount
                elif action == SURRENDER:
                    h_status[h] = SURRENDERED
                    h_returned[h] = h_stake[h] // 2
                elif action == HIT or action == DOUBLE or action == TRIPLE or action == QUADRUPLE:  # noqa: SIM109
                    if action != HIT:
                        extra = h_stake[h] * (action - 1)
                        h_stake[h] += extra
                        staked += extra
                    card = _draw(deck, pos, n_cards, state)
                    pos += 1
                    t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                    _add_card(h_cards, h_n, h_hard, h_aces, h, card)
                    if optimal and h_state[h] >= 0 and not h_split[h]:
                        h_state[h] = opt_child[h_state[h], _value(card) - 1]
                    total, soft = _total(h_hard[h], h_aces[h])
                    if total > 21:
                        h_status[h] = BUST
                    elif action != HIT:
                        h_status[h] = DOUBLED
                    elif total == 21 and (P[P_AUTO_STAND] == 0 or (P[P_AUTO_STAND] == 1 and soft)):
                        h_status[h] = STOOD
                else:  # split: the new hand goes right after this one in playing order
                    s = h_spot[h]
                    staked += bet
                    spot_hands[s] += 1
                    new = n_hands
                    n_hands += 1
                    aces = (h_cards[h, 0] >> 2) == 0
                    for k in range(n_hands - 1, 0, -1):
                        if order[k - 1] == h:
                            break
                        order[k] = order[k - 1]
                    k_new = 0
                    for k in range(n_hands - 1):
                        if order[k] == h:
                            k_new = k + 1
                            break
                    order[k_new] = new
                    second = h_cards[h, 1]
                    h_cards[new, 0] = second
                    h_n[new] = 1
                    h_hard[new] = _value(second)
                    h_aces[new] = aces
                    h_spot[new] = s
                    h_stake[new] = bet
                    h_split[new] = 1
                    h_split_aces[new] = aces
                    h_original[new] = 0
                    h_status[new] = PLAYING
                    h_returned[new] = -1
                    h_n[h] = 1
                    h_hard[h] = _value(h_cards[h, 0])
                    h_aces[h] = aces
                    h_stake[h] = bet
                    h_split[h] = 1
                    h_split_aces[h] = aces
                    for hh in (h, new):
                        card = _draw(deck, pos, n_cards, state)
                        pos += 1
                        t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                        _add_card(h_cards, h_n, h_hard, h_aces, hh, card)  # its second card
                    for hh in (h, new):
                        t2, s2 = _total(h_hard[hh], h_aces[hh])
                        if aces and P[P_ACES_ONE]:
                            resplit = ((h_cards[hh, 1] >> 2) == 0 if P[P_SPLIT_RANK]
                                       else _value(h_cards[hh, 1]) == 1)
                            if not (resplit and P[P_RESPLIT_ACES] and spot_hands[s] < P[P_MAX_HANDS]):
                                h_status[hh] = STOOD
                        elif t2 > 21:
                            h_status[hh] = BUST
                        elif t2 == 21 and (P[P_AUTO_STAND] == 0 or (P[P_AUTO_STAND] == 1 and s2)):
                            h_status[hh] = STOOD

        # ---------------- the dealer
        if not settled_early:
            live = False
            drawing = False
            for h in range(n_hands):
                if h_status[h] == STOOD or h_status[h] == DOUBLED or h_status[h] == BLACKJACK:
                    live = True
                    if h_status[h] != BLACKJACK:
                        drawing = True
            bust_pending = False
            insurance_pending = False
            for s in range(spots):
                for i in range(n_side):
                    if pending_bust[s, i]:
                        bust_pending = True
                if insurance[s] > 0 and not insurance_settled[s]:
                    insurance_pending = True  # a no-hole-card dealer still needs a second card to settle it
            drawing = drawing or bust_pending
            if not P[P_HOLE] and (live or bust_pending or insurance_pending):
                card = _draw(deck, pos, n_cards, state)
                pos += 1
                t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                d_cards[dn] = card
                dn += 1
            if dn >= 2:
                d_hard, d_aces = _hard_aces(d_cards, 2)
                dealer_natural = d_hard == 11 and d_aces > 0
                if drawing and not dealer_natural:
                    while True:
                        d_total, d_soft = _total(d_hard, d_aces)
                        if d_total < 17 or (d_total == 17 and d_soft and P[P_H17]):
                            card = _draw(deck, pos, n_cards, state)
                            pos += 1
                            t_cards = _trace(tracing, trace_cards, r, t_cards, card)
                            d_cards[dn] = card
                            dn += 1
                            d_hard += _value(card)
                            d_aces += card >> 2 == 0
                        else:
                            break
        d_hard, d_aces = _hard_aces(d_cards, dn)
        d_total, _ = _total(d_hard, d_aces)
        for s in range(spots):
            for i in range(n_side):
                if pending_bust[s, i]:
                    line = _bust_it_line(d_total, dn) if dn >= 2 else -1
                    if line >= 0 and side_pay[i, line] >= 0:
                        side_round[i] += side_stake * (1 + side_pay[i, line])
                        side_counts[i, line] += players
                    else:
                        side_counts[i, LOSE_SLOT] += players

        # ---------------- settle the hands
        for h in range(n_hands):
            outcome = O_LOSE
            if h_status[h] == SURRENDERED:
                outcome = O_SURRENDER
            elif h_status[h] == CASHED_OUT:
                outcome = O_CASH_OUT
            elif h_status[h] == EVEN_MONEY_TAKEN:
                outcome = O_EVEN_MONEY
            if h_returned[h] >= 0:
                stats[S_OUTCOMES + outcome] += players
                continue
            total, soft = _total(h_hard[h], h_aces[h])
            stake = h_stake[h]
            if h_status[h] == BUST:
                h_returned[h] = 0
                outcome = O_BUST
            elif h_status[h] == BLACKJACK:
                if dealer_natural:
                    h_returned[h] = stake
                    outcome = O_PUSH
                else:
                    h_returned[h] = stake + stake * P[P_BJ_NUM] // P[P_BJ_DEN]
                    outcome = O_BLACKJACK
            elif dealer_natural:
                kept = 0
                if not checked and P[P_TAKES_ORIGINAL]:
                    kept = stake - (bet if h_original[h] else 0)
                h_returned[h] = kept
            elif d_total > 21 or total > d_total:
                h_returned[h] = stake + stake * P[P_WIN_NUM] // P[P_WIN_DEN]
                outcome = O_WIN
            elif total == d_total:
                h_returned[h] = stake
                outcome = O_PUSH
            else:
                h_returned[h] = 0
            stats[S_OUTCOMES + outcome] += players
        main_returned = 0
        main_staked = 0
        for h in range(n_hands):
            main_returned += h_returned[h]
            main_staked += h_stake[h]
        for s in range(spots):
            main_staked += insurance[s]
            if insurance[s] > 0 and dealer_natural:
                main_returned += insurance[s] + insurance[s] * P[P_INS_NUM] // P[P_INS_DEN]
                stats[S_INSURANCE_WON] += players
            elif insurance[s] > 0:
                stats[S_INSURANCE_LOST] += players
        side_returned = 0
        for i in range(n_side):
            side_returned += side_round[i]
        returned = main_returned + side_returned

        # ---------------- statistics (money of identical common-draw players scales by their number)
        net = (main_returned - main_staked) * players
        stats[S_ROUNDS] += 1
        stats[S_MAIN_NET] += net
        stats[S_MAIN_SQ] += float(net) * float(net)
        stats[S_MAIN_WAGER] += spots * bet * players
        stats[S_STAKED] += staked * players
        stats[S_RETURNED] += returned * players
        if net > stats[S_BIGGEST]:
            stats[S_BIGGEST] = net
        if first_of_shoe:
            stats[S_FIRST_N] += 1
            stats[S_FIRST_NET] += net
            stats[S_FIRST_SQ] += float(net) * float(net)
        half_bets = (2 * net) // bet + HIST_OFFSET
        histogram[min(max(half_bets, 0), HIST_SIZE - 1)] += 1
        for i in range(n_side):
            side_net = float((side_round[i] - spots * side_stake) * players)
            side_sums[i, 0] += side_net
            side_sums[i, 1] += side_net * side_net
            side_sums[i, 2] += spots * side_stake * players
        if n_depth > 0:
            bucket = min(deck_pos_start * n_depth // n_cards, n_depth - 1)
            depth_sums[bucket, 0] += 1
            depth_sums[bucket, 1] += net
            depth_sums[bucket, 2] += float(net) * float(net)
        if n_checkpoints > 0 and (r + 1) % every == 0 and (r + 1) // every <= n_checkpoints:
            c = (r + 1) // every - 1
            checkpoints[c, 0] = stats[S_ROUNDS]
            checkpoints[c, 1] = stats[S_MAIN_NET]
            checkpoints[c, 2] = stats[S_MAIN_SQ]
            checkpoints[c, 3] = stats[S_MAIN_WAGER]
        if tracing:
            trace_money[r, 0] = staked * players
            trace_money[r, 1] = returned * players
            trace_money[r, 2] = t_cards
            trace_money[r, 3] = t_actions
    return pos
