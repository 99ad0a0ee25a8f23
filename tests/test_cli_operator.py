"""`twentyone serve` and `twentyone admin` as an operator's trial found them: a password printed in clear, a worker's
death unlogged, a proxy's clients counted as one address, demo mode left on by "off", read-only commands that
migrated, `admin token` that wanted a database, a refused start that left a token behind, errors of several lines.

The tests that need PostgreSQL are skipped without ``TWENTYONE_TEST_POSTGRES_URL`` (CI sets it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from live import free_port, stop_group
from server_helpers import eventually

from test_cli import CLI, assert_one_line_error, run

PASSWORD = "s3cretpw"


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[int, Path]]:
    """``twentyone serve`` on a free port until the block ends (SIGTERM to its process group): the port and the file
    that holds what it printed (its banner, uvicorn's log)."""
    port, log = free_port(), tmp_path / "serve.log"
    environment = {key: value for key, value in os.environ.items() if key != "TWENTYONE_OPERATOR_TOKEN"}
    with open(log, "w") as out:
        server = subprocess.Popen([*CLI, "serve", "--port", str(port), *args], stdout=out, stderr=subprocess.STDOUT,
                                  env={**environment, "TMPDIR": str(tmp_path), **(env or {})}, start_new_session=True)
    try:
        def listening() -> bool:
            with socket.socket() as probe:
                return server.poll() is not None or probe.connect_ex(("127.0.0.1", port)) == 0

        eventually(listening, 60, "the server to listen")
        assert server.poll() is None, log.read_text()
        yield port, log
    finally:
        stop_group(server)


def new_guest(port: int, address: str) -> int:
    """POST /auth/guest through a proxy that says the client is ``address``: the status code."""
    return httpx.post(f"http://127.0.0.1:{port}/auth/guest", headers={"X-Forwarded-For": address}).status_code


def sqlite_schema_at(path: Path, revision: str) -> None:
    """A server's SQLite database as an older version (``revision``) left it."""
    from alembic import command
    from alembic.config import Config

    from twentyone.server.db import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", f"sqlite:///{path}")
    command.upgrade(config, revision)


def revision_of(path: Path) -> list[tuple[str, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return [tuple(row) for row in connection.execute("SELECT version_num FROM alembic_version")]


# ------------------------------------------------------------------ 1. a database's password is never printed
def test_a_database_password_is_hidden_in_the_errors_of_serve_and_admin(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{free_port()}/twentyone"
    shown = url.replace(PASSWORD, "***")
    for command in (["serve", "--port", str(free_port())], ["admin", "report"], ["admin", "credit", "ann", "100"]):
        refused = run(*command, "--database", url, "--data-dir", str(tmp_path / "new"))
        assert_one_line_error(refused, f"cannot open the database {shown!r}")
        assert PASSWORD not in refused.stdout + refused.stderr
    # One that does not parse (a port that is not a number) hides it too.
    refused = run("admin", "report", "--database", f"postgresql+psycopg://app:{PASSWORD}@db:port/x")
    assert_one_line_error(refused, "cannot open the database 'postgresql+psycopg://app:***@db:port/x'")
    assert PASSWORD not in refused.stderr
    # An "@" in the password: the driver reads its tail as part of the host, and quotes it (found by review).
    refused = run("admin", "report", "--database", f"postgresql+psycopg://app:p@{PASSWORD}@nohost.invalid/x")
    assert_one_line_error(refused, "cannot open the database 'postgresql+psycopg://app:***@nohost.invalid/x'")
    assert PASSWORD not in refused.stderr, refused.stderr


def test_a_database_password_is_hidden_in_the_start_up_banner(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    from twentyone.cli.main import _announce
    from twentyone.server.config import Settings

    settings = Settings(f"postgresql+psycopg://app:{PASSWORD}@db/twentyone?password={PASSWORD}&sslpassword={PASSWORD}",
                        tmp_path, "token")
    _announce(settings, "127.0.0.1", 8000, "with 2 worker processes")
    printed = capsys.readouterr().out
    assert PASSWORD not in printed
    assert "database: postgresql+psycopg://app:***@db/twentyone?password=***&sslpassword=***;" in printed


# ------------------------------------------------------------------ 2. a worker's death is in the log
@pytest.mark.serial  # server processes started and killed, as in tests/server/test_cluster.py
def test_a_workers_death_and_its_replacement_are_in_the_servers_log(tmp_path: Path, postgres_url: str) -> None:
    """``kill -9`` of a worker of ``serve --workers 2``: uvicorn's supervisor starts another and logs it ("Child process
    [PID] died"), at INFO, which the server's WARNING hid; the workers' own INFO lines stay out."""
    from sqlalchemy import create_engine, text

    listeners = ("SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'twentyone-listen %' "
                 "AND datname = current_database()")

    def workers() -> set[int]:
        engine = create_engine(postgres_url)
        try:
            with engine.connect() as connection:
                return {int(name.rsplit(" ", 1)[1]) for name in connection.execute(text(listeners)).scalars()}
        finally:
            engine.dispose()

    with serving(tmp_path, "--workers", "2", "--database", postgres_url, "--data-dir", str(tmp_path)) as (port, log):
        first = eventually(lambda: (found := workers()) and len(found) == 2 and found, 60, "two workers listening")
        killed = min(first)
        os.kill(killed, signal.SIGKILL)
        eventually(lambda: f"Child process [{killed}] died" in log.read_text(), 30, "the death in the log")
        eventually(lambda: len(workers() - first) == 1 and len(workers()) == 2, 60, "another worker in its place")
        assert httpx.get(f"http://127.0.0.1:{port}/tables").status_code == 200
    printed = log.read_text()
    assert "Started parent process" in printed and "Started server process" not in printed, printed  # workers: WARNING


def test_the_supervisor_alone_logs_at_info_under_workers() -> None:
    """The logging configuration ``serve --workers`` gives uvicorn: INFO from the supervisor, WARNING from a worker."""
    import logging

    from twentyone.server.config import SupervisorInfo, workers_logging

    config = workers_logging()
    assert config["loggers"]["uvicorn.error"]["level"] == "INFO"
    assert all(logger["level"] == "WARNING" for name, logger in config["loggers"].items() if name != "uvicorn.error")
    died = logging.LogRecord("uvicorn.error", logging.INFO, "multiprocess.py", 1, "Child process [7] died", None, None)
    worker = SupervisorInfo()
    worker.supervisor = False  # as it is made in a spawned worker
    assert SupervisorInfo().filter(died) and not worker.filter(died)
    assert worker.filter(logging.LogRecord("uvicorn.error", logging.WARNING, "x.py", 1, "slow", None, None))


# ------------------------------------------------------------------ 3. clients behind a proxy
def test_serve_trusts_x_forwarded_for_from_the_proxies_it_is_given(tmp_path: Path) -> None:
    """Behind a load balancer the limits by address count the client it names in X-Forwarded-For, when its address
    is listed: here 127.0.0.1 is not, so two clients it names are one address, past a limit of one new guest a
    minute (with uvicorn's default, 127.0.0.1 trusted, they were two)."""
    env = {"TWENTYONE_GUESTS_PER_MINUTE": "1"}
    with serving(tmp_path, "--data-dir", str(tmp_path), "--forwarded-allow-ips", "10.9.9.9", env=env) as (port, _):
        assert [new_guest(port, "203.0.113.1"), new_guest(port, "203.0.113.2")] == [201, 429]
    # Listed (as a network), the proxy on loopback names two clients, each under its own limit.
    with serving(tmp_path, "--data-dir", str(tmp_path), "--forwarded-allow-ips", "10.9.9.9,127.0.0.0/8",
                 env=env) as (port, _):
        assert [new_guest(port, "203.0.113.3"), new_guest(port, "203.0.113.4")] == [201, 201]


@pytest.mark.serial  # server processes
def test_serve_workers_trust_x_forwarded_for_from_the_proxies_they_are_given(tmp_path: Path,
                                                                             postgres_url: str) -> None:
    with serving(tmp_path, "--workers", "2", "--database", postgres_url, "--data-dir", str(tmp_path),
                 "--forwarded-allow-ips", "10.9.9.9", env={"TWENTYONE_GUESTS_PER_MINUTE": "1"}) as (port, _):
        assert [new_guest(port, "203.0.113.1"), new_guest(port, "203.0.113.2")] == [201, 429]


@pytest.mark.parametrize(("given", "env", "fragment"), [
    (["--forwarded-allow-ips", "10.0.0.5/8"], {}, "10.0.0.5/8 has host bits set"),
    (["--forwarded-allow-ips", "10.0.0.5,proxy.internal"], {}, "'proxy.internal' does not appear to be"),
    ([], {"FORWARDED_ALLOW_IPS": "10.0.0.5,"}, "'' does not appear to be"),
])
def test_proxies_that_are_not_addresses_are_refused_in_one_line(tmp_path: Path, given: list[str],
                                                               env: dict[str, str], fragment: str) -> None:
    """uvicorn compares what it cannot read as an address with the client's as text, which never matches: such a
    proxy would be trusted never, without a word."""
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "new"), *given, env=env)
    assert_one_line_error(refused, "--forwarded-allow-ips takes * or the proxies' addresses", fragment)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("value", "fragment"), [("a", "(it has 1)"), (" ", "printable ASCII without spaces"),
                                                 ("correct horse battery staple", "without spaces"),
                                                 ("x" * 23, "(it has 23)")])
def test_serve_refuses_an_operator_token_that_is_guessed_or_cannot_be_sent(tmp_path: Path, value: str,
                                                                            fragment: str) -> None:
    """``TWENTYONE_OPERATOR_TOKEN=a`` was taken: the whole floor's money for one guess (an operator's trial). A space
    was taken too, and no ``Authorization`` header carries it: every /admin call was then 401."""
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "new"),
                  env={"TWENTYONE_OPERATOR_TOKEN": value})
    assert_one_line_error(refused, "TWENTYONE_OPERATOR_TOKEN: at least 24 characters", fragment)
    assert not (tmp_path / "new").exists()


def test_serve_refuses_a_weak_operator_token_written_by_hand_in_the_data_directory(tmp_path: Path) -> None:
    """The token file is held to the variable's rule: "a" written there was taken (review)."""
    (tmp_path / "operator-token").write_text("a\n")
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path))
    assert_one_line_error(refused, f"{tmp_path / 'operator-token'}: at least 24 characters (it has 1)")


# ------------------------------------------------------------------ 4. demo mode
@pytest.mark.parametrize(("value", "demo"), [("off", False), ("False", False), ("NO", False), ("0", False),
                                             ("On", True), ("TRUE", True), ("yes", True), ("1", True)])
def test_demo_mode_takes_the_usual_yes_and_no_in_any_case(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          value: str, demo: bool) -> None:
    from twentyone.server.config import Settings

    monkeypatch.setenv("TWENTYONE_DEMO", value)
    assert Settings.from_environment(data_dir=tmp_path, make_token=False).demo is demo


@pytest.mark.parametrize("value", ["maybe", "", "of"])
def test_serve_refuses_a_demo_flag_it_cannot_read(tmp_path: Path, value: str) -> None:
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "new"),
                  env={"TWENTYONE_DEMO": value})
    assert_one_line_error(refused, "TWENTYONE_DEMO must be 1, true, yes or on, or 0, false, no or off", repr(value))
    assert not (tmp_path / "new").exists()


def test_the_start_up_banner_says_whether_demo_mode_is_on(tmp_path: Path) -> None:
    with serving(tmp_path, "--data-dir", str(tmp_path), env={"TWENTYONE_DEMO": "0"}) as (port, log):
        assert httpx.post(f"http://127.0.0.1:{port}/auth/guest").status_code == 403
        assert "demo mode off (TWENTYONE_DEMO)" in log.read_text()


# ------------------------------------------------------------------ 5. the operator's commands never migrate
def test_admin_commands_refuse_a_sqlite_database_without_the_servers_schema(tmp_path: Path) -> None:
    empty = tmp_path / "twentyone.db"
    sqlite3.connect(empty).close()  # there, and empty
    for verb in (["report"], ["rounds"], ["credit", "ann", "100"]):
        assert_one_line_error(run("admin", *verb, "--data-dir", str(tmp_path)), "has no twentyone schema")
    with contextlib.closing(sqlite3.connect(empty)) as connection:
        assert connection.execute("SELECT name FROM sqlite_master").fetchall() == []  # no tables made


def test_admin_commands_refuse_a_schema_older_or_newer_than_theirs_and_change_neither(tmp_path: Path) -> None:
    """An older schema is upgraded by a start of this version's server, not by a command beside the older server still
    running on it; one this version does not know is a newer version's."""
    database = tmp_path / "twentyone.db"
    sqlite_schema_at(database, "0014")
    assert_one_line_error(run("admin", "report", "--data-dir", str(tmp_path)),
                          "is at schema revision 0014, older than this version's", "start `twentyone serve`")
    assert revision_of(database) == [("0014",)]
    with contextlib.closing(sqlite3.connect(database)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    assert_one_line_error(run("admin", "player", "ann", "--data-dir", str(tmp_path)),
                          "is at schema revision 9999, which this version of twentyone does not know")
    assert revision_of(database) == [("9999",)]


def test_admin_report_refuses_an_empty_postgresql_database_and_makes_no_table(postgres_url: str) -> None:
    from sqlalchemy import create_engine, inspect

    assert_one_line_error(run("admin", "report", "--database", postgres_url), "has no twentyone schema")
    engine = create_engine(postgres_url)
    try:
        assert inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


# ------------------------------------------------------------------ 6. admin token needs no database
def test_admin_token_reads_the_data_directory_of_a_server_without_sqlite(tmp_path: Path) -> None:
    """A PostgreSQL server's data directory holds its token and no database."""
    (tmp_path / "operator-token").write_text("made-by-the-server\n")
    for database in ([], ["--database", "postgresql+psycopg://app@127.0.0.1:1/twentyone"]):
        printed = run("admin", "token", "--data-dir", str(tmp_path), *database)
        assert printed.returncode == 0 and printed.stdout == "made-by-the-server\n", printed.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["operator-token"]


# ------------------------------------------------------------------ 7. a refused start leaves nothing behind
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_serve_on_a_database_it_cannot_reach_leaves_no_data_directory_nor_token(tmp_path: Path,
                                                                                workers: list[str]) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/twentyone"
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "new"), "--database", url,
                  *workers)
    assert_one_line_error(refused, "cannot open the database")
    assert refused.stdout == "" and not (tmp_path / "new").exists()


def test_serve_refused_by_its_database_takes_back_the_token_it_made(tmp_path: Path) -> None:
    """A database the start reaches and then cannot use (a schema of a newer version): the token it wrote goes."""
    database = tmp_path / "twentyone.db"
    sqlite_schema_at(database, "head")
    with contextlib.closing(sqlite3.connect(database)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    refused = run("serve", "--port", str(free_port()), "--data-dir", str(tmp_path))
    assert_one_line_error(refused, "cannot open the database", "9999")
    assert sorted(path.name for path in tmp_path.iterdir() if not path.name.startswith("twentyone.db")) == []


# ------------------------------------------------------------------ 8. one line, naming what is wrong
@pytest.mark.parametrize("verb", ["credit", "debit"])
@pytest.mark.parametrize("amount", ["-5", "1.5", "-1.5", "abc", "0", "5e3"])
def test_an_amount_that_is_not_a_whole_number_above_0_is_one_line(tmp_path: Path, verb: str, amount: str) -> None:
    assert_one_line_error(run("admin", verb, "ann", amount, "--data-dir", str(tmp_path)),
                          f"the amount must be a whole number of minor units above 0 (500 is 5.00), got {amount!r}")


@pytest.mark.parametrize(("variable", "value"), [
    ("TWENTYONE_GUESTS_PER_MINUTE", "abc"), ("TWENTYONE_SOCKETS_PER_ADDRESS", "-1"),
    ("TWENTYONE_SOCKETS_PER_ADDRESS", "0"), ("TWENTYONE_TOKEN_DAYS", "0"), ("TWENTYONE_TOKEN_DAYS", "10000000"),
    ("TWENTYONE_GUESTS_PER_MINUTE", "1.5"),
])
def test_a_limit_in_the_environment_that_makes_no_sense_is_one_line_naming_it(tmp_path: Path, variable: str,
                                                                              value: str) -> None:
    for command in (["serve", "--port", str(free_port())], ["admin", "report"]):
        refused = run(*command, "--data-dir", str(tmp_path / "new"), env={variable: value})
        assert_one_line_error(refused, f"{variable} must be a whole number, 1 ", repr(value))
        assert not (tmp_path / "new").exists()


def test_the_limits_in_the_environment_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from twentyone.server.config import Settings

    for variable, value in (("TWENTYONE_GUESTS_PER_MINUTE", "5"), ("TWENTYONE_SOCKETS_PER_ADDRESS", " 1200 "),
                            ("TWENTYONE_TOKEN_DAYS", "7")):
        monkeypatch.setenv(variable, value)
    settings = Settings.from_environment(data_dir=tmp_path, make_token=False)
    assert (settings.guests_per_minute, settings.sockets_per_address, settings.token_days) == (5, 1200, 7)
