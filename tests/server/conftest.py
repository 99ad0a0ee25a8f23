"""Fixtures for the server tests: an app on a fresh database, players, a clock the tests move."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_helpers import OPERATOR, Client, Clock, fresh_postgres_database

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.service import GameService


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _backends() -> list[str]:
    """SQLite always; PostgreSQL too where TWENTYONE_TEST_POSTGRES_URL names a server (CI starts one)."""
    if os.environ.get("TWENTYONE_TEST_POSTGRES_URL"):
        return ["sqlite", "postgresql"]
    if os.environ.get("CI"):
        raise RuntimeError("CI must run the storage tests on PostgreSQL: .ci/run sets TWENTYONE_TEST_POSTGRES_URL.")
    return ["sqlite"]


@pytest.fixture(params=_backends())
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'server.db'}"
        return
    with fresh_postgres_database(os.environ["TWENTYONE_TEST_POSTGRES_URL"], "twentyone_test") as url:
        yield url


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(database_url, tmp_path, OPERATOR)


@pytest.fixture
def http(settings: Settings, clock: Clock) -> Iterator[TestClient]:
    app = create_app(settings, clock=clock, timers=False)
    with TestClient(app) as client:
        yield client


@pytest.fixture
def service(http: TestClient) -> GameService:
    return http.app.state.service  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def guest(http: TestClient) -> Client:
    body = http.post("/auth/guest").json()
    return Client(http, body["token"], body["player"]["name"])


@pytest.fixture
def operator(http: TestClient) -> Client:
    return Client(http, OPERATOR, "operator")


