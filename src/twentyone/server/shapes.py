"""The request bodies and query parameters the HTTP API takes, as pydantic models: each states in its schema the
rules it enforces, and a field it does not take is a 422 naming it.

They live apart from :mod:`twentyone.server.app` so that ``twentyone admin`` checks its arguments with the endpoints'
own models without importing FastAPI and the whole application (a fifth of each command's time).

>>> ReportQuery.model_validate({"since": "2026-12-01T00:00:00Z"}).since.isoformat()
'2026-12-01T00:00:00+00:00'
>>> RoundsQuery.model_validate({"status": "open"}).size
20
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from twentyone.core.money import MAX_AMOUNT
from twentyone.server.config import CURRENCIES, TABLE_ID_PATTERN
from twentyone.variants import VARIANTS

MAX_ID = 2**31 - 1  # ids are 32-bit integers in storage (and pages stay below it): anything larger is a 422
MAX_CHIP = 2**31 - 1  # a selected chip is stored as a 32-bit integer


def _json_integer(value: Any) -> Any:
    """What the schema's ``integer`` means in JSON: 5 or 5.0, never ``false`` (taken as 0) nor ``"5"``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid integer")
    return value


# Integer fields with bounds; the bounds go first so the schema shows them as minimum and maximum.
JsonInt = BeforeValidator(_json_integer)
Amount = Annotated[int, Field(gt=0, le=MAX_AMOUNT), JsonInt]
ChipValue = Annotated[int, Field(gt=0, le=MAX_CHIP), JsonInt]
LossLimit = Annotated[int, Field(ge=0, le=MAX_AMOUNT), JsonInt]
Minutes = Annotated[int, Field(ge=1, le=24 * 60), JsonInt]
Days = Annotated[int, Field(ge=1, le=3650), JsonInt]
SpotNumber = Annotated[int, Field(ge=1, le=10), JsonInt]
Seats = Annotated[int, Field(ge=0, le=100_000), JsonInt]
TimeoutSeconds = Annotated[int, Field(ge=1, le=86_400), JsonInt]
WindowSeconds = Annotated[int, Field(ge=0, le=3_600), JsonInt]


# A field the endpoint does not take is a 422 naming it, not dropped in silence ({"action": "stand", "seat": 3}
# must not read as a stand for seat 3).
FORBID_EXTRA = ConfigDict(extra="forbid")
NAME_RULE = r"^[A-Za-z0-9_.-]{3,32}$"


def _plain(rule: Callable[[str], bool], words: str) -> AfterValidator:
    """A rule of a field checked with a message a player reads ("password: A password needs at least 8 characters."),
    where pydantic's own says "String should have at least 8 characters" or quotes a regular expression (noted by a
    trial). The schema states the same rule (``json_schema_extra``)."""

    def check(value: str) -> str:
        if not rule(value):
            raise ValueError(words)
        return value

    return AfterValidator(check)


# A name or an id looked up in the database: never the NUL character, which PostgreSQL's text cannot hold, so that it
# refuses the whole statement (a 500 where a 404 or an empty page is meant); the schema states it too.
LookedUp = Annotated[str, Field(min_length=1, max_length=64, json_schema_extra={"pattern": "^[^\\x00]*$"}),
                     _plain(lambda text: "\x00" not in text, "A name or an id holds no NUL character")]


class Credentials(BaseModel):
    model_config = FORBID_EXTRA  # as every body: a field not taken is a 422 ("role" was dropped in silence: a trial)

    # A NUL in the name reached PostgreSQL and made a sign-in, which needs no token, a 500 (found by review).
    name: LookedUp
    password: str = Field(min_length=1, max_length=256)


class Registration(BaseModel):
    """A new player's name and password: the schema states the rules the server enforces."""

    model_config = FORBID_EXTRA

    name: Annotated[str, Field(json_schema_extra={"pattern": NAME_RULE}),
                    _plain(re.compile(NAME_RULE).match, "A name is 3 to 32 letters, digits, dots, dashes or "
                                                        "underscores")]
    password: Annotated[str, Field(max_length=256, json_schema_extra={"minLength": 8}),
                        _plain(lambda password: len(password) >= 8, "A password needs at least 8 characters")]


class SignOut(BaseModel):
    model_config = FORBID_EXTRA

    everywhere: StrictBool = False  # end every sign-in of the player's, not only this one


class ChipChoice(BaseModel):
    model_config = FORBID_EXTRA

    chip: Amount


class BetPlacement(BaseModel):
    model_config = FORBID_EXTRA

    spot: SpotNumber = 1
    type: str = Field(default="main", max_length=32)
    chip: Amount | None = None


class Decision(BaseModel):
    model_config = FORBID_EXTRA

    action: str = Field(max_length=32)


class SettingsUpdate(BaseModel):
    model_config = FORBID_EXTRA  # a misspelt setting is a 422, not a silent no-op

    cash_out_visible: StrictBool | None = None
    sound: StrictBool | None = None
    hints: StrictBool | None = None


class LimitsUpdate(BaseModel):
    model_config = FORBID_EXTRA  # a misspelt limit must not leave a player believing it is set

    # A limit left out stays as it is; null removes it after the cooling-off, as a raise (the schema says so: a client
    # sending every field with null for "unchanged" would ask for removals, noted by review).
    daily_loss_limit: LossLimit | None = Field(None, description=(
        "Minor units a day, in each currency. Left out: unchanged; null: removed after 24 hours, as a raise is."))
    session_minutes: Minutes | None = Field(None, description=(
        "Minutes of play in a session. Left out: unchanged; null: removed after 24 hours, as a raise is."))
    exclude_days: Days | None = Field(None, description="Days of self-exclusion from now. Null is as left out.")


class TableCreate(BaseModel):
    model_config = FORBID_EXTRA  # a misspelt setting (decision_timout) must not be dropped silently

    id: str = Field(pattern=TABLE_ID_PATTERN)
    name: str = Field(min_length=1, max_length=64)
    variant: Literal[VARIANTS]  # type: ignore[valid-type]
    currency: Literal[CURRENCIES]  # type: ignore[valid-type]  # the schema lists them
    chips: list[ChipValue] = Field(min_length=1, max_length=20)
    limits: dict[str, Annotated[list[Amount], Field(min_length=2, max_length=2)]] = Field(
        max_length=10)
    hands_per_player: SpotNumber | None = None
    seats: Seats | None = None
    decision_timeout: TimeoutSeconds | None = None
    betting_window: WindowSeconds | None = None
    theme: str | None = Field(default=None, max_length=32)
    same_bet_deals: StrictBool | None = None  # REBET also deals (single-deck's Same Bet): tables.toml's setting too


class HistoryQuery(BaseModel):
    model_config = FORBID_EXTRA  # a misspelt parameter (?befor=) is a 422, not the first page in silence

    page: int = Field(default=1, ge=1, le=MAX_ID)
    size: int = Field(default=10, ge=1, le=100)
    before: int | None = Field(default=None, ge=1, le=MAX_ID)


class ReportQuery(BaseModel):
    model_config = FORBID_EXTRA  # ?sinse=… must not answer with every round the server played (found by a trial)

    since: AwareDatetime | None = None
    until: AwareDatetime | None = None


class WalletCallsQuery(BaseModel):
    model_config = FORBID_EXTRA

    after: int | None = Field(default=None, ge=0, le=MAX_ID)
    size: int = Field(default=50, ge=1, le=100)


class RoundsQuery(BaseModel):
    model_config = FORBID_EXTRA  # ?stauts=open must not list every round as if it were the rounds in play

    status: Literal["open", "betting", "playing", "settled", "void"] | None = None  # open: betting or playing
    table: LookedUp | None = None
    before: int | None = Field(default=None, ge=1, le=MAX_ID)
    size: int = Field(default=20, ge=1, le=100)


class BalanceChange(BaseModel):
    """An operator's credit or debit of a player's balance."""

    model_config = FORBID_EXTRA

    player: LookedUp  # a NUL made a 500 on PostgreSQL (found by review)
    currency: Literal[CURRENCIES]  # type: ignore[valid-type]  # the schema lists them
    amount: Amount
