"""What one request costs the server at a power table of N seats (default 1,000), in process.

N guests join one Power Blackjack round through FastAPI's TestClient on a fresh SQLite file;
the window closes; 200 of them read the round (``GET /rounds/{id}``) and then every player
stands (``POST /rounds/{id}/actions``; under an Ace, declines insurance first), the last one
settling everyone. Each request's cost
is the CPU time of the server's own thread (``time.thread_time`` around the service call), so
the client's work and other processes on the machine do not count. Reports, per request,
the stand and the round view, and inside them the engine's view (``Round.view``) and the
seats' queries; then how many of each one server core serves a second.

    .venv/bin/python benchmarks/crowd_requests.py [--players 1000]

``benchmarks/power_crowd.py`` measures the same table over loopback HTTP and WebSockets,
with every player deciding at once.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

import twentyone.core.round as engine_module
import twentyone.server.views as views_module
from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.rounds import Rounds

OPERATOR = "bench-operator-" + "x" * 32
READS = 200  # round views measured before the stands


class Clock:
    """The service's clock, moved by hand: the betting window closes when the benchmark says."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def timed(owner: Any, name: str, spent: dict[str, list[float]]) -> None:
    """Replace ``owner.name`` with a wrapper adding each call's thread CPU time to ``spent[name]``."""
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[name].append(time.thread_time() - start)

    setattr(owner, name, wrapper)


def main(players: int) -> None:
    spent: dict[str, list[float]] = defaultdict(list)
    timed(Rounds, "act", spent)
    timed(views_module.Views, "round", spent)
    timed(engine_module.Round, "view", spent)
    timed(views_module, "_seats_shown", spent)
    data = Path(tempfile.mkdtemp(prefix="twentyone-crowd-requests-"))
    clock = Clock()
    settings = Settings(f"sqlite:///{data / 'bench.db'}", data, OPERATOR, guests_per_minute=players + 100)
    app = create_app(settings, clock=clock, timers=False)
    with TestClient(app) as http:
        service = app.state.service
        tokens = [http.post("/auth/guest").json()["token"] for _ in range(players)]

        def post(token: str, path: str, body: object = None) -> Any:
            answer = http.post(path, json=body, headers={"Authorization": f"Bearer {token}",
                                                         "Idempotency-Key": uuid.uuid4().hex})
            assert answer.status_code == 200, answer.text
            return answer.json()

        for token in tokens:
            post(token, "/tables/power/bets", {"spot": 1, "type": "main", "chip": 500})
            post(token, "/tables/power/deal")
        clock.now += timedelta(seconds=service.table("power").betting_window + 1)
        service.tick()
        headers = {"Authorization": f"Bearer {tokens[0]}"}
        round_id = http.get("/tables/power", headers=headers).json()["round"]["id"]
        spent.clear()  # the deal's own views are not what is measured
        for token in tokens[:READS]:
            http.get(f"/rounds/{round_id}", headers={"Authorization": f"Bearer {token}"})
        reads = {name: list(values) for name, values in spent.items()}
        spent.clear()
        for _ in range(2):  # every player holds the same two cards: one step of offers (an Ace up), then stands
            view = http.get(f"/rounds/{round_id}", headers=headers).json()
            if view["status"] != "playing":
                break
            offer = view["decision"]["kind"] != "play"
            action = next(a for a in view["legal_actions"] if a.startswith("no-")) if offer else "stand"
            for token in tokens:
                post(token, f"/rounds/{round_id}/actions", {"action": action})
        status = http.get(f"/rounds/{round_id}", headers=headers).json()["status"]
    stands = spent

    def per_call(values: list[float]) -> str:
        return f"{sum(values) / len(values) * 1000:.2f} ms" if values else "-"

    print(f"power round of {players} seats (SQLite, in process; server thread CPU per request), round {status}")
    print(f"  round view (GET): {per_call(reads['round'])} per request "
          f"({len(reads['round']) / sum(reads['round']):.0f} per server core-second); "
          f"of which Round.view {per_call(reads['view'])}, the seats' queries {per_call(reads['_seats_shown'])}")
    print(f"  decision (POST, answered with a round view): {per_call(stands['act'])} per request "
          f"({len(stands['act']) / sum(stands['act']):.0f} per server core-second, the settling one included); "
          f"of which Round.view {per_call(stands['view'])}, the seats' queries {per_call(stands['_seats_shown'])}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1000)
    main(parser.parse_args().players)
