"""A real server process (uvicorn) that dies like kill -9 (``os._exit``) at a named stage of a round.

``python crash_server.py DATABASE_URL DATA_DIR PORT``. The stage is read from
``DATA_DIR/crash-at`` each time one is reached, so a test arms it while the process
runs: ``fault:deal``, ``fault:act``, ``fault:settle`` (inside the transaction,
before its commit: the service's fault hook) or ``answer`` (after the commit,
before the answer leaves: a published round event), optionally ``:n`` for the
n-th time after arming. ``TWENTYONE_TEST_STACKS`` (JSON) stacks the next shoes; ``TWENTYONE_TEST_WALLET``
(``module:factory``) plugs in an operator's wallet.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import uvicorn

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.wallet import load_operator_wallet

DIED = 137  # what a shell reports for a process killed by SIGKILL


def main() -> None:
    url, data_dir, port = sys.argv[1:4]
    armed_file = Path(data_dir) / "crash-at"
    seen: dict[str, int] = {}
    settings = Settings(url, Path(data_dir), os.environ["TWENTYONE_OPERATOR_TOKEN"], tick_seconds=0.2)
    wallet = os.environ.get("TWENTYONE_TEST_WALLET")  # module:factory of an operator's wallet, if any
    app = create_app(settings, operator_wallet=load_operator_wallet(wallet) if wallet else None)
    service = app.state.service
    for stack in json.loads(os.environ.get("TWENTYONE_TEST_STACKS", "[]")):
        service.stacked.append(list(stack))

    def reached(where: str) -> None:
        try:
            armed = armed_file.read_text().strip()
        except FileNotFoundError:
            return
        name, _, count = armed.rpartition(":") if armed.rsplit(":", 1)[-1].isdigit() else (armed, "", "1")
        if name == where:
            seen[armed] = seen.get(armed, 0) + 1
            if seen[armed] == int(count):
                os._exit(DIED)

    service.fault = lambda stage: reached(f"fault:{stage}")
    publish = service.events.publish

    def publish_or_die(table_id: str, event: dict[str, Any]) -> None:
        if event.get("type") == "round":
            reached("answer")
        publish(table_id, event)

    service.events.publish = publish_or_die
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
