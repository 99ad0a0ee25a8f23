"""Fixtures for the server tests: an app on a fresh database, players, a clock the tests move."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, closing
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_helpers import OPERATOR, Client, Clock, fresh_postgres_database
from sqlalchemy import make_url

from twentyone.server import db
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


class SchemaTemplates:
    """A database at the schema's newest migration, per backend, made by the migrations once per test process (each
    pytest-xdist worker is one) when first asked for, and copied for each test that starts a server."""

    def __init__(self, folder: Path, stack: ExitStack) -> None:
        self.folder = folder
        self.stack = stack
        self._sqlite: Path | None = None
        self._postgres: str | None = None

    def sqlite(self) -> Path:
        if self._sqlite is None:
            path = self.folder / "template.db"
            db.migrate(f"sqlite:///{path}")
            with closing(sqlite3.connect(path)) as connection:  # all in the file itself: a copy of it is whole
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._sqlite = path
        return self._sqlite

    def postgres(self) -> str:
        if self._postgres is None:
            url = self.stack.enter_context(
                fresh_postgres_database(os.environ["TWENTYONE_TEST_POSTGRES_URL"], "twentyone_template"))
            db.migrate(url)  # its connections closed after: a database copied must have none
            self._postgres = make_url(url).database
        return self._postgres


@pytest.fixture(scope="session")
def schema_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaTemplates]:
    with ExitStack() as stack:
        yield SchemaTemplates(tmp_path_factory.mktemp("schema"), stack)


@pytest.fixture(params=_backends())
def database_url(request: pytest.FixtureRequest, tmp_path: Path, schema_templates: SchemaTemplates) -> Iterator[str]:
    """A new database for the test. A test that starts a server (it asks for ``settings``) gets a copy of one at the
    schema's newest migration, made by the same migrations: the server's own migration at its start then finds
    nothing to do. Running every migration for each test took about 0.15 s on SQLite and 0.35 s on PostgreSQL, over
    600 times a run. A test that asks for the database alone (the migrations' own tests) gets an empty one, as does
    one that reaches ``settings`` only through ``request.getfixturevalue`` (its server then migrates it)."""
    migrated = "settings" in request.fixturenames
    if request.param == "sqlite":
        path = tmp_path / "server.db"
        if migrated:
            shutil.copyfile(schema_templates.sqlite(), path)
        yield f"sqlite:///{path}"
        return
    template = schema_templates.postgres() if migrated else None
    with fresh_postgres_database(os.environ["TWENTYONE_TEST_POSTGRES_URL"], "twentyone_test", template) as url:
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


