"""Computed return reports kept on disk, so asking again for the same rules answers at once.

A report is stored under a key made of the rules as the analysis reads them,
the split strategy, and a digest of the source of ``twentyone.analysis`` and
``twentyone.core``: any change to the rules or to the code computes afresh.
Only the standard library is imported here, so a cached answer never loads
numpy or numba. ``TWENTYONE_CACHE`` names the folder (default
``$XDG_CACHE_HOME/twentyone`` or ``~/.cache/twentyone``); ``--no-cache`` on
the command line skips it.

>>> from twentyone.variants import builtin_rules
>>> report_key(builtin_rules("classic"), "cdp") == report_key(builtin_rules("classic"), "cdp")
True
>>> report_key(builtin_rules("classic"), "cdp") == report_key(builtin_rules("classic"), "cdz-")
False
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    if "TWENTYONE_CACHE" in os.environ:
        return Path(os.environ["TWENTYONE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "twentyone"


def _canonical(value: Any) -> Any:
    """Plain, order-stable data for hashing (sets sorted, dataclasses as dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return sorted((repr(_canonical(k)), _canonical(v)) for k, v in value.items())
    if isinstance(value, set | frozenset):
        return sorted(repr(_canonical(v)) for v in value)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return repr(value)


@cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for folder in ("analysis", "core"):
        for path in sorted((_PACKAGE / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def report_key(rules: Any, split_strategy: str) -> str:
    """The cache key of a report: rules, split strategy and the code that computes it."""
    text = json.dumps([_canonical(rules), split_strategy, _code_digest()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(key: str) -> dict[str, Any] | None:
    path = cache_dir() / f"rtp-{key}.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data


def store(key: str, report: dict[str, Any]) -> None:
    """Keep ``report``; a cache that cannot be written is skipped silently (it only saves time)."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".rtp-{key}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps(report))
        temporary.replace(folder / f"rtp-{key}.json")
    except OSError:
        pass
