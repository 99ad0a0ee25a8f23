"""The bare endpoint the load benchmark compares the game with: FastAPI on uvicorn, parse JSON and return it.

It runs with the same uvicorn options as ``twentyone serve`` (one process, the same
HTTP parser and event loop, no access log) and the same CPU policy (on one CPU of its
own with ``TWENTYONE_PIN_CPU=1``, as ``load.py --pin-cpu`` starts it), so the ratio
game ÷ bare measures what the game adds on top of the web stack. Started by ``benchmarks/load.py``:

    .venv/bin/python benchmarks/bare.py --port 8001
"""

from __future__ import annotations

import argparse
from typing import Any

from fastapi import FastAPI, Header
from pydantic import BaseModel, Field

from twentyone.cli.main import UVICORN_OPTIONS
from twentyone.server.cpu import pin_to_one_cpu, pin_wanted


class Decision(BaseModel):
    action: str = Field(max_length=32)


def bare_app() -> FastAPI:
    app = FastAPI(title="bare")

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/echo")
    async def echo(body: Decision, authorization: str | None = Header(default=None)) -> dict[str, Any]:
        return {"action": body.action, "signed_in": authorization is not None}

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if pin_wanted():
        pin_to_one_cpu()
    uvicorn.run(bare_app(), host="127.0.0.1", port=args.port, **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
