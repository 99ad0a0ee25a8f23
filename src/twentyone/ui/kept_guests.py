"""A guest's sign-in kept on this machine, one per server, for terminal play at a server.

The web page keeps a guest's token in the browser, so a guest who closes the page and opens it again is the same
guest: the same balance, the same history, and a round left open is still theirs to finish. Terminal play forgot
its guest at quit, so a guest who quit mid-round could not come back to it (a terminal trial). The token is kept
in ``$XDG_STATE_HOME/twentyone/guests.json`` (``~/.local/state`` where that is not set), readable by its owner
alone, keyed by the server's origin. A token the server no longer takes (expired, signed out) is forgotten.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

FILE_NAME = "guests.json"


def state_dir() -> Path:
    """Where twentyone keeps what it remembers between runs: ``$XDG_STATE_HOME/twentyone``, else
    ``~/.local/state/twentyone`` (the XDG base directory specification's default)."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state") / "twentyone"


def origin(url: str) -> str:
    """A server's address as the key of its kept guest: scheme, host and port, whatever else the URL says.

    >>> origin("http://LOCALHOST:8000/"), origin("https://casino.example")
    ('http://localhost:8000', 'https://casino.example:443')
    """
    address = httpx.URL(url)
    port = address.port or (443 if address.scheme == "https" else 80)
    return f"{address.scheme}://{address.host}:{port}"


@dataclass(frozen=True)
class KeptGuests:
    """The guests kept on this machine, one per server.

    >>> import tempfile
    >>> kept = KeptGuests(Path(tempfile.mkdtemp()) / "guests.json")
    >>> kept.token_for("http://localhost:8000") is None
    True
    >>> kept.keep("http://localhost:8000", "t0ken", "guest-1a2b"); kept.token_for("http://localhost:8000/")
    't0ken'
    >>> kept.name_for("http://localhost:8000")
    'guest-1a2b'
    >>> kept.forget("http://localhost:8000"); kept.token_for("http://localhost:8000") is None
    True
    """

    path: Path

    @classmethod
    def default(cls) -> KeptGuests:
        return cls(state_dir() / FILE_NAME)

    def token_for(self, server: str) -> str | None:
        """The kept guest's token at ``server``; None where none is kept (or the file cannot be read)."""
        return self._kept(server)[0]

    def name_for(self, server: str) -> str | None:
        """The name of the guest kept for ``server``; None where none is."""
        return self._kept(server)[1]

    def _kept(self, server: str) -> tuple[str | None, str | None]:
        """The token and name kept for ``server``, from one read of the file; both None where no token is."""
        entry = self._read().get(origin(server))
        token, name = (entry.get("token"), entry.get("name")) if isinstance(entry, dict) else (None, None)
        if not isinstance(token, str) or not token:
            return None, None
        return token, name if isinstance(name, str) and name else None

    def keep(self, server: str, token: str, name: str) -> None:
        """Keep ``token`` as the guest at ``server``, replacing any other. Raises :class:`OSError` where the file
        cannot be written (the guest plays on, and is told it will not be kept)."""
        kept = self._read()
        kept[origin(server)] = {"token": token, "name": name}
        self._write(kept)

    def forget(self, server: str) -> None:
        """Forget the guest at ``server`` (a token the server refused, or ``--new-guest``)."""
        kept = self._read()
        if kept.pop(origin(server), None) is not None:
            with contextlib.suppress(OSError):  # a token left behind is refused again next time: no harm
                self._write(kept)

    def _read(self) -> dict[str, object]:
        try:
            kept = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or not ours to read: nothing kept
            return {}
        return dict(kept) if isinstance(kept, dict) else {}

    def _write(self, kept: dict[str, object]) -> None:
        """Write the whole file anew and move it into place, readable by its owner alone: a token is a sign-in."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".guests-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(kept, file, indent=2, sort_keys=True)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
