"""Server settings and the table configuration.

Settings come from arguments and the environment (``TWENTYONE_DATABASE_URL``,
``TWENTYONE_DATA_DIR``, ``TWENTYONE_OPERATOR_TOKEN``, ``TWENTYONE_DEMO``,
``TWENTYONE_GUESTS_PER_MINUTE``, ``TWENTYONE_TOKEN_DAYS``, ``TWENTYONE_SOCKETS_PER_ADDRESS``,
``TWENTYONE_TABLES``). Tables come from a ``tables.toml``: the operator's (``serve --tables FILE``), else the one
shipped with the package; operators add more through the API, stored in the database.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from twentyone.core.betting import MAIN, BetLimits
from twentyone.core.rules import RulesError
from twentyone.variants import VARIANTS, builtin_rules

DEFAULT_DECISION_TIMEOUT = 20 * 60  # seconds: sheet 000's disconnection policy
TOKEN_ENV_VAR = "TWENTYONE_OPERATOR_TOKEN"
TABLES_ENV_VAR = "TWENTYONE_TABLES"  # the operator's tables.toml (serve --tables)
TABLE_ID_PATTERN = r"^[A-Za-z0-9_.-]{3,32}$"
# The currencies players hold balances in (demo credits, /me): a table or a credit in any other could never be
# played or seen.
CURRENCIES = ("USD", "GBP", "EUR")


@dataclass(frozen=True)
class Settings:
    database_url: str
    data_dir: Path
    operator_token: str
    demo: bool = True
    demo_balance: int = 100_000  # minor units given to a guest or a new demo player
    tick_seconds: float = 1.0  # how often timers (decisions, betting windows, wallet retries) are checked
    # The heartbeat's age past which the floor counts as having been down, its time given back to every open round's
    # clock (server/downtime.py); None never gives it back (tests whose clock jumps while timers run).
    down_after_seconds: float | None = 10.0
    guests_per_minute: int = 120  # new accounts (guests and sign-ups) from one address a minute, all processes (429)
    token_days: int = 30  # a sign-in's token is refused this long after it was issued: sign in again
    sockets_per_address: int = 256  # WebSockets open at once from one address, per process (4429 past it)
    # The tables this start serves, as a tables.toml defines them (id: settings): the operator's file, else the one
    # shipped. A start publishes them to the database, and every process on it serves the latest published.
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _shipped())
    tables_source: str = "tables.toml"  # where ``tables`` came from, as a refusal names it: the operator's file's path
    tables_given: bool = False  # a file given to the start (not the shipped one), which may replace a file's tables

    @classmethod
    def from_environment(cls, database_url: str | None = None, data_dir: str | Path | None = None,
                         demo: bool | None = None, make_token: bool = True,
                         tables_file: str | Path | None = None, tables_from_environment: bool = True) -> Settings:
        """The settings from the arguments, else the environment, else the defaults.

        ``make_token=False`` (the operator's commands) never writes a token: without
        ``TWENTYONE_OPERATOR_TOKEN`` and without the data directory's token file it is empty.
        A variable that holds what its setting cannot take is a :class:`SettingError` naming it, and so is a
        ``tables_file`` (or ``TWENTYONE_TABLES``) that cannot be read or defines a table that cannot be played.
        ``tables_from_environment=False`` leaves ``TWENTYONE_TABLES`` unread: the command line reads it as ``serve
        --tables``' own, and the operator's commands go by the tables the latest start published (before, a variable
        naming a file being edited refused every one of them, the ``remove-table`` a start's refusal asks for too:
        review).
        """
        directory = Path(data_dir or os.environ.get("TWENTYONE_DATA_DIR") or Path.cwd() / "twentyone-data")
        url = database_url or os.environ.get("TWENTYONE_DATABASE_URL") or f"sqlite:///{directory / 'twentyone.db'}"
        # The numbers and the flag are read before the token, which may be written: a refused setting leaves nothing.
        if demo is None:
            demo = environment_flag("TWENTYONE_DEMO", True)
        guests = environment_count("TWENTYONE_GUESTS_PER_MINUTE", 120)
        token_days = environment_count("TWENTYONE_TOKEN_DAYS", 30, MAX_TOKEN_DAYS)
        sockets = environment_count("TWENTYONE_SOCKETS_PER_ADDRESS", 256)
        tables_file = tables_file or (os.environ.get(TABLES_ENV_VAR) if tables_from_environment else None)
        try:
            tables = read_tables_file(Path(tables_file)) if tables_file else shipped_definitions()
        except TableConfigError as error:
            raise SettingError(str(error)) from None
        given = os.environ.get(TOKEN_ENV_VAR)
        token = operator_token_setting(given) if given else _stored_operator_token(directory, make_token)
        return cls(url, directory, token, demo, guests_per_minute=guests, token_days=token_days,
                   sockets_per_address=sockets, tables=tables,
                   tables_source=str(tables_file) if tables_file else "the shipped tables.toml",
                   tables_given=bool(tables_file))


def _shipped() -> dict[str, dict[str, Any]]:
    return shipped_definitions()  # defined below, with the tables


class SettingError(ValueError):
    """A setting in the environment that cannot be used; the message names the variable and what it takes."""


# What a yes/no variable takes, in any case: the words pydantic (and so a typer option) reads as a boolean, one list
# for every such variable (before, only "0", "false" and "no" turned demo mode off: "off", "False" and "NO" left it on
# without a word, found by a trial of an operator).
TRUE_WORDS = frozenset({"1", "on", "t", "true", "y", "yes"})
FALSE_WORDS = frozenset({"0", "off", "f", "false", "n", "no"})
# A sign-in's end is its start plus this many days: far beyond it the date arithmetic leaves the calendar (year 1).
MAX_TOKEN_DAYS = 36_500


def environment_flag(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """The yes/no variable ``name`` (1/0, true/false, yes/no, on/off, t/f, y/n, in any case) of ``environ`` (the
    process's environment), else ``default`` when unset.

    Anything else, an empty value included, is refused rather than read as either: the demo flag decides whether
    anyone may play without an account.

    >>> environment_flag("TWENTYONE_EXAMPLE", True, {"TWENTYONE_EXAMPLE": " Off "})
    False
    >>> try:
    ...     environment_flag("TWENTYONE_EXAMPLE", True, {"TWENTYONE_EXAMPLE": "maybe"})
    ... except SettingError as error:
    ...     print(error)
    TWENTYONE_EXAMPLE must be 1, true, yes or on, or 0, false, no or off, got 'maybe'.
    >>> environment_flag("TWENTYONE_EXAMPLE", True, {})
    True
    """
    value = (os.environ if environ is None else environ).get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word not in TRUE_WORDS | FALSE_WORDS:
        raise SettingError(f"{name} must be 1, true, yes or on, or 0, false, no or off, got {value!r}.")
    return word in TRUE_WORDS


def environment_count(name: str, default: int, maximum: int | None = None) -> int:
    """The whole number in the variable ``name``, 1 or more (and at most ``maximum``), else ``default`` when unset.

    The counts set are limits (new accounts a minute, sockets an address, days a sign-in lasts): 0 or less would
    refuse everyone rather than limit anyone.

    >>> os.environ["TWENTYONE_EXAMPLE"] = "-1"
    >>> try:
    ...     environment_count("TWENTYONE_EXAMPLE", 256)
    ... except SettingError as error:
    ...     print(error)
    TWENTYONE_EXAMPLE must be a whole number, 1 or more, got '-1'.
    >>> os.environ["TWENTYONE_EXAMPLE"] = " 512 "
    >>> environment_count("TWENTYONE_EXAMPLE", 256)
    512
    >>> del os.environ["TWENTYONE_EXAMPLE"]
    >>> environment_count("TWENTYONE_EXAMPLE", 256)
    256
    """
    value = os.environ.get(name)
    if value is None:
        return default
    # Digits alone: int() also takes "1_000", a sign and other scripts' digits, which no operator means here; and
    # at most 18 of them, within 64 bits (int() refuses past 4,300 with an error of its own).
    digits = value.strip()
    number = int(digits) if re.fullmatch(r"[0-9]{1,18}", digits) else 0
    if number < 1 or (maximum is not None and number > maximum):
        bounds = "1 or more" if maximum is None else f"1 to {maximum}"
        raise SettingError(f"{name} must be a whole number, {bounds}, got {value!r}.")
    return number


# A database URL's secrets, as shown_url and without_secrets find them: the password of its user part (up to the last
# "@", which an unescaped "@" in the password may precede), and any parameter named *password.
USER_PASSWORD = re.compile(r"^([^:/?#@]*://[^:/?#@]*):(.*)@", re.DOTALL)
PASSWORD_PARAMETER = re.compile(r"([?&]\w*password=)([^&#]*)", re.IGNORECASE)


def shown_url(url: str) -> str:
    """A database URL as printed (the start-up banner, an error): its password hidden, whether in the user part or
    in a ``password`` parameter. Before, ``serve`` and ``admin`` printed it in clear (found by a trial of an operator).

    Read by pattern rather than parsed, so a URL that does not parse is hidden alike; an unescaped ``@`` in a password
    is taken as part of it (everything up to the last ``@`` after the user's name), which SQLAlchemy's parser would
    have shown as part of the host.

    >>> shown_url("postgresql+psycopg://app:s3cret@db.internal:5432/twentyone")
    'postgresql+psycopg://app:***@db.internal:5432/twentyone'
    >>> shown_url("postgresql+psycopg://app:p@ss:word@db/twentyone?sslmode=require&password=s3cret")
    'postgresql+psycopg://app:***@db/twentyone?sslmode=require&password=***'
    >>> shown_url("sqlite:////srv/twentyone-data/twentyone.db")
    'sqlite:////srv/twentyone-data/twentyone.db'
    """
    return PASSWORD_PARAMETER.sub(r"\1***", USER_PASSWORD.sub(r"\1:***@", url))


def without_secrets(text: str, url: str) -> str:
    """``text`` (a driver's error about ``url``) with every secret of ``url`` hidden: the URL itself, its password,
    and each part of a password holding ``@``, which the driver may have read as part of the host and quoted (found by
    review: "failed to resolve host 'ssXYZ@nohost.invalid'").

    >>> url = "postgresql+psycopg://app:p@ssXYZ@nohost.invalid/db"
    >>> without_secrets("failed to resolve host 'ssXYZ@nohost.invalid'", url)
    "failed to resolve host '***@nohost.invalid'"
    """
    secrets_in_url = [match[2] for match in PASSWORD_PARAMETER.finditer(url)]
    if (user_part := USER_PASSWORD.match(url)) is not None:
        secrets_in_url += [user_part[2], *user_part[2].split("@")]
    text = text.replace(url, shown_url(url))
    for secret in sorted({secret for secret in secrets_in_url if secret}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


class SupervisorInfo(logging.Filter):
    """uvicorn's log under ``serve --workers`` (:func:`workers_logging`): warnings and errors from every process, and
    the INFO lines of the supervisor, the process that started the workers and serves no request: it says there that a
    worker died and it started another ("Child process [PID] died"), and that it was told to stop. The workers' INFO
    lines (one for each WebSocket opened and closed) stay out, as under uvicorn's ``log_level="warning"``.

    >>> record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Child process [7] died", None, None)
    >>> SupervisorInfo().filter(record)  # this process started no other: it is the supervisor
    True
    """

    def __init__(self) -> None:
        import multiprocessing

        super().__init__()
        # Made in each process as it configures its logging: uvicorn spawns the workers, so they have a parent.
        self.supervisor = multiprocessing.parent_process() is None

    def filter(self, record: logging.LogRecord) -> bool:
        return self.supervisor or record.levelno >= logging.WARNING


def workers_logging() -> dict[str, Any]:
    """uvicorn's own logging configuration as ``serve --workers`` gives it: its levels at WARNING, as ``log_level=
    "warning"`` sets them, but for its supervisor's INFO lines (:class:`SupervisorInfo`). Before, a worker killed and
    started again left no line in the log (found by a trial of an operator).

    >>> workers_logging()["loggers"]["uvicorn.error"]["level"]
    'INFO'
    """
    from copy import deepcopy

    from uvicorn.config import LOGGING_CONFIG

    config = deepcopy(LOGGING_CONFIG)
    config["filters"] = {**config.get("filters", {}), "supervisor-info": {"()": SupervisorInfo}}
    for name, logger in config["loggers"].items():
        logger["level"] = "WARNING"
        if name == "uvicorn.error":  # the supervisor's logger, where it says a worker died, at INFO
            logger.update(level="INFO", filters=[*logger.get("filters", []), "supervisor-info"])
    return config


# A bearer token is the operator's whole floor (credits, debits, every report): one that is short, or made by hand,
# is guessed. The server's own is 43 characters (secrets.token_urlsafe(32)).
MIN_OPERATOR_TOKEN = 24


def operator_token_setting(value: str, source: str = TOKEN_ENV_VAR) -> str:
    """``TWENTYONE_OPERATOR_TOKEN``'s value, where a server can take it: at least :data:`MIN_OPERATOR_TOKEN`
    printable ASCII characters without spaces. Before, ``a`` was taken, and so was a space, which no ``Authorization``
    header can carry, locking the operator out (an operator's trial).

    >>> operator_token_setting("x" * 24) == "x" * 24
    True
    >>> operator_token_setting("a")
    Traceback (most recent call last):
    ...
    twentyone.server.config.SettingError: TWENTYONE_OPERATOR_TOKEN: at least 24 characters (it has 1), printable \
ASCII without spaces; make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'
    """
    usable = value.isascii() and value.isprintable() and not any(character.isspace() for character in value)
    if len(value) < MIN_OPERATOR_TOKEN or not usable:
        has = f" (it has {len(value)})" if usable else ""
        raise SettingError(f"{source}: at least {MIN_OPERATOR_TOKEN} characters{has}, printable ASCII without "
                           "spaces; make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return value


def token_file(directory: Path) -> Path:
    """Where a server keeps the operator token it made (when the environment gives it none)."""
    return directory / "operator-token"


def _stored_operator_token(directory: Path, make: bool = True) -> str:
    """The operator token kept in the data directory, created on first start (``make``), else "" if none."""
    path = token_file(directory)
    if not make:
        return path.read_text().strip() if path.exists() else ""
    directory.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32) + "\n")
        path.chmod(0o600)
    # One written by hand is held to the variable's rule (review: "a" was taken, and under --workers the supervisor
    # gave it to workers that refused it, restarting for ever).
    return operator_token_setting(path.read_text().strip(), str(path))


class TableConfigError(ValueError):
    """A table definition is invalid; the message names the field."""


def require_held_currency(table: TableSpec) -> None:
    """A new table plays in a currency players hold balances in (:data:`CURRENCIES`).

    Checked when a table is created, not when a stored one is read: a table made before the
    rule (in any three letters) still loads, so the lobby and the timers keep working.

    >>> require_held_currency(shipped_tables()["classic"])
    """
    if table.currency not in CURRENCIES:
        raise TableConfigError(f"{table.id}.currency: one of {', '.join(CURRENCIES)}, the currencies players hold "
                               "balances in.")


@dataclass(frozen=True)
class TableSpec:
    """One table: a variant plus its setting (currency, chips, limits, seats, timers, theme)."""

    id: str
    name: str
    variant: str
    currency: str
    chips: tuple[int, ...]
    limits: Mapping[str, tuple[int, int]]
    hands_per_player: int
    seats: int
    decision_timeout: int
    betting_window: int
    theme: str = "green"
    same_bet_deals: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    closed: bool = False  # taken out of the configuration: a stand-in (retired_table), which takes no bets

    @property
    def bet_limits(self) -> BetLimits:
        return BetLimits(self.limits)

    @property
    def shared(self) -> bool:
        """True when players share one round (multiplayer, power); False for a private round each."""
        return self.seats != 1

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "variant": self.variant, "currency": self.currency,
                "chips": list(self.chips), "limits": {k: list(v) for k, v in self.limits.items()},
                "hands_per_player": self.hands_per_player, "seats": self.seats or None,
                "decision_timeout": self.decision_timeout, "betting_window": self.betting_window,
                "theme": self.theme, "same_bet_deals": self.same_bet_deals, "shared": self.shared,
                "closed": self.closed}


# The settings a table definition may name (tables.toml, POST /admin/tables, twentyone admin create-table).
TABLE_SETTINGS = frozenset({"name", "variant", "currency", "chips", "limits", "hands_per_player", "seats",
                            "decision_timeout", "betting_window", "theme", "same_bet_deals"})


def require_playable(table: TableSpec, data: Mapping[str, Any]) -> None:
    """A new table names only settings there are, and can be played: a name that is not blank, each chip once, and
    for each bet a maximum that the smallest chip reaches (a bet is built of chips, so a minimum below the smallest
    chip is met by stacking, but a maximum below it refuses every bet of that kind). Checked when a table is made,
    as :func:`require_held_currency` is: a stored table that breaks it still loads. Before, a misspelt setting
    (``decision_timout``) made from the command line was kept without a word, and a table whose only chip was above
    its maximum went into the lobby for good (found by a trial).

    >>> classic = shipped_tables()["classic"]
    >>> require_playable(classic, {"name": "Classic", "chips": [100, 500]})
    >>> try:
    ...     require_playable(classic, {"decision_timout": 5})
    ... except TableConfigError as error:
    ...     print(str(error).split(";")[0])
    classic.decision_timout: no such setting
    >>> spec = {"name": "T", "variant": "classic", "currency": "USD", "chips": [500], "limits": {"main": [100, 200]}}
    >>> try:
    ...     require_playable(table_from_mapping("t1", spec), spec)
    ... except TableConfigError as error:
    ...     print(error)
    t1.limits.main: a maximum of 200 is below the smallest chip, 500: no main bet could be placed.
    """
    unknown = sorted(set(data) - TABLE_SETTINGS)
    if unknown:
        raise TableConfigError(f"{table.id}.{unknown[0]}: no such setting; a table's settings are "
                               f"{', '.join(sorted(TABLE_SETTINGS))}.")
    if not table.name.strip():
        raise TableConfigError(f"{table.id}.name: a name players can read, not a blank one.")
    if len(set(table.chips)) != len(table.chips):
        raise TableConfigError(f"{table.id}.chips: each chip once.")
    if not table.shared and data.get("betting_window"):  # kept without a word, and never used (an operator's trial)
        raise TableConfigError(f"{table.id}.betting_window: a table of one seat deals at each DEAL; a betting window "
                               "is for shared tables.")
    smallest, largest = table.chips[0], table.chips[-1]  # sorted
    for bet_type, (_, maximum) in table.limits.items():
        if maximum < smallest:
            raise TableConfigError(f"{table.id}.limits.{bet_type}: a maximum of {maximum} is below the smallest "
                                   f"chip, {smallest}: no {bet_type} bet could be placed.")
    highest = max(maximum for _, maximum in table.limits.values())
    if largest > highest:  # shown in the rack and never placed (an operator's trial)
        raise TableConfigError(f"{table.id}.chips: a chip of {largest} is above every bet's maximum ({highest}): no "
                               "bet could take it.")


def with_game_timers(data: Mapping[str, Any]) -> dict[str, Any]:
    """A new table's definition with the timers it leaves out taken from the shipped table of its game (the sheet's:
    multiplayer and power decide and bet in 15 s, the others decide in 20 minutes). Before, a shared table made
    without timers got 20 minutes to decide and no betting window, so each join dealt at once, alone, and one idle
    player held a round for 20 minutes (found by a trial).

    >>> with_game_timers({"variant": "power", "betting_window": 30})
    {'variant': 'power', 'betting_window': 30, 'decision_timeout': 15}
    >>> with_game_timers({"variant": "classic"})
    {'variant': 'classic', 'decision_timeout': 1200, 'betting_window': 0}
    """
    game = next((table for table in shipped_tables().values() if table.variant == data.get("variant")), None)
    if game is None:  # an unknown game: table_from_mapping says so
        return dict(data)
    return {**data, **{key: getattr(game, key) for key in ("decision_timeout", "betting_window") if key not in data}}


# A stand-in table's decision time (retired_table): the sheets' (sheet 000: 20 minutes at a private table; the
# multiplayer and power sheets: 15 s at a shared one).
STAND_IN_DECISION_SECONDS = {False: 1200, True: 15}
# A stand-in's chips: nothing is bet with them, but the page draws a round's stakes as stacks of them (a stake of 25.00
# in ones was a tower of 25).
STAND_IN_CHIPS = (100, 500, 2500, 10000, 50000)


def retired_table(table_id: str, variant: str, currency: str | None, shared: bool) -> TableSpec:
    """A stand-in for a table configured nowhere now (an operator took it out of ``tables.toml``): its id, its
    rounds' game and currency, private or shared as its rounds were (a shared table's rounds took bets in a
    window), and the game's decision time, so that its rounds are still read (history, replay) and a round left in
    play there is played out. It is ``closed``: nothing can be bet there (a bet control or a deal is a 409), and it
    is in no lobby; a player who played there still reaches it, to finish a round. Before, every such read was a
    404 and the stake of a round in play stayed out for good (found by a trial of an operator). Built from the game
    alone, not from another table of it: the operator may have removed the game's only one (found by review).

    >>> gone = retired_table("classic-vip", "classic", "EUR", shared=False)
    >>> gone.id, gone.name, gone.variant, gone.currency, gone.shared, gone.decision_timeout, gone.closed
    ('classic-vip', 'classic-vip', 'classic', 'EUR', False, 1200, True)
    >>> retired_table("power-2", "power", None, shared=True).decision_timeout
    15
    """
    return TableSpec(id=table_id, name=table_id, variant=variant, currency=currency or "USD", chips=STAND_IN_CHIPS,
                     limits={"main": (100, 100)}, hands_per_player=1, seats=0 if shared else 1,
                     decision_timeout=STAND_IN_DECISION_SECONDS[shared], betting_window=0, closed=True)


def table_from_mapping(table_id: str, data: Mapping[str, Any]) -> TableSpec:
    """Validate one table definition (from tables.toml or an operator's request)."""
    def need(key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in data:
            raise TableConfigError(f"{table_id}.{key}: missing.")
        if not isinstance(data[key], kind) or isinstance(data[key], bool):
            raise TableConfigError(f"{table_id}.{key}: wrong type ({data[key]!r}).")
        return data[key]

    variant = need("variant", str)
    if variant not in VARIANTS:
        raise TableConfigError(f"{table_id}.variant: unknown game {variant!r}; choose one of {', '.join(VARIANTS)}.")
    try:
        rules = builtin_rules(variant)
    except RulesError as error:  # pragma: no cover - the built-in files are tested
        raise TableConfigError(str(error)) from None
    chips = tuple(need("chips", list))
    if not chips or any(not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in chips):
        raise TableConfigError(f"{table_id}.chips: a list of positive amounts in minor units.")
    limits_data = need("limits", dict)
    limits: dict[str, tuple[int, int]] = {}
    for bet_type, pair in limits_data.items():
        if bet_type != MAIN and bet_type not in rules.side_bets:
            raise TableConfigError(f"{table_id}.limits.{bet_type}: not the main bet or a side bet of {variant}.")
        if (not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(v, int) for v in pair)
                or not 1 <= pair[0] <= pair[1]):
            # The order named: [1000, 100] read as "expected [minimum, maximum]" alone (an operator's trial).
            raise TableConfigError(f"{table_id}.limits.{bet_type}: expected [minimum, maximum] in minor units, the "
                                   "minimum at least 1 and not above the maximum.")
        limits[bet_type] = (pair[0], pair[1])
    if MAIN not in limits:
        raise TableConfigError(f"{table_id}.limits.main: missing.")
    hands = int(data.get("hands_per_player", rules.deal.hands_per_player))
    if not 1 <= hands <= rules.deal.hands_per_player:
        raise TableConfigError(f"{table_id}.hands_per_player: 1 to {rules.deal.hands_per_player} for {variant}.")
    seats = int(data.get("seats", rules.deal.seats))
    if rules.deal.seats and not 1 <= seats <= rules.deal.seats:
        raise TableConfigError(f"{table_id}.seats: 1 to {rules.deal.seats} for {variant}.")
    currency = need("currency", str)
    if len(currency) != 3 or not currency.isalpha() or not currency.isupper():
        raise TableConfigError(f"{table_id}.currency: a three-letter code like USD.")
    return TableSpec(
        id=table_id, name=need("name", str), variant=variant, currency=currency, chips=tuple(sorted(chips)),
        limits=limits, hands_per_player=hands, seats=seats,
        decision_timeout=int(data.get("decision_timeout", DEFAULT_DECISION_TIMEOUT)),
        betting_window=int(data.get("betting_window", 0)), theme=str(data.get("theme", "green")),
        same_bet_deals=bool(data.get("same_bet_deals", False)),
    )


@cache
def shipped_definitions() -> dict[str, dict[str, Any]]:
    """The ``tables.toml`` shipped with the package, each table's settings as written (read once; callers copy
    before changing it): the tables served where the operator names no file of their own."""
    text = resources.files("twentyone.server").joinpath("tables.toml").read_text("utf-8")
    return tomllib.loads(text)


@cache
def shipped_tables() -> dict[str, TableSpec]:
    """The tables of the ``tables.toml`` shipped with the package (read once; callers copy before adding to it).

    >>> sorted(shipped_tables())
    ['classic', 'classic-premium', 'first-person', 'multiplayer', 'power', 'single-deck']
    """
    return tables_from_definitions(shipped_definitions())


def tables_from_definitions(definitions: Mapping[str, Mapping[str, Any]]) -> dict[str, TableSpec]:
    """The tables a ``tables.toml`` defines (its settings as :func:`read_tables_file` checked them)."""
    return {table_id: table_from_mapping(table_id, spec) for table_id, spec in definitions.items()}


def checked_definition(table_id: str, given: Mapping[str, Any]) -> tuple[TableSpec, dict[str, Any]]:
    """A new table's id and settings checked as ``POST /admin/tables`` and ``serve --tables`` both check them: the id
    one a link can carry, the settings a table that can be played (:func:`table_from_mapping`,
    :func:`require_held_currency`, :func:`require_playable`). Returns the table and the settings to store, with the
    game's timers where the table leaves them out (:func:`with_game_timers`): a later change to the game's defaults
    leaves the table as it was made. One check for both ways in (a request's schema refuses an id outside
    :data:`TABLE_ID_PATTERN` before this, in its own words; "..." passes it and is refused here).

    >>> checked_definition("vip", {"name": "VIP", "variant": "classic", "currency": "EUR", "chips": [500],
    ...                            "limits": {"main": [500, 100000]}})[1]["decision_timeout"]
    1200
    >>> try:
    ...     checked_definition("...", {})
    ... except TableConfigError as error:
    ...     print(error)
    [...]: a table id is 3 to 32 letters, digits, dots, dashes or underscores, one at least a letter or digit.
    """
    if not re.fullmatch(TABLE_ID_PATTERN, table_id) or not any(character.isalnum() for character in table_id):
        raise TableConfigError(f"[{table_id}]: a table id is 3 to 32 letters, digits, dots, dashes or underscores, "
                               "one at least a letter or digit.")
    spec = with_game_timers(given)
    table = table_from_mapping(table_id, spec)
    require_held_currency(table)
    require_playable(table, given)  # the operator's own: a game's window added for one seat is not theirs
    return table, spec


def read_tables_file(path: Path) -> dict[str, dict[str, Any]]:
    """An operator's ``tables.toml`` (``serve --tables FILE``), in the shipped file's form, each table checked as
    ``POST /admin/tables`` checks a new one: its id, its settings (a misspelt one is refused, not ignored), its
    currency, its limits against its chips. The timers a table leaves out are its game's (:func:`with_game_timers`).
    A file that cannot be read, or any table in it that cannot be played, is a :class:`TableConfigError` of one line
    naming the file: a server is never started on half of a floor.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     path = Path(directory) / "tables.toml"
    ...     _ = path.write_text('[vip]\\nname = "VIP"\\nvariant = "classic"\\ncurrency = "EUR"\\n'
    ...                         'chips = [500, 2500]\\nlimits = { main = [500, 100000] }\\n')
    ...     read_tables_file(path)["vip"]["decision_timeout"]
    1200
    >>> try:
    ...     read_tables_file(Path("/nowhere/tables.toml"))
    ... except TableConfigError as error:
    ...     print(error)
    /nowhere/tables.toml: cannot be read (No such file or directory).
    """
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError as error:
        raise TableConfigError(f"{path}: cannot be read ({error.strerror or error}).") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise TableConfigError(f"{path}: not TOML ({' '.join(str(error).split())}).") from None
    definitions: dict[str, dict[str, Any]] = {}
    for table_id, given in data.items():
        if not isinstance(given, dict):
            raise TableConfigError(f"{path}: {table_id} is not a table; each table is a [section] of settings.")
        twin = next((known for known in definitions if known.lower() == table_id.lower()), None)
        if twin is not None:  # one table to a player reading the lobby, as POST /admin/tables holds
            raise TableConfigError(f"{path}: [{table_id}] and [{twin}] differ in case alone.")
        try:
            _, definitions[table_id] = checked_definition(table_id, given)
        except TableConfigError as error:
            raise TableConfigError(f"{path}: {error}") from None
    if not definitions:  # a truncated file, most likely: the floor of every process would be emptied
        raise TableConfigError(f"{path}: defines no table; a floor needs one at least (copy the shipped tables.toml "
                               "to start from).")
    return definitions
