"""Load benchmark: simulated guests playing real rounds against ``twentyone serve``, driven by Locust.

Everything runs on this machine over loopback (127.0.0.1). One run:

1. the **bare** phase: a tiny FastAPI app that only parses and returns JSON
   (``benchmarks/bare.py``, same uvicorn options as ``serve``) under the same Locust
   load (players, think time, duration) — the yardstick;
2. the **game** phase: ``twentyone serve --port P --database URL [--workers N]`` as a
   subprocess; each simulated player signs in as a guest and plays until the time is
   up: choose a chip, bet, deal, then decisions from the round view's
   ``legal_actions`` (a simple strategy) until the round is settled, and again.
   Most play private tables (classic, first-person, classic-premium); some share
   multiplayer tables (7 seats) and a Power Blackjack table, joining in the betting
   window and following the round over the table's WebSocket. A 503 is retried with
   the same Idempotency-Key after its Retry-After, as a real client would;
3. the **audit**: with the load stopped and open rounds played out, the database is
   read directly: every ledger transfer sums to zero; every player's ledger balance
   equals their credits − staked + returned; every round's seats match its ledger rows
   (settled, void refunded, or open with its stakes counted); the house equals the
   settled rounds' result plus open stakes less credits; ``/admin/report`` agrees.

With ``--crash-at SECONDS`` the game phase kills every process of the server at once
(SIGKILL) that far into the measured window, starts it again on the same database and
port, and plays on: requests the crash cut off are sent again with their keys, as a
client does, and counted apart; the audit then covers the rounds in play at the kill.
With ``--kill-worker-at SECONDS`` it kills one of the ``--workers`` processes: the
others serve on, and the supervisor starts another in its place.
With ``--drop-connections-at SECONDS`` (PostgreSQL) the database ends every connection
the server holds instead, as one restarting or failing over does: the server answers the
requests it cuts 503, they are sent again, and the server must reconnect (its pool, its
timers' advisory locks, its event listener) and play on.

It prints requests/s of both phases and their ratio, decisions/s, rounds/s,
p50/p95/p99 latency per request kind, errors by status, the CPU of the server's
process tree and of the load generator, the load average, and the audit. The exit
status is 1 on any 5xx, any failed request that is not a refusal of the game (a 4xx
other than 404, 409 or 429), any exception in the server's log, or any money that does not
reconcile; 0 otherwise. Speed targets are printed, never enforced.

    .venv/bin/python benchmarks/load.py                           # 200 players, saturation, SQLite
    .venv/bin/python benchmarks/load.py --think 1                 # human pace: ~1 s between actions
    .venv/bin/python benchmarks/load.py --database postgresql+psycopg://u:p@127.0.0.1:54329/postgres
"""

from __future__ import annotations

# Locust patches the standard library for gevent as it is imported: import it first (in this process only;
# the servers run in their own, unpatched, processes).
import locust

# isort: split
import argparse
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import psutil
import websocket
from gevent.queue import Empty, Queue
from locust import FastHttpUser, constant
from locust.env import Environment
from locust.exception import StopUser
from simple_strategy import choose

from twentyone.server.cpu import PIN_ENV_VAR

HERE = Path(__file__).resolve().parent
FINISHED = ("settled", "void")
PRIVATE_TABLES = ("classic", "first-person", "classic-premium")
MAX_ATTEMPTS = 20  # a 503 is retried this many times at most (Retry-After apart)
MAX_STEPS = 200  # requests one round may take a player at most: every loop here is bounded
DROP_GRACE = 2.0  # seconds after --drop-connections-at in which a request may still meet a connection that is gone
DEMO_BALANCE = 100_000


# --------------------------------------------------------------------- options
@dataclass
class Options:
    players: int = 200
    duration: float = 30.0
    think: float = 0.0
    database: str | None = None
    workers: int = 1
    multiplayer_tables: int = 3
    power_players: int = 20
    bare: bool = True
    warmup: float = 60.0
    drain: float = 30.0
    json: str | None = None
    keep: bool = False
    fresh: bool = True
    pin_cpu: bool = False
    seed: int = 1
    port: int = 0  # 0: any free one
    crash_at: float | None = None
    kill_worker_at: float | None = None
    drop_connections_at: float | None = None


def parse(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=200, help="simulated guests (default 200)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured per phase (default 30)")
    parser.add_argument("--think", type=float, default=0.0,
                        help="mean seconds between a player's actions: 0 = saturation, 1 = human (default 0)")
    parser.add_argument("--database", help="SQLAlchemy URL (default: a fresh SQLite file); a PostgreSQL URL gets "
                                           "a fresh database created on that server and dropped afterwards")
    parser.add_argument("--workers", type=int, default=1, help="server processes (passed to serve --workers)")
    parser.add_argument("--multiplayer-tables", type=int, default=3, help="shared multiplayer tables, 7 seats each")
    parser.add_argument("--power-players", type=int, default=20, help="players at the shared Power Blackjack table")
    parser.add_argument("--no-bare", dest="bare", action="store_false", help="skip the bare-endpoint phase")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds allowed for every player to sign in")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds allowed to finish rounds in play")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true",
                        help="keep the data directory (and PostgreSQL database) of a run that passed too "
                             "(a failed run always keeps them)")
    parser.add_argument("--no-fresh", dest="fresh", action="store_false",
                        help="use the PostgreSQL database named in --database as it is (it should be empty)")
    parser.add_argument("--pin-cpu", action="store_true",
                        help="each server process (and the bare endpoint) on a CPU of its own: serve --pin-cpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=0,
                        help="the port the game server listens on (the bare endpoint takes the next one); default any "
                             "free one: a machine whose rules give the load a range of ports (an operator's trial)")
    parser.add_argument("--crash-at", type=float, metavar="SECONDS",
                        help="kill -9 the server's processes this long into the measured window, start it again on "
                             "the same database and port, and play on: a crash under load, audited after")
    parser.add_argument("--kill-worker-at", type=float, metavar="SECONDS",
                        help="kill -9 one of the --workers processes this long into the measured window, and play "
                             "on: the others serve, and the supervisor starts another in its place")
    parser.add_argument("--drop-connections-at", type=float, metavar="SECONDS",
                        help="PostgreSQL: end every connection the server holds to its database this long into the "
                             "measured window (pg_terminate_backend), as a database restarting does, and play on")
    args = parser.parse_args(argv)
    if args.players < 1 or args.duration <= 0 or args.think < 0 or args.workers < 1:
        parser.error("--players and --workers are at least 1, --duration positive, --think not negative")
    if args.port and not 0 < args.port < 65535:
        parser.error("--port is 1 to 65534 (the bare endpoint takes the next one)")
    if args.port:  # a port taken would have another program answer the run, measured as if it were the server
        for port, whose in ((args.port, "the game server's"), (args.port + 1, "the bare endpoint's")):
            if (port > args.port and not args.bare) or port_is_free(port):
                continue
            parser.error(f"port {port} ({whose}, from --port {args.port}) is in use: give another --port"
                         f"{' or --no-bare' if port > args.port else ''}")
    faults = {"--crash-at": args.crash_at, "--kill-worker-at": args.kill_worker_at,
              "--drop-connections-at": args.drop_connections_at}
    for name, at in faults.items():
        if at is not None and not 0 < at < args.duration:
            parser.error(f"{name} is a time within the measured window: more than 0, less than --duration")
    if sum(at is not None for at in faults.values()) > 1:
        parser.error("one fault a run: --crash-at, --kill-worker-at or --drop-connections-at")
    if args.kill_worker_at is not None and args.workers < 2:
        parser.error("--kill-worker-at kills one of several server processes: give --workers 2 or more")
    if args.drop_connections_at is not None and not (args.database or "").startswith("postgresql"):
        parser.error("--drop-connections-at ends the server's connections to PostgreSQL: give --database "
                     "postgresql+psycopg://...")
    return Options(**vars(args))


# ---------------------------------------------------------------- processes
def port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` at 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a closed run's TIME_WAIT is free
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, limit: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server at {url} did not answer /health within {limit:.0f} s")


def start(command: list[str], env: dict[str, str], log: Path, url: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wait_healthy(url, process, log)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


@dataclass
class Served:
    """A server a phase plays against: its process, and the faults it may be put to: a crash, after which it is
    started again (``--crash-at``), one worker killed (``--kill-worker-at``), its connections to the database ended
    (``--drop-connections-at``)."""

    command: list[str]
    env: dict[str, str]
    log: Path
    url: str
    process: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)
    cpu_of_the_killed: float = 0.0  # CPU seconds of the processes a crash killed, counted at the kill
    faults: list[dict[str, Any]] = field(default_factory=list)

    def start(self) -> None:
        log = self.log if not self.logs else self.log.with_name(f"{self.log.stem}-{len(self.logs)}{self.log.suffix}")
        self.logs.append(log)
        self.process = start(self.command, self.env, log, self.url)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cpu(self) -> float:
        """CPU seconds of the server's processes so far, those a crash killed included."""
        return self.cpu_of_the_killed + tree_cpu(self.pid)

    def crash(self) -> None:
        """Kill every process of the server at once (SIGKILL: nothing is flushed, no lock let go in good order, as
        a machine that loses its power), then start it again on the same database and port, and wait until it
        answers."""
        assert self.process is not None
        self.cpu_of_the_killed += tree_cpu(self.pid)
        RUN.fault_at, RUN.over_at = time.monotonic(), None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.start()
        RUN.over_at = time.monotonic()
        self.faults.append({"kind": "crash", "down_s": RUN.over_at - RUN.fault_at})

    def workers(self) -> list[psutil.Process]:
        """The processes ``serve --workers N`` serves from (multiprocessing's spawned children, not its resource
        tracker)."""
        workers = []
        for child in psutil.Process(self.pid).children():
            with contextlib.suppress(psutil.Error):  # one killed, not yet reaped (a zombie), or gone
                if any("spawn_main" in part for part in child.cmdline()):
                    workers.append(child)
        return workers

    def kill_worker(self) -> None:
        """Kill one worker process of several (SIGKILL), and wait until the supervisor has started another in its
        place: the requests under way in the one killed are cut, the others' go on. Its CPU seconds so far are
        counted at the kill (they leave the process tree with it)."""
        workers = self.workers()
        victim = workers[-1]
        self.cpu_of_the_killed += tree_cpu(victim.pid)
        RUN.fault_at, RUN.over_at = time.monotonic(), None
        victim.kill()
        deadline = time.monotonic() + 60
        while (now := self.workers()) and (len(now) < len(workers) or victim.pid in {w.pid for w in now}):
            if time.monotonic() > deadline:
                raise SystemExit("the server started no worker in place of the one killed within 60 s")
            time.sleep(0.2)
        RUN.over_at = time.monotonic()
        self.faults.append({"kind": "killed worker", "replaced_s": RUN.over_at - RUN.fault_at})

    def drop_connections(self, database: str) -> None:
        """End every connection to the server's PostgreSQL database but this one, at once: the request threads'
        (mid-transaction, some of them), the timers' (their advisory locks go with it), the event listener's. A
        request sent up to :data:`DROP_GRACE` seconds after may meet a connection of the server's pool that is
        gone: its 503 is the drop's."""
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = create_engine(database, poolclass=NullPool)
        try:
            with engine.connect() as connection:
                RUN.fault_at = time.monotonic()
                RUN.over_at = RUN.fault_at + DROP_GRACE
                ended = connection.execute(text(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()")).scalar_one()
        finally:
            engine.dispose()
        self.faults.append({"kind": "dropped connections", "ended": int(ended)})

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)

    def tracebacks(self) -> tuple[int, str]:
        """Tracebacks in the server's logs (every start's), and the last log's tail where there were any."""
        texts = [log.read_text(errors="replace") for log in self.logs]
        count = sum(text.count("Traceback (most recent call last)") for text in texts)
        return count, (next((text for text in reversed(texts) if "Traceback (most recent" in text), "")[-4000:])


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its children."""
    try:
        root = psutil.Process(pid)
        total = 0.0
        for proc in [root, *root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                pass
        return total
    except psutil.NoSuchProcess:
        return 0.0


def tree_threads(pid: int) -> dict[int, list[Path]]:
    """The ``/proc`` directories of the threads of a process and of each of its children, by process id (Linux)."""
    processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return {proc.pid: list(Path(f"/proc/{proc.pid}/task").iterdir()) for proc in processes}


def tree_switches(pid: int) -> int | None:
    """Context switches so far of every thread of a process and its children (Linux; None elsewhere).

    Each hand-over of the GIL between a server's threads is one or two; on several cores each
    also moves the work to a core with cold caches (server/cpu.py). Threads alive at both readings
    count: one that ends in between takes its count with it (request threads live as long as the server).
    """
    total = 0
    try:
        for threads in tree_threads(pid).values():
            for thread in threads:
                with contextlib.suppress(OSError):  # a thread that ended meanwhile
                    total += sum(int(line.split()[1]) for line in (thread / "status").read_text().splitlines()
                                 if "ctxt_switches" in line)
    except (OSError, psutil.NoSuchProcess):
        return None
    return total


def tree_thread_cpus(pid: int) -> dict[int, list[int]]:
    """The CPUs the threads of a process and of each of its children may run on (Linux), by process id:
    what pinning did, not what was asked (a server finding every CPU claimed runs unpinned)."""
    cpus: dict[int, list[int]] = {}
    try:
        for process, threads in tree_threads(pid).items():
            allowed: set[int] = set()
            for thread in threads:
                with contextlib.suppress(OSError):  # a thread that ended meanwhile
                    allowed |= os.sched_getaffinity(int(thread.name))
            cpus[process] = sorted(allowed)
    except (OSError, psutil.NoSuchProcess, AttributeError):  # AttributeError: no sched_getaffinity (not Linux)
        return {}
    return cpus


def own_cpu() -> float:
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


# ------------------------------------------------------------------- meters
@dataclass
class Meter:
    """What players count beside Locust's own statistics; reset when the measured window opens."""

    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    rounds: Counter[str] = field(default_factory=Counter)
    events: int = 0
    retried_503: int = 0
    cut_off: int = 0  # answers that were a fault's (RUN.cut_off_by_the_fault): counted apart from the statuses
    rounds_after_the_fault: int = 0  # rounds a player saw finished once the fault was over
    signed_in: int = 0
    active: int = 0  # players in the middle of a round
    notes: Counter[str] = field(default_factory=Counter)

    def reset(self) -> None:
        self.statuses.clear()
        self.rounds.clear()
        self.notes.clear()
        self.events = 0
        self.retried_503 = 0
        self.cut_off = 0
        self.rounds_after_the_fault = 0


@dataclass
class Run:
    """The state one phase's players share."""

    token: str = ""
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    roles: list[tuple[str, str]] = field(default_factory=list)  # (kind, table id) per player
    meter: Meter = field(default_factory=Meter)
    stopping: bool = False
    think: float = 0.0
    ws_url: str = ""
    counter: Any = field(default_factory=itertools.count)
    forwarded: Any = field(default_factory=itertools.count)
    # time.monotonic() of a fault (the kill, or the drop), and of its end (the server answering again after a crash,
    # another worker started in the killed one's place, DROP_GRACE after the drop)
    fault_at: float | None = None
    over_at: float | None = None

    def cut_off_by_the_fault(self, status: int, sent_at: float, answered_at: float) -> bool:
        """Whether an answer is the fault's: a lost connection (0) or a 503, of a request sent before the fault was
        over and answered after it began. It is sent again with its key, as a client does; any other answer, and
        any answer outside the fault, is the server's own."""
        if self.fault_at is None or status not in (0, 503):
            return False
        over = self.over_at if self.over_at is not None else answered_at
        return sent_at <= over and answered_at >= self.fault_at


RUN = Run()


def pause() -> None:
    """A player's think time before an action: exponential around the mean, at most 3 times it (0: none)."""
    if RUN.think > 0:
        gevent.sleep(min(random.expovariate(1 / RUN.think), RUN.think * 3))


# ------------------------------------------------------------------ players
class Guest(FastHttpUser):
    """A guest playing rounds at one table (private, multiplayer or power), as fast as ``--think`` allows."""

    wait_time = constant(0)  # think time is taken before each action instead (pause)
    network_timeout = 30.0
    connection_timeout = 30.0

    def on_start(self) -> None:
        self.index = next(RUN.counter)
        self.kind, self.table_id = RUN.roles[self.index % len(RUN.roles)]
        self.table = RUN.tables[self.table_id]
        self.player_id = 0
        self.name = ""
        self.headers: dict[str, str] = {}
        self.ws: websocket.WebSocket | None = None
        self.inbox: Queue[dict[str, Any]] = Queue()
        self.reader: gevent.Greenlet | None = None
        # A distinct client address per guest, as a proxy in front of a real floor would pass on
        # (uvicorn trusts X-Forwarded-For from 127.0.0.1): the guest rate limit is per address.
        n = next(RUN.forwarded)
        forwarded = f"127.{(n >> 16) & 255}.{(n >> 8) & 255}.{(n & 255) or 1}"
        for _ in range(MAX_ATTEMPTS):
            status, body = self.call("POST", "/auth/guest", "guest", key=False,
                                     headers={"X-Forwarded-For": forwarded})
            if status == 201:
                break
            gevent.sleep(1)
        else:
            raise StopUser()
        self.player_id = body["player"]["id"]
        self.name = body["player"]["name"]
        self.headers = {"Authorization": f"Bearer {body['token']}"}
        if self.table["shared"]:
            self.connect_events()
        RUN.meter.signed_in += 1

    def on_stop(self) -> None:
        if self.reader is not None:
            self.reader.kill(block=False)
        if self.ws is not None:
            with contextlib.suppress(Exception):  # closing a socket at the end of the run
                self.ws.close()

    # -------------------------------------------------------------- requests
    def call(self, method: str, path: str, kind: str, json_body: Any = None, key: bool = True,
             headers: dict[str, str] | None = None, token: str | None = None) -> tuple[int, Any]:
        """One request, retried after a 503 with the same Idempotency-Key; returns (status, body)."""
        sent = dict(headers or {})
        sent.update({"Authorization": f"Bearer {token}"} if token else self.headers)
        if key:
            sent["Idempotency-Key"] = uuid.uuid4().hex
        status, body = 0, None
        for attempt in range(MAX_ATTEMPTS):
            sent_at = time.monotonic()
            with self.client.request(method, path, name=kind, json=json_body, headers=sent,
                                     catch_response=True) as response:
                status = response.status_code or 0
                if RUN.cut_off_by_the_fault(status, sent_at, time.monotonic()):
                    RUN.meter.cut_off += 1
                    response.success()  # the fault's: a real client tries again, with the same key
                    gevent.sleep(0.5)
                    continue
                RUN.meter.statuses[(kind, status)] += 1
                try:
                    body = response.json() if response.content else None
                except ValueError:
                    body = None
                if status < 400 or status in (404, 409, 429):
                    response.success()  # the game's refusals are answers, not failures of the server
                else:
                    response.failure(f"{status} {body!r:.200}")
            if status == 503 and attempt + 1 < MAX_ATTEMPTS:
                RUN.meter.retried_503 += 1
                retry_after = response.headers.get("Retry-After", "1") if response.headers else "1"
                gevent.sleep(min(float(retry_after) if retry_after.isdigit() else 1.0, 5.0))
                continue
            break
        return status, body

    def post(self, path: str, kind: str, json_body: Any = None) -> tuple[int, Any]:
        pause()
        return self.call("POST", path, kind, json_body if json_body is not None else {})

    # ----------------------------------------------------------------- events
    def connect_events(self) -> None:
        token = self.headers["Authorization"].removeprefix("Bearer ")
        url = f"{RUN.ws_url}/ws/tables/{self.table_id}?token={token}"
        started = time.perf_counter()
        exception: Exception | None = None
        try:
            self.ws = websocket.create_connection(url, timeout=30)
            hello = json.loads(self.ws.recv())
            assert hello.get("type") == "hello", hello
        except Exception as error:  # recorded as a failed request
            exception = error
            self.ws = None
        self.environment.events.request.fire(request_type="WS", name="ws connect", response_time=(
            time.perf_counter() - started) * 1000, response_length=0, exception=exception, context={})
        if self.ws is not None:
            self.reader = gevent.spawn(self.read_events)

    def read_events(self) -> None:
        assert self.ws is not None
        self.ws.settimeout(None)
        while True:
            try:
                message = self.ws.recv()
            except Exception:  # closed: the player re-reads by polling, and connects again at its next round
                message = None
            if not message:
                self.ws = None
                return
            RUN.meter.events += 1
            self.inbox.put(json.loads(message))

    def wait_event(self, round_id: int | None, timeout: float) -> dict[str, Any] | None:
        """The next event about ``round_id`` (any round event if None), or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.inbox.get(timeout=left if self.ws is not None else min(left, 0.5))
            except Empty:
                if self.ws is None:
                    return None
                continue
            if event.get("type") in ("round", "void") and (round_id is None or event.get("round_id") == round_id):
                return event
            if event.get("type") == "bets-returned" and event.get("player_id") == self.player_id:
                return event
        return None

    # ------------------------------------------------------------------ rounds
    @locust.task
    def play(self) -> None:
        if RUN.stopping:
            gevent.sleep(0.2)
            return
        RUN.meter.active += 1
        try:
            if self.table["shared"]:
                self.play_shared()
            else:
                self.play_private()
        finally:
            RUN.meter.active -= 1

    def bet(self) -> None:
        table = f"/tables/{self.table_id}"
        self.post(f"{table}/chip", "chip", {"chip": self.table["chip"]})
        self.post(f"{table}/bets", "bet", {"spot": 1, "type": "main", "chip": self.table["chip"]})

    def play_private(self) -> None:
        table = f"/tables/{self.table_id}"
        self.bet()
        status, view = self.post(f"{table}/deal", "deal")
        if status == 409 and view and "balance" in view.get("detail", ""):
            self.top_up()
            return
        if status == 409:  # a round of ours is still in play (an earlier error): pick it up where it is
            status, state = self.call("GET", table, "table", key=False)
            view = state.get("round") if status == 200 and state else None
            RUN.meter.notes["resumed a round"] += 1
        if status >= 400 or not view:
            RUN.meter.notes[f"deal refused: {status}"] += 1
            self.post(f"{table}/clear", "clear")
            return
        self.play_out(view)

    def play_shared(self) -> None:
        table = f"/tables/{self.table_id}"
        view = None
        if self.ws is None:  # its socket was closed (a fault, a client too slow): connected again, as a page does
            self.connect_events()
        for attempt in range(10):
            if RUN.stopping:
                if attempt:
                    self.post(f"{table}/clear", "clear")
                return
            if attempt:
                self.post(f"{table}/clear", "clear")
            self.bet()
            status, view = self.post(f"{table}/deal", "deal")
            if status == 200 and view:
                break
            if status == 409 and view and "balance" in view.get("detail", ""):
                self.top_up()
            RUN.meter.notes["joined late: waited for the next round"] += 1
            self.wait_event(None, 3.0)
            view = None
        if view is None:
            return
        round_id = view["id"]
        for _ in range(MAX_STEPS):
            if view["status"] != "betting":
                break
            event = self.wait_event(round_id, self.table["betting_window"] + 5.0)
            if event is not None and event.get("type") == "bets-returned":
                RUN.meter.notes["bets returned at the close"] += 1
                return
            status, view = self.call("GET", f"/rounds/{round_id}", "round view", key=False)
            if status != 200:
                return
        self.play_out(view, shared=True)

    def play_out(self, view: dict[str, Any], shared: bool = False) -> None:
        """Decisions until the round is settled (or void)."""
        round_id = view["id"]
        for _ in range(MAX_STEPS):
            if view["status"] in FINISHED:
                RUN.meter.rounds[view["status"]] += 1
                RUN.meter.rounds_after_the_fault += RUN.over_at is not None and time.monotonic() > RUN.over_at
                return
            if view["legal_actions"] and view["decision"] and view["decision"]["player_id"] == self.player_id:
                status, answer = self.post(f"/rounds/{round_id}/actions", "action", {"action": choose(view)})
                if status == 200 and answer:
                    view = answer
                    continue
            elif shared:
                self.wait_event(round_id, 5.0)
            else:
                gevent.sleep(0.2)  # a private round waiting on nobody: should not happen; re-read
                RUN.meter.notes["private round waiting"] += 1
            status, fresh = self.call("GET", f"/rounds/{round_id}", "round view", key=False)
            if status != 200 or not fresh:
                RUN.meter.notes[f"round view {status}"] += 1
                return
            view = fresh
        RUN.meter.notes["round not finished in MAX_STEPS"] += 1

    def top_up(self) -> None:
        """The balance ran out: the operator credits the demo balance again (counted in the audit)."""
        self.call("POST", "/admin/credit", "credit",
                  {"player": self.name, "currency": self.table["currency"], "amount": DEMO_BALANCE},
                  token=RUN.token)


class Bare(FastHttpUser):
    """The same players against the bare endpoint: one JSON request after another, with the same think time."""

    wait_time = constant(0)
    network_timeout = 30.0
    connection_timeout = 30.0

    def on_start(self) -> None:
        self.headers = {"Authorization": f"Bearer {uuid.uuid4().hex}"}
        RUN.meter.signed_in += 1

    @locust.task
    def echo(self) -> None:
        if RUN.stopping:
            gevent.sleep(0.2)
            return
        pause()
        with self.client.request("POST", "/echo", name="echo", json={"action": "hit"}, catch_response=True,
                                 headers={**self.headers, "Idempotency-Key": uuid.uuid4().hex}) as response:
            RUN.meter.statuses[("echo", response.status_code or 0)] += 1


# ------------------------------------------------------------------ phases
def percentiles(entry: Any) -> dict[str, float]:
    return {f"p{int(q * 100)}": float(entry.get_response_time_percentile(q)) for q in (0.5, 0.95, 0.99)}


AFTER_FAULT_S = 2.0  # seconds measured at least after a fault is over


def measure(user: type[FastHttpUser], host: str, options: Options, server: Served,
            fault: tuple[float, Callable[[], None]] | None = None) -> dict[str, Any]:
    """Start the players, wait for every sign-in, measure ``duration`` seconds (``fault``: at that many seconds in,
    that call, such as :meth:`Served.crash`, and the window then lasts at least :data:`AFTER_FAULT_S` past the fault's
    end), then drain and stop."""
    RUN.meter = Meter()
    RUN.stopping = False
    RUN.fault_at = RUN.over_at = None
    RUN.counter = itertools.count()
    env = Environment(user_classes=[user], host=host)
    runner = env.create_local_runner()
    runner.start(options.players, spawn_rate=min(options.players, 100))
    deadline = time.monotonic() + options.warmup
    while RUN.meter.signed_in < options.players and time.monotonic() < deadline:
        gevent.sleep(0.1)
    signed_in = RUN.meter.signed_in
    env.stats.reset_all()
    RUN.meter.reset()
    load_before = os.getloadavg()
    cpu_server, cpu_self, started = server.cpu(), own_cpu(), time.perf_counter()
    switches = tree_switches(server.pid)
    faulting = gevent.spawn_later(*fault) if fault is not None else None
    gevent.sleep(options.duration)
    if faulting is not None:
        faulting.get(timeout=120)  # a server that did not come back ends the run here, saying why
        # The window runs on until play after the fault has had its time: a server slow to come back (5.4 s after a
        # crash 2 s into a 6 s window, on a loaded host) left no time to see a round finished after it.
        if RUN.over_at is not None:
            gevent.sleep(max(0.0, RUN.over_at + AFTER_FAULT_S - time.monotonic()))
    elapsed = time.perf_counter() - started
    cpu_server, cpu_self = server.cpu() - cpu_server, own_cpu() - cpu_self
    switches_after = tree_switches(server.pid)
    thread_cpus = tree_thread_cpus(server.pid)
    # A thread's switches are counted while it lives: a crash takes the killed threads' counts with them.
    switches = switches_after - switches if switches is not None and switches_after is not None and not \
        any(fault["kind"] in ("crash", "killed worker") for fault in server.faults) else None
    load_after = os.getloadavg()
    meter = RUN.meter
    kinds = {}
    http_requests = 0
    for (name, method), entry in sorted(env.stats.entries.items()):
        kinds[name] = {"method": method, "requests": entry.num_requests, "failures": entry.num_failures,
                       "per_s": entry.num_requests / elapsed, **percentiles(entry)}
        if method != "WS":
            http_requests += entry.num_requests
    statuses: Counter[int] = Counter()
    for (_, status), count in meter.statuses.items():
        statuses[status] += count
    figures = {
        "players": options.players, "signed_in": signed_in, "think_s": options.think, "seconds": elapsed,
        "requests": http_requests, "requests_per_s": http_requests / elapsed,
        "decisions_per_s": kinds.get("action", {}).get("requests", 0) / elapsed,
        "rounds": dict(meter.rounds), "rounds_per_s": sum(meter.rounds.values()) / elapsed,
        "kinds": kinds, "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "errors_5xx": sum(v for k, v in statuses.items() if k >= 500),
        "failed_requests": sum(v for k, v in statuses.items() if k == 0 or (k >= 400 and k not in (404, 409, 429))),
        "retried_503": meter.retried_503, "ws_events": meter.events, "notes": dict(meter.notes),
        "faults": server.faults, "cut_off_by_the_fault": meter.cut_off,
        "rounds_after_the_fault": meter.rounds_after_the_fault,
        "server_cpu_s": cpu_server, "server_cores": cpu_server / elapsed,
        "loadgen_cpu_s": cpu_self, "loadgen_cores": cpu_self / elapsed,
        "requests_per_server_cpu_s": http_requests / cpu_server if cpu_server else None,
        "server_switches_per_request": switches / http_requests if switches is not None and http_requests else None,
        "server_thread_cpus": {str(pid): cpus for pid, cpus in thread_cpus.items()},
        "loadavg_before": load_before, "loadavg_after": load_after,
    }
    # Let rounds in play finish (bounded), so the audit sees as few open rounds as the game allows.
    RUN.stopping = True
    deadline = time.monotonic() + options.drain
    while RUN.meter.active > 0 and time.monotonic() < deadline:
        gevent.sleep(0.2)
    figures["left_in_play_by_players"] = RUN.meter.active
    runner.quit()
    return figures


def bare_phase(options: Options, work: Path) -> dict[str, Any]:
    port = options.port + 1 if options.port else free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", PIN_ENV_VAR: "1" if options.pin_cpu else "0"}
    bare = Served([sys.executable, str(HERE / "bare.py"), "--port", str(port)], env, work / "bare.log", url)
    bare.start()
    try:
        return measure(Bare, url, options, bare)
    finally:
        bare.stop()


def server_command(options: Options, port: int, database: str, work: Path) -> list[str]:
    twentyone = shutil.which("twentyone", path=str(Path(sys.executable).parent)) or shutil.which("twentyone")
    base = [twentyone] if twentyone else [sys.executable, "-c", "from twentyone.cli.main import main; main()"]
    command = [*base, "serve", "--port", str(port), "--database", database, "--data-dir", str(work / "data")]
    if options.workers > 1:
        command += ["--workers", str(options.workers)]
    command.append("--pin-cpu" if options.pin_cpu else "--no-pin-cpu")  # whatever the environment says
    return command


def setup_tables(url: str, token: str, options: Options) -> None:
    """Shared tables with short timers (the load is in the play, not in waiting), and every table's chip."""
    import urllib.request

    def admin(path: str, body: dict[str, Any]) -> None:
        request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST", headers={
            "Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 201, answer.read()

    suffix = uuid.uuid4().hex[:6]
    shared = []
    for i in range(options.multiplayer_tables):
        table_id = f"load-mp{i + 1}-{suffix}"
        admin("/admin/tables", {"id": table_id, "name": f"Load multiplayer {i + 1}", "variant": "multiplayer",
                                "currency": "USD", "chips": [100, 500], "limits": {"main": [100, 10000]},
                                "seats": 7, "decision_timeout": 10, "betting_window": 1})
        shared += [("multiplayer", table_id)] * 7
    if options.power_players:
        table_id = f"load-power-{suffix}"
        admin("/admin/tables", {"id": table_id, "name": "Load power", "variant": "power", "currency": "EUR",
                                "chips": [100, 500], "limits": {"main": [100, 10000]}, "seats": 0,
                                "decision_timeout": 10, "betting_window": 2})
        shared += [("power", table_id)] * options.power_players
    with urllib.request.urlopen(url + "/tables", timeout=30) as answer:
        tables = json.loads(answer.read())["tables"]
    RUN.tables = {}
    for table in tables:
        low = table["limits"]["main"][0]
        chip = min((c for c in table["chips"] if c >= low), default=table["chips"][-1])
        RUN.tables[table["id"]] = {**table, "chip": chip}
    shared = shared[:options.players]
    private = [("private", PRIVATE_TABLES[i % len(PRIVATE_TABLES)]) for i in range(options.players - len(shared))]
    roles = shared + private
    random.Random(options.seed).shuffle(roles)
    RUN.roles = roles


def game_phase(options: Options, work: Path, database: str) -> tuple[dict[str, Any], dict[str, Any]]:
    port = options.port or free_port()
    url = f"http://127.0.0.1:{port}"
    RUN.token = uuid.uuid4().hex
    RUN.ws_url = f"ws://127.0.0.1:{port}"
    # Every simulated player's socket comes from this one machine: the limit on sockets per address is raised for them.
    env = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": RUN.token, "TWENTYONE_DEMO": "1", "PYTHONUNBUFFERED": "1",
           "TWENTYONE_SOCKETS_PER_ADDRESS": str(options.players + 100)}
    env.pop("TWENTYONE_DATABASE_URL", None)
    server = Served(server_command(options, port, database, work), env, work / "server.log", url)
    server.start()
    try:
        setup_tables(url, RUN.token, options)
        faults = [(options.crash_at, server.crash), (options.kill_worker_at, server.kill_worker),
                  (options.drop_connections_at, lambda: server.drop_connections(database))]
        fault = next(((at, call) for at, call in faults if at is not None), None)
        figures = measure(Guest, url, options, server, fault)
        figures["tables"] = Counter(kind for kind, _ in RUN.roles)
        figures["port"] = port
        audit_result = audit(database, url, RUN.token)
    finally:
        server.stop()
    figures["server_tracebacks"], tail = server.tracebacks()
    if figures["server_tracebacks"]:
        print(tail, file=sys.stderr)
    return figures, audit_result


# -------------------------------------------------------------------- audit
def audit(database: str, url: str, token: str) -> dict[str, Any]:
    """Reconcile every wallet, every round and the house to the cent, reading the database directly."""
    import urllib.request

    from sqlalchemy import create_engine, text

    problems: list[str] = []
    engine = create_engine(database)
    currency_of = {table_id: table["currency"] for table_id, table in RUN.tables.items()}
    with engine.connect() as db:
        unbalanced = db.execute(text("SELECT transfer_id, SUM(amount), COUNT(*) FROM ledger GROUP BY transfer_id "
                                     "HAVING SUM(amount) <> 0 OR COUNT(*) <> 2")).all()
        problems += [f"transfer {t} sums to {s} over {n} rows" for t, s, n in unbalanced[:20]]
        accounts = {row.id: (row.owner, row.currency) for row in db.execute(
            text("SELECT id, owner, currency FROM accounts"))}
        balance: Counter[int] = Counter()
        credits: Counter[int] = Counter()
        per_round_ledger: dict[int, list[int]] = {}
        for account_id, kind, round_id, amount in db.execute(text(
                "SELECT account_id, kind, round_id, SUM(amount) FROM ledger GROUP BY account_id, kind, round_id")):
            amount = int(amount)
            balance[account_id] += amount
            if kind in ("credit", "debit"):  # the operator's credits and debits (signed)
                credits[account_id] += amount
            if round_id is not None and accounts[account_id][0] != "house":
                entry = per_round_ledger.setdefault(round_id, [0, 0])
                entry[0 if kind == "stake" else 1] += -amount if kind == "stake" else amount
        rounds = {row.id: row for row in db.execute(text("SELECT id, table_id, status, settled_at FROM rounds"))}
        seats: dict[int, list[int]] = {}
        player_rounds: dict[tuple[str, str], list[int]] = {}
        for round_id, player_id, staked, returned in db.execute(text(
                "SELECT round_id, player_id, staked, returned FROM round_seats")):
            entry = seats.setdefault(round_id, [0, 0])
            entry[0] += int(staked)
            entry[1] += int(returned)
            currency = currency_of.get(rounds[round_id].table_id, "?")
            mine = player_rounds.setdefault((f"player:{player_id}", currency), [0, 0])
            mine[0] += int(staked)
            mine[1] += int(returned)
    engine.dispose()
    # Every player: ledger balance = credits − staked + returned, never below zero.
    players = 0
    for account_id, (owner, currency) in accounts.items():
        if owner == "house":
            continue
        players += 1
        staked, returned = player_rounds.get((owner, currency), [0, 0])
        expected = credits[account_id] - staked + returned
        if balance[account_id] != expected:
            problems.append(f"{owner} {currency}: ledger {balance[account_id]} != credits {credits[account_id]} "
                            f"- staked {staked} + returned {returned}")
        if balance[account_id] < 0:
            problems.append(f"{owner} {currency}: negative balance {balance[account_id]}")
    # Every round: its seats agree with its ledger rows; settled, void (refunded) or open with stakes counted.
    status_count: Counter[str] = Counter()
    open_stakes: Counter[str] = Counter()
    house_by_table: Counter[str] = Counter()
    for round_id, row in rounds.items():
        status_count[row.status] += 1
        staked, returned = seats.get(round_id, [0, 0])
        ledger_staked, ledger_returned = per_round_ledger.get(round_id, [0, 0])
        if (staked, returned) != (ledger_staked, ledger_returned):
            problems.append(f"round {round_id} ({row.status}): seats {staked}/{returned} != ledger "
                            f"{ledger_staked}/{ledger_returned}")
        if row.status == "void" and returned != staked:
            problems.append(f"round {round_id} void but {staked} staked and {returned} refunded")
        elif row.status in ("betting", "playing"):
            if returned:
                problems.append(f"round {round_id} {row.status} has paid {returned}")
            open_stakes[currency_of.get(row.table_id, "?")] += staked
        elif row.status == "settled":
            if row.settled_at is None:
                problems.append(f"round {round_id} settled without a time")
            house_by_table[row.table_id] += staked - returned
        elif row.status != "void":
            problems.append(f"round {round_id} has status {row.status!r}")
    # The house: −credits + settled rounds' result + open stakes, per currency; and the sum of every account is 0.
    house: dict[str, dict[str, int]] = {}
    for account_id, (owner, currency) in accounts.items():
        if owner == "house":
            house.setdefault(currency, {})["ledger"] = balance[account_id]
    for currency in {c for _, c in accounts.values()}:
        total = sum(balance[a] for a, (_, c) in accounts.items() if c == currency)
        if total != 0:
            problems.append(f"{currency}: accounts sum to {total}, not 0")
        expected = (-sum(credits[a] for a, (o, c) in accounts.items() if c == currency and o != "house")
                    + sum(v for t, v in house_by_table.items() if currency_of.get(t) == currency)
                    + open_stakes[currency])
        entry = house.setdefault(currency, {"ledger": 0})
        entry["expected"] = expected
        if entry["ledger"] != expected:
            problems.append(f"house {currency}: ledger {entry['ledger']} != expected {expected}")
    # The operator's report agrees with the rounds.
    request = urllib.request.Request(url + "/admin/report", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        report = json.loads(answer.read())["tables"]
    for line, entry in report.items():  # one line per table and currency: a table here plays in one
        table_id = entry.get("table_id", line)
        counted = sum(1 for row in rounds.values() if row.table_id == table_id)
        if entry["rounds"] != counted or entry["house_result"] != house_by_table.get(table_id, 0):
            problems.append(f"/admin/report {table_id}: {entry['rounds']} rounds, house {entry['house_result']}; "
                            f"database: {counted} rounds, house {house_by_table.get(table_id, 0)}")
    return {"ok": not problems, "problems": problems[:50], "problem_count": len(problems), "players": players,
            "rounds": dict(status_count), "open_stakes": dict(open_stakes), "house": house}


# ------------------------------------------------------------------- report
def show(title: str, figures: dict[str, Any]) -> None:
    print(f"\n== {title}: {figures['players']} players ({figures['signed_in']} signed in), think "
          f"{figures['think_s']:g} s, {figures['seconds']:.1f} s measured")
    print(f"   requests/s {figures['requests_per_s']:.0f}   server CPU {figures['server_cores']:.2f} cores "
          f"({figures['requests_per_server_cpu_s'] or 0:.0f} requests per server CPU-second)   "
          f"load generator {figures['loadgen_cores']:.2f} cores   load average "
          f"{figures['loadavg_before'][0]:.1f} -> {figures['loadavg_after'][0]:.1f}")
    if figures.get("server_switches_per_request") is not None:
        print(f"   server context switches per request {figures['server_switches_per_request']:.1f}")
    if figures.get("server_thread_cpus"):
        print("   CPUs the server's threads may use, by process: " + "; ".join(
            f"{pid}: {','.join(map(str, cpus))}" for pid, cpus in figures["server_thread_cpus"].items()))
    if "decisions_per_s" in figures and figures["kinds"].get("action"):
        print(f"   decisions/s {figures['decisions_per_s']:.0f}   rounds/s {figures['rounds_per_s']:.1f} "
              f"{figures['rounds']}   WebSocket events {figures['ws_events']}")
    print(f"   {'request':<12} {'count':>7} {'per s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'failed':>7}")
    for name, kind in figures["kinds"].items():
        if not kind["requests"]:
            continue  # sign-ins and WebSocket connections happen before the measured window
        print(f"   {name:<12} {kind['requests']:>7} {kind['per_s']:>7.1f} {kind['p50']:>7.0f} {kind['p95']:>7.0f} "
              f"{kind['p99']:>7.0f} {kind['failures']:>7}")
    print(f"   statuses {figures['statuses']}   5xx {figures['errors_5xx']}   503 retried {figures['retried_503']}"
          + (f"   notes {figures['notes']}" if figures["notes"] else ""))
    for fault in figures.get("faults", ()):
        print(f"   {fault_said(fault)}; {figures['cut_off_by_the_fault']} answers were the fault's (a lost "
              f"connection or a 503), sent again with their keys; {figures['rounds_after_the_fault']} rounds "
              "finished after it")


def fault_said(fault: dict[str, Any]) -> str:
    if fault["kind"] == "crash":
        return f"crashed (kill -9 of every server process) and answering again {fault['down_s']:.1f} s later"
    if fault["kind"] == "killed worker":
        return f"one worker killed (kill -9), another started {fault['replaced_s']:.1f} s later"
    return f"the database ended the server's {fault['ended']} connections"


def fresh_postgres(url: str) -> tuple[str, Any]:
    from sqlalchemy import create_engine, make_url, text

    name = f"twentyone_load_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    # The database replaced in the URL, not its last path segment: a URL may end in a query (?host=/tmp, the
    # server's Unix socket; ?sslmode=...).
    return make_url(url).set(database=name).render_as_string(hide_password=False), drop


def run_failed(game: dict[str, Any], check: dict[str, Any]) -> bool:
    """Whether a run failed: any 5xx, any failed request, any traceback in the server's log, or money that does not
    reconcile."""
    return bool(game["errors_5xx"] or game["failed_requests"] or game["server_tracebacks"] or not check["ok"])


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    random.seed(options.seed)
    RUN.think = options.think
    work = Path(tempfile.mkdtemp(prefix="twentyone-load-"))
    drop = None
    database = options.database or f"sqlite:///{work / 'load.db'}"
    if database.startswith("postgresql") and options.fresh:
        database, drop = fresh_postgres(database)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; database "
          f"{database.split('@')[-1]}; server processes {options.workers}"
          f"{', each asked to keep to a CPU of its own' if options.pin_cpu else ''}; work directory {work}")
    result: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "loadavg": os.getloadavg()},
                              "database": database.split("://")[0], "workers": options.workers,
                              "pin_cpu": options.pin_cpu}
    failed = True  # until the run says otherwise: a run that failed, or broke off, keeps what it left for a look
    try:
        if options.bare:
            result["bare"] = bare_phase(options, work)
            show("bare endpoint", result["bare"])
        result["game"], result["audit"] = game_phase(options, work, database)
        show("game", result["game"])
        failed = run_failed(result["game"], result["audit"])
    finally:
        if options.keep or failed:
            fresh_database = f" and the database {database.split('@')[-1]}" if drop is not None else ""
            print(f"kept: the work directory {work} (the server's log: server.log){fresh_database}")
        else:
            if drop is not None:
                drop()
            shutil.rmtree(work, ignore_errors=True)
    game, check = result["game"], result["audit"]
    print(f"\n== audit: {'every wallet, round and the house reconcile to the cent' if check['ok'] else 'FAILED'}"
          f" ({check['players']} player accounts, rounds {check['rounds']}, open stakes {check['open_stakes']})")
    for problem in check["problems"]:
        print(f"   {problem}")
    if "bare" in result:
        result["ratio"] = game["requests_per_s"] / result["bare"]["requests_per_s"]
        print(f"\n== headline: game {game['requests_per_s']:.0f} requests/s / bare "
              f"{result['bare']['requests_per_s']:.0f} requests/s = {result['ratio']:.2f} "
              "(target at saturation: 0.40 or more)")
    if options.think > 0 and game["kinds"].get("action"):
        print(f"   decision p99 {game['kinds']['action']['p99']:.0f} ms (target with ~1 s think time: under 50 ms)")
    result["ok"] = not failed
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=2, default=str))
    print(f"\n{'FAILED' if failed else 'OK'}: {game['errors_5xx']} 5xx, {game['failed_requests']} failed requests, "
          f"{game['server_tracebacks']} server tracebacks, audit {'ok' if check['ok'] else 'failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
