"""Suite-wide settings: which tests run alone (``serial``), and Hypothesis without per-example deadlines.

``make test`` runs the suite in two parts: every test not marked ``serial`` across the machine's cores
(pytest-xdist, one worker per core), then the ``serial`` ones alone. Alone are the tests whose verdict depends on
time or on the whole machine: load runs that fail on any 5xx, kills and restarts of server processes with windows
measured in seconds, CPU pinning, request timeouts, queues of password hashes, timers that must fire apart. Beside
another worker's CPU they would measure the neighbour, not the server. On a 2-core machine the suite took 38
minutes in one process; in these two parts, 11 and 8 minutes (fresh-check at d65c17e, 2026-12-06). CI is asked to
stay well under 30.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# By module: a new test in one of these runs alone too. A module that measures time belongs here.
SERIAL_MODULES = frozenset({
    "test_attacks.py",  # a request dripped a byte at a time against the server's clock; fifty sign-ups at once
    "test_cluster.py",  # server processes started and killed, timers taken over within seconds
    "test_cpu.py",  # pins server processes to the machine's CPUs
    "test_faults.py",  # kill -9 at stages of a round, restarts within a window
    "test_held_writes.py",  # a pipeline the database cut off, made by hand: what psycopg has read by then is a race
    "test_load.py",  # load runs that fail on any 5xx, with crashes, a killed worker, dropped connections
    "test_lock_order.py",  # a transaction waiting on another's locks, watched for a few seconds
    "test_migrations.py",  # a writer beside a migration must commit within a second
    "test_operator_debits.py",  # an operator's wallet slow on purpose, against the idle session timeout
    "test_power_crowd.py",  # a crowd's sockets, whose bounded queues drop a client that reads too slowly
    "test_resilience.py",  # a killed server process resumes its rounds
    "test_sim_faults.py",  # simulator workers killed mid-run, a Dask nanny's restart awaited
    "test_sign_ins.py",  # password hashes queued one at a time, a crowd past the queue told to come back
    "test_storage_tuning.py",  # a checkpoint thread watched for a few seconds, request threads counted
    "test_terminal_client.py",  # real server processes and a terminal's waits with their windows
    "test_timers_apart.py",  # one table's slow timers must not hold up another's
})

# A Hypothesis example's speed is the benchmarks' business (benchmarks/), not a test's verdict: with two workers on
# two cores an example can take longer than the default 200 ms once, and Hypothesis calls that flaky.
settings.register_profile("twentyone", deadline=None)
settings.load_profile("twentyone")


@pytest.fixture(autouse=True, scope="session")
def _state_kept_apart(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What the command line keeps between runs (a terminal guest's sign-in, ``ui/kept_guests.py``) goes to the
    suite's own folder, for its processes and theirs: never to the home of whoever runs the tests."""
    import os

    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).name in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database, dropped afterwards, or a skip where none is configured: for the tests of
    several server processes (tests/server/test_cluster.py) and of the command line against PostgreSQL."""
    import os

    from server_helpers import fresh_postgres_database

    admin_url = os.environ.get("TWENTYONE_TEST_POSTGRES_URL")
    if not admin_url:
        pytest.skip("PostgreSQL: set TWENTYONE_TEST_POSTGRES_URL")
    with fresh_postgres_database(admin_url, "twentyone_test") as url:
        yield url
