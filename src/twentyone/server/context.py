"""What every part of the service shares: the caller, the refusal, and time in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast


class ServiceError(Exception):
    """A refused request: HTTP ``status``, a one-sentence ``detail`` and optional extra fields.

    ``headers`` go out with the answer (``Retry-After`` on a 503).
    """

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


class Busy(ServiceError):
    """Storage could not serve the request in time: nothing changed, and the same request may be retried.

    >>> Busy().status, Busy().headers
    (503, {'Retry-After': '1'})
    """

    def __init__(self, detail: str = "The game is busy and changed nothing: send the same request again in a "
                                      "moment.", retry_after: int = 1) -> None:
        super().__init__(503, detail, {"Retry-After": str(retry_after)})


class SnapshotBehind(Exception):
    """A read found the round's engine moved on since the read's snapshot began: a decision changed it and committed
    meanwhile, or changed it and did not commit (and was dropped). The read is made again in a new snapshot
    (``Store.read_anew``)."""


@dataclass(frozen=True)
class Caller:
    """Who makes a request. ``excluded_until``: the end of a self-exclusion, ``session_ends_at`` the moment the
    session time limit (``session_minutes``) is reached and ``session_break_ends_at`` the end of the break after it
    (:func:`session_break_end`), as the player's limits held when the caller was known (a bet control refuses them
    without reading the player)."""

    id: int
    name: str
    role: str
    guest: bool = False
    excluded_until: datetime | None = None
    session_ends_at: datetime | None = None
    session_minutes: int | None = None
    session_break_ends_at: datetime | None = None
    daily_loss_limit: int | None = None  # in force when the caller was known: what a day's stakes may lose

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    def refuse_if_excluded(self, now: datetime) -> None:
        """Refuse (403) a player who excluded themselves from play until after ``now``.

        >>> Caller(7, "ann", "player", excluded_until=datetime(2026, 12, 9, 9, tzinfo=UTC)).refuse_if_excluded(
        ...     datetime(2026, 12, 2, tzinfo=UTC))
        Traceback (most recent call last):
        ...
        twentyone.server.context.ServiceError: You have excluded yourself from play until 2026-12-09 09:00 UTC.
        >>> Caller(7, "ann", "player").refuse_if_excluded(datetime(2026, 12, 2, tzinfo=UTC))
        """
        if self.excluded_until is not None and self.excluded_until > now:
            raise ServiceError(403, f"You have excluded yourself from play until "
                                    f"{self.excluded_until.strftime('%Y-%m-%d %H:%M')} UTC.")

    def refuse_new_bets(self, now: datetime) -> None:
        """Refuse (403) a bet from a player whom self-exclusion or the session time limit keeps from play at ``now``
        (before, a bet control took bets after the session's limit, and only DEAL refused them: noted by a trial).
        Past the limit, the break of :data:`SESSION_BREAK_MINUTES` runs from it; once over, play starts a new
        session (:meth:`~twentyone.server.accounts.Accounts.may_bet`).

        >>> ann = Caller(7, "ann", "player", session_ends_at=datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
        ...              session_minutes=30, session_break_ends_at=datetime(2026, 12, 2, 9, 58, tzinfo=UTC))
        >>> ann.refuse_new_bets(datetime(2026, 12, 2, 9, 31, tzinfo=UTC))
        Traceback (most recent call last):
        ...
        twentyone.server.context.ServiceError: Your session time limit of 30 minutes is reached: you can play again ...
        >>> ann.refuse_new_bets(datetime(2026, 12, 2, 9, 58, tzinfo=UTC))  # the break is over
        """
        self.refuse_if_excluded(now)
        if in_session_break(self.session_ends_at, self.session_break_ends_at, now):
            raise ServiceError(403, session_over_message(self.session_minutes or 0,
                                                         cast(datetime, self.session_break_ends_at)))

    def kept_from_play(self, now: datetime) -> bool:
        """Whether :meth:`refuse_new_bets` refuses at ``now``: self-excluded, or past the session time limit.

        >>> Caller(7, "ann", "player").kept_from_play(datetime(2026, 12, 2, tzinfo=UTC))
        False
        """
        try:
            self.refuse_new_bets(now)
        except ServiceError:
            return True
        return False


SESSION_BREAK_MINUTES = 30  # this long without a round, from the session's limit or a sign-in, starts a new session
SESSION_BREAK = timedelta(minutes=SESSION_BREAK_MINUTES)


def session_break_end(ends: datetime | None, last_round: datetime | None) -> datetime | None:
    """When the break after a session's limit (reached at ``ends``) ends: :data:`SESSION_BREAK` after the limit, or
    after the player's last round (``last_round``: when it began) where that is later; rounded up to the minute, so
    that the time a refusal names is one from which play is open. None without a limit.

    The last round counts too: a limit lowered during the break (in force at once, as a stricter one is) moved the
    limit's moment, and the break's end with it, into the past, and opened play at once (a review).

    >>> ends = datetime(2026, 12, 2, 9, 30, 40, tzinfo=UTC)
    >>> print(session_break_end(ends, ends - timedelta(minutes=2)))  # from the limit, rounded up
    2026-12-02 10:01:00+00:00
    >>> print(session_break_end(ends - timedelta(minutes=59), ends))  # a limit lowered since: from the last round
    2026-12-02 10:01:00+00:00
    """
    if ends is None:
        return None
    latest = aware(last_round)
    until = max(ends, latest if latest is not None else ends) + SESSION_BREAK
    whole = until.replace(second=0, microsecond=0)
    return whole if whole == until else whole + timedelta(minutes=1)


def in_session_break(ends: datetime | None, break_ends: datetime | None, now: datetime) -> bool:
    """Whether ``now`` is past a session's time limit (reached at ``ends``) and within the break after it.

    Before, only a sign-in after the break started a new session: a guest, who cannot sign in again, was kept from
    play for good, and a signed-in page was refused until the player signed out and in (a trial of players).

    >>> ends = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
    >>> [in_session_break(ends, ends + timedelta(minutes=30), ends + timedelta(minutes=m)) for m in (-1, 1, 29, 30)]
    [False, True, True, False]
    """
    return ends is not None and break_ends is not None and ends < now < break_ends


def session_over_message(minutes: int, break_ends: datetime) -> str:
    """What a player whose session time limit of ``minutes`` was reached is told, the break ending at ``break_ends``.

    >>> print(session_over_message(1, datetime(2026, 12, 2, 10, 0, tzinfo=UTC)).replace(": ", ":\\n"))
    Your session time limit of 1 minute is reached:
    you can play again after a break of 30 minutes, from 2026-12-02 10:00 UTC.
    """
    return (f"Your session time limit of {minutes} minute{'' if minutes == 1 else 's'} is reached: you can play "
            f"again after a break of {SESSION_BREAK_MINUTES} minutes, from "
            f"{break_ends.strftime('%Y-%m-%d %H:%M')} UTC.")


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything here is UTC.

    >>> aware(datetime(2026, 1, 1)).tzinfo
    datetime.timezone.utc
    """
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def iso(moment: datetime | None) -> str | None:
    moment = aware(moment)
    return moment.isoformat() if moment else None
