"""What every part of the service shares: the caller, the refusal, and time in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


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


@dataclass(frozen=True)
class Caller:
    id: int
    name: str
    role: str
    guest: bool = False

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"


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
