"""Schemathesis over the app's own ``/openapi.json``: every operation, valid and invalid inputs, bounded examples.

Each answer must be documented (status code, content type, headers) and conform to
its schema, and nothing may end in a 5xx. A guest's token (and, in a second run, the
operator's) is sent with every request; the Idempotency-Key header is generated
from the schema, which requires it. ``TWENTYONE_SCHEMA_EXAMPLES`` raises the
number of examples per operation (``docs/reliability.md`` has the long run).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance
from server_helpers import OPERATOR, Clock

from twentyone.server.app import create_app
from twentyone.server.config import Settings

EXAMPLES = int(os.environ.get("TWENTYONE_SCHEMA_EXAMPLES", "6"))


@pytest.fixture
def guest_headers(schema_app: Any) -> dict[str, str]:
    """A guest with a bet on the classic table's slip, so the controls have something to work on."""
    with TestClient(schema_app) as client:
        token = client.post("/auth/guest").json()["token"]
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "setup-bet"}
        client.post("/tables/classic/bets", json={"spot": 1, "chip": 500}, headers=headers)
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def schema_app(tmp_path: Path, database_url: str) -> Iterator[Any]:
    """The app on SQLite, and on PostgreSQL where the suite has one (its integers are narrower)."""
    settings_ = Settings(database_url, tmp_path, OPERATOR, guests_per_minute=10_000)
    yield create_app(settings_, clock=Clock(), timers=False)


def operations(app: Any) -> list[Any]:
    return [result.ok() for result in schemathesis.openapi.from_asgi("/openapi.json", app).get_all_operations()]


def excluded(operation: Any) -> list[Any]:
    """A new table's rules across fields (limits only for the variant's own bets, a minimum below its maximum,
    hands and seats within the variant's) are beyond JSON Schema: a schema-valid table may still be a 422 there. So
    is a name with a word of the casino's own ("operator-token", "the.house": it would pass for the casino), which a
    schema's pattern could state only as a lookahead that example generators do not honour."""
    if operation.label in ("POST /admin/tables", "POST /auth/register"):
        return [positive_data_acceptance]
    return []


def checker(operation: Any, mode: GenerationMode, token: str, tried: dict[str, int]) -> Any:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    def check(case: Any) -> None:
        explicit = case.headers and any(name.lower() == "authorization" for name in case.headers)
        key = (case.headers or {}).get("Idempotency-Key")
        if mode is GenerationMode.POSITIVE and key:  # the generated key made unique: a key reused on another
            case.headers["Idempotency-Key"] = (uuid.uuid4().hex[:16] + key)[:128]  # body is a 422, by design
        if mode is GenerationMode.POSITIVE and operation.label == "GET /me/history" and case.query and \
                {"page", "before"} <= set(case.query):  # two ways to page, exclusive (a 422 by design): beyond
            case.query.pop("page")  # what a query's schema can state, so a valid example takes one of them
        case.call_and_validate(headers={} if explicit else {"Authorization": f"Bearer {token}"},
                               excluded_checks=excluded(operation))
        tried[operation.label] = tried.get(operation.label, 0) + 1

    return check


def run(app: Any, token: str) -> dict[str, int]:
    """Every operation, positive and negative examples; the failures of all of them are reported together."""
    tried: dict[str, int] = {}
    failures: list[str] = []
    for operation in operations(app):
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                checker(operation, mode, token, tried)()
            except Unsatisfiable:  # nothing to make invalid (no parameters, no body)
                assert mode is GenerationMode.NEGATIVE, operation.label
            except Exception as error:
                failures.append(f"{operation.label} ({mode}): {error}")
    assert not failures, "\n\n".join(failures)
    print(f"schemathesis: {sum(tried.values())} requests over {len(tried)} operations, none failed")
    return tried


def test_every_operation_answers_a_guest_as_documented(schema_app: Any, guest_headers: dict[str, str]) -> None:
    tried = run(schema_app, guest_headers["Authorization"].removeprefix("Bearer "))
    assert len(tried) >= 20 and sum(tried.values()) >= 20 * EXAMPLES


def test_every_operation_answers_the_operator_as_documented(schema_app: Any) -> None:
    tried = run(schema_app, OPERATOR)
    assert len(tried) >= 20
