"""The built-in games and rules files on disk: the one place that reads rules from files.

``twentyone.core`` stays pure by taking parsed data; this module finds the
package's TOML files (and any user rules file) and hands them to it.

>>> rules = builtin_rules("power")
>>> rules.shoe.composition.size, rules.double.multipliers
(352, (2, 3, 4))
>>> VARIANTS
('first-person', 'classic', 'single-deck', 'multiplayer', 'power')
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twentyone.core.rules import Rules

# The engine is imported inside the functions: the command line reads VARIANTS for its
# help text at start-up and should not pay for the engine before a command needs it.

VARIANTS = ("first-person", "classic", "single-deck", "multiplayer", "power")
_DATA = "twentyone.variants_data"


@cache
def _tables() -> dict[str, dict[str, Any]]:
    """Every cash-out table shipped with the package, by name (file name less ``.toml``)."""
    import tomllib

    tables: dict[str, dict[str, Any]] = {}
    for entry in resources.files(_DATA).iterdir():
        if entry.name.endswith("-cash-out.toml"):
            tables[entry.name.removesuffix(".toml")] = tomllib.loads(entry.read_text("utf-8"))
    return tables


@cache
def builtin_rules(variant: str) -> Rules:
    """The rules of one of the five built-in games."""
    from twentyone.core.rules import RulesError, rules_from_toml

    if variant not in VARIANTS:
        raise RulesError(f"variant: unknown game {variant!r}; choose one of {', '.join(VARIANTS)}.")
    text = resources.files(_DATA).joinpath(f"{variant}.toml").read_text("utf-8")
    return rules_from_toml(text, _tables())


def load_rules(path: str | Path) -> Rules:
    """Read a rules file from disk; cash-out tables resolve against the built-in ones.

    Every problem with the file is a :class:`RulesError` with a one-line message:

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".toml") as file:
    ...     _ = file.write(b"id = 'x'\\n\\xff"); file.flush()
    ...     load_rules(file.name)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twentyone.core.rules.RulesError: rules file: '...' is not UTF-8 text (byte 0xff at offset 9).
    """
    from twentyone.core.rules import RulesError, rules_from_toml

    try:
        text = Path(path).read_text("utf-8")
    except OSError as error:
        raise RulesError(f"rules file: cannot read {str(path)!r} ({error.strerror}).") from None
    except UnicodeDecodeError as error:
        raise RulesError(f"rules file: {str(path)!r} is not UTF-8 text (byte {error.object[error.start]:#04x} "
                         f"at offset {error.start}).") from None
    except ValueError as error:  # a path no file system takes: a NUL byte, an unpaired surrogate
        raise RulesError(f"rules file: cannot read {str(path)!r} ({error}).") from None
    try:
        return rules_from_toml(text, _tables())
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise RulesError(f"rules file: {str(path)!r} nests arrays or tables too deeply.") from None


def resolve_rules(variant: str | None, rules_file: str | Path | None) -> Rules:
    """A rules file when one is given, else the named built-in game."""
    if rules_file is not None:
        return load_rules(rules_file)
    return builtin_rules(variant or "first-person")
