"""One Power Blackjack round with a crowd: N players (default 1,000) over loopback HTTP and WebSockets.

Starts ``twentyone serve`` on a fresh database, adds a power table with a long betting window,
then N guests each open the table's WebSocket, bet, join the round, and, once it is dealt,
decide (decline insurance under an Ace, then hit below 12, else stand), all at once. Players
move in lockstep: a player who hits waits for the table's event that the step is complete
(everyone has chosen, the common card is dealt), re-reads the round and decides again.
The crowd's requests go through ten HTTP clients of ten connections each (see ``LANE``).
Reports:

- the deal: how long closing the window took for N seats (one transaction);
- decisions: p50/p95/p99 latency and errors by status;
- settlement: the time from sending the last decision to each player's "settled" event (every
  player's result settled, and the event fanned out to every socket), p50/p99/max; the
  decision that settles is whichever the server takes last, which under a burst need not be
  the last sent, so its own time from sending to answer is reported too; and the fan-out
  alone: each socket's event after the first socket's, p50/p99, from the time the kernel
  stamped its arrival at the socket. The sockets are read by a process of their own
  (``--listener``), which also reports when it read each event (see ``listen_only``);
- the audit: every seat staked and returned once, the ledger sums to zero, and each
  player's balance equals the credit less their stake plus their return.

With ``--pages`` each player also reads the table as the web page does (``ui/web/table.js``): after
its DEAL, and on an event of the table, it re-reads ``GET /tables/{id}``, one read at a time and at
most one more queued, unless the page can apply the event itself (bets on the round it holds:
another player's, or its own once it has read itself into the round; the round itself, from
another player's first bets in it), while the round forms. In play each player reads the
table (not the round alone) where the crowd reads the round, and, finished at a step (no
decision left, no card coming), reads nothing until the next event but the step's; players
then hit below their own total, 12 to 17, so that some finish before others. It reports the
table reads while the crowd joined and in play. The joins' latency (bets and DEAL) is
reported in either case.

Run (loopback only; bounded in players and time):

    .venv/bin/python benchmarks/power_crowd.py [--players 1000] [--database URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import selectors
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri

TABLE = "power-crowd"
OPERATOR = "bench-operator-token-for-this-run"
IN_FLIGHT = 100  # requests the crowd keeps in flight at once
# Connections per HTTP client: httpx's pool looks at every connection it holds (a system call each) to place each
# request, so one pool of 100 connections cost this client more CPU than the server spent answering (its single
# core saturated, and the figures measured the client); ten pools of ten cost a tenth of that.
LANE = 10


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def page_takes_round(event: dict, me: int, held_round: int | None) -> bool:
    """Whether the page takes a round it does not hold from another player's first bets in it (``othersBets``)."""
    return (event.get("type") == "bets" and "seat_count" in event and "round" in event and event.get("player_id") != me
            and (held_round is None or held_round < event["round_id"]))


def page_reads_again(event: dict, me: int, held_round: int | None) -> bool:
    """Whether the web page re-reads the table on another player's ``event`` (``onmessage`` and ``othersBets`` in
    ``ui/web/table.js``) at once: every event but the hello, except bets on the round the page holds, or on a round it
    takes from the event, which it adds to that round itself. (Its own player's bets: see ``own_bets``.)

    >>> joined = {"type": "bets", "round_id": 7, "player_id": 2, "seat_count": 3}
    >>> page_reads_again(joined, 1, 7), page_reads_again(joined, 1, None), page_reads_again({"type": "round"}, 1, 7)
    (False, True, True)
    >>> page_reads_again({**joined, "round": {}}, 1, None), page_reads_again({"type": "bets", "round_id": 7}, 1, 7)
    (False, True)
    """
    if event.get("type") == "hello" or page_takes_round(event, me, held_round):
        return False
    return not (event.get("type") == "bets" and "seat_count" in event and event.get("round_id") == held_round)


NOTHING_TO_MEASURE = 3  # exit status: the round settled at the deal (a dealer's blackjack); run it again


async def main(players: int, database: str | None, timeout: float, pages: bool = False,
               figures: Path | None = None) -> int:
    data = Path(tempfile.mkdtemp(prefix="twentyone-crowd-"))
    port = free_port()
    url = database or f"sqlite:///{data / 'crowd.db'}"
    env = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": OPERATOR, "TWENTYONE_GUESTS_PER_MINUTE": str(players + 100),
           "TWENTYONE_SOCKETS_PER_ADDRESS": str(players + 100)}  # the crowd's sockets all come from this machine
    server = subprocess.Popen([sys.executable, "-m", "twentyone.cli.main", "serve", "--port", str(port),
                               "--database", url, "--data-dir", str(data)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=LANE)) as http, \
                AsyncExitStack() as stack:
            lanes = [await stack.enter_async_context(
                httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_connections=LANE)))
                for _ in range(IN_FLIGHT // LANE)]
            for _ in range(200):
                try:
                    if (await http.get("/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            admin = {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": uuid.uuid4().hex}
            created = await http.post("/admin/tables", headers=admin, json={
                "id": TABLE, "name": "Power crowd", "variant": "power", "currency": "EUR", "chips": [100, 500],
                "limits": {"main": [100, 10000]}, "seats": 0, "betting_window": 3600, "decision_timeout": 3600})
            assert created.status_code == 201, created.text
            return await crowd(http, lanes, base, players, timeout, pages, figures)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


async def crowd(http: httpx.AsyncClient, lanes: list[httpx.AsyncClient], base: str, players: int,
                timeout: float, pages: bool = False, figures: Path | None = None) -> int:
    statuses: dict[int, int] = {}
    latencies: list[float] = []
    join_latencies: list[float] = []
    table_reads = 0

    def lane(token: str) -> httpx.AsyncClient:
        return lanes[hash(token) % len(lanes)]

    async def call(method: str, path: str, token: str, body: object = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
        for _ in range(20):  # a 503 is "busy, nothing changed": retry the same request, as a client would
            start = time.perf_counter()
            response = await lane(token).request(method, path, headers=headers, json=body)
            if path.endswith("/actions"):
                latencies.append(time.perf_counter() - start)
            elif method == "POST" and path.endswith(("/bets", "/deal")):
                join_latencies.append(time.perf_counter() - start)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            if response.status_code != 503:
                return response
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
        return response

    gate = asyncio.Semaphore(IN_FLIGHT)

    async def sign_in(number: int) -> str:
        async with gate:
            return str((await lanes[number % len(lanes)].post("/auth/guest")).json()["token"])

    tokens = await asyncio.gather(*(sign_in(number) for number in range(players)))
    print(f"{players} guests signed in", flush=True)
    ids = {token: (await lane(token).get("/me", headers={"Authorization": f"Bearer {token}"})).json()["id"]
           for token in tokens} if pages else {}
    held: dict[str, int | None] = dict.fromkeys(tokens)  # the round each page holds (its last table read)
    seated: set[str] = set()  # pages whose round shows their own seat
    taken: set[int] = set()  # rounds the pages took from an event
    checks: list[asyncio.Task[None]] = []
    forming = True  # pages read as the page does until the deal; in play the crowd's own reads of the round stand in
    reading: dict[str, asyncio.Task[None] | None] = dict.fromkeys(tokens)
    queued: set[str] = set()

    async def read_table(token: str) -> None:
        """As refreshSoon: one read at a time; events during it ask for one more."""
        nonlocal table_reads
        while True:
            queued.discard(token)
            answer = await lane(token).get(f"/tables/{TABLE}", headers={"Authorization": f"Bearer {token}"})
            table_reads += 1
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            if answer.status_code == 200:
                current = answer.json()["round"]
                if current or held[token] not in taken:  # a round taken from an event outlives an older read
                    held[token] = current["id"] if current else None
                (seated.add if current and "me" in current else seated.discard)(token)
            if token not in queued:
                reading[token] = None
                return

    dealt = {token: asyncio.Event() for token in tokens}  # the page's DEAL was answered

    def on_event(token: str, event: dict) -> None:
        if not pages or not forming:
            return
        if event.get("type") == "bets" and "seat_count" in event and event.get("player_id") == ids[token]:
            checks.append(asyncio.create_task(own_bets(token)))
        elif page_takes_round(event, ids[token], held[token]):
            held[token] = event["round_id"]
            taken.add(event["round_id"])
        elif page_reads_again(event, ids[token], held[token]):
            read_soon(token)

    async def own_bets(token: str) -> None:
        """The page's own bets: after its DEAL and the read that follows it, a read only if it still lacks them."""
        await dealt[token].wait()
        while (task := reading[token]) is not None:
            await task
        if token not in seated:
            read_soon(token)

    def read_soon(token: str) -> None:
        if reading[token] is None:
            reading[token] = asyncio.create_task(read_table(token))
        else:
            queued.add(token)

    settled_at: dict[str, float] = {}
    moved = {token: asyncio.Event() for token in tokens}  # set by each round event: re-read the round
    last_round_event: dict[str, dict] = {token: {} for token in tokens}
    # The sockets are read by a process of their own (``listen_only``), which times each event by the kernel's stamp of
    # its arrival. Read in this process, the settled events waited behind the HTTP clients' work on the re-reads those
    # very events set off: the server had sent all 1,000 within 63 ms of the settlement, and this process took 247 ms
    # to read them.
    listener = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--listener", base.replace("http", "ws"), *(["--pages"] if pages else []),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 22)
    assert listener.stdin is not None and listener.stdout is not None
    listener.stdin.write("\n".join(tokens).encode())
    await listener.stdin.drain()
    listener.stdin.close()
    if await asyncio.wait_for(listener.stdout.readline(), timeout) != b"ready\n":
        raise RuntimeError("the listener did not open the sockets")

    settled_read: dict[str, float] = {}  # when the listener read each settled event (its own delay included)
    kernel_stamped = 0  # settled events whose arrival the kernel stamped (else: when the listener read them)

    async def pump(stream: asyncio.StreamReader) -> None:
        """The listener's events, as each socket received them: ``index stamp event read``, one a line."""
        nonlocal kernel_stamped
        while line := await stream.readline():
            index, stamp, rest = line.decode().split(" ", 2)
            message, read = rest.rsplit(" ", 1)
            token, event = tokens[int(index)], json.loads(message)
            on_event(token, event)
            if event.get("type") == "round":
                last_round_event[token] = event
                moved[token].set()
                if event.get("status") == "settled":
                    settled_read[token] = float(read)
                    settled_at[token] = settled_read[token] if stamp == "nan" else float(stamp)
                    kernel_stamped += stamp != "nan"

    listening = asyncio.create_task(pump(listener.stdout))
    print(f"{players} sockets open", flush=True)
    balances = {}

    async def join(token: str) -> None:
        async with gate:
            balances[token] = (await call("GET", "/me", token)).json()["balances"]["EUR"]
            await call("POST", f"/tables/{TABLE}/bets", token, {"spot": 1, "type": "main", "chip": 100})
            await call("POST", f"/tables/{TABLE}/deal", token)
        if pages:  # the page reads the table after its DEAL's answer
            read_soon(token)
            dealt[token].set()

    joins_started = time.perf_counter()
    await asyncio.gather(*(join(token) for token in tokens))
    joins_seconds = time.perf_counter() - joins_started
    print(f"{players} players joined in {joins_seconds:.2f} s (bets and DEAL p50 "
          f"{percentile(join_latencies, .5) * 1000:.0f} ms, p99 {percentile(join_latencies, .99) * 1000:.0f} ms)"
          + (f"; the pages read the table {table_reads} times meanwhile" if pages else ""), flush=True)
    forming = False
    close_started = time.perf_counter()
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    round_id = (await http.get(f"/tables/{TABLE}", headers={"Authorization": f"Bearer {tokens[0]}"})
                ).json()["round"]["id"]
    # The operator closes the window now rather than waiting an hour: the same call the timer makes.
    closed = await http.post(f"/admin/tables/{TABLE}/close-betting", headers={**operator,
                                                                             "Idempotency-Key": "close"})
    assert closed.status_code == 200, closed.text
    deal_seconds = time.perf_counter() - close_started

    reads_in_play = 0
    settling_sent = settling_answered = 0.0  # when the decision that settled the round was sent, answered
    last_sent = 0.0  # when the last decision was sent (the one that settles may have been sent earlier)
    refusals: list[str] = []

    async def read_round(token: str) -> dict:
        """The round as the player reads it: the round itself, or, as the web page does, the table around it."""
        nonlocal reads_in_play
        if not pages:
            read = await call("GET", f"/rounds/{round_id}", token)
            if read.status_code != 200:  # not in the round everyone joined: the server split the crowd, or failed
                raise SystemExit(f"a player's read of round {round_id} answered {read.status_code}: {read.text}")
            return dict(read.json())
        reads_in_play += 1
        return dict((await call("GET", f"/tables/{TABLE}", token)).json()["round"] or {"status": "settled"})

    def finished_at_step(view: dict, token: str) -> bool:
        """As ``finishedStep`` in table.js: a step told to a player with no decision left and no card coming."""
        event = last_round_event[token]
        return (pages and event.get("status") == "playing" and "deadline" in event and view["others_withheld"]
                and not view["legal_actions"] and not view["drawing"])

    async def decide(token: str, index: int) -> None:
        nonlocal settling_sent, settling_answered, last_sent
        # With pages, players choose differently (each hits below its own total, 12 to 17), so some finish first.
        limit = 12 + index % 6 if pages else 12
        view = None
        for _ in range(24):
            if view is None:
                moved[token].clear()  # before the read: an event that comes after it wakes the wait below
                async with gate:
                    view = await read_round(token)
            if view["status"] != "playing":
                return
            if not view["legal_actions"]:  # waiting for the card chosen, or the others: the next event says
                await asyncio.wait_for(moved[token].wait(), timeout)
                while finished_at_step(view, token):  # the page takes the step's clock and reads nothing
                    moved[token].clear()
                    await asyncio.wait_for(moved[token].wait(), timeout)
                view = None
                continue
            decision = view["decision"]  # with legal actions, the viewer's own: its hand, not another's
            if decision["kind"] == "play":
                total = next(h["total"] for h in view["hands"] if (h["player_id"], h["seat"], h["hand"]) ==
                             (decision["player_id"], decision["seat"], decision["hand"]))
                action = "hit" if total < limit else "stand"
            else:  # an Ace up: insurance (or even money) is offered first, and declined
                action = next(answer for answer in view["legal_actions"] if answer.startswith("no-"))
            moved[token].clear()  # the answer is the round as of this decision; any event after it wakes us
            async with gate:
                sent = last_sent = time.perf_counter()
                response = await call("POST", f"/rounds/{round_id}/actions", token, {"action": action})
            if response.status_code != 200:  # counted in the statuses; read the round again
                refusals.append(response.json().get("detail", ""))
                view = None
                continue
            view = response.json()
            if view.get("status") == "settled":
                settling_sent, settling_answered = sent, time.perf_counter()

    started = time.perf_counter()
    await asyncio.gather(*(decide(token, index) for index, token in enumerate(tokens)))
    decisions_seconds = time.perf_counter() - started
    if not latencies:  # the shoe is random: a dealer's blackjack settles the round at the deal
        print("the round settled at the deal (a dealer's blackjack): nothing to measure; run it again")
        listener.kill()
        return NOTHING_TO_MEASURE
    try:  # the listener leaves once every socket has had its settled event
        await asyncio.wait_for(asyncio.gather(listener.wait(), listening), timeout)
    except TimeoutError:
        listener.kill()
    lags = [settled_at[token] - last_sent for token in tokens if token in settled_at]
    first = min(settled_at.values(), default=0.0)
    fan_out = [settled_at[token] - first for token in tokens if token in settled_at]
    first_read = min(settled_read.values(), default=0.0)
    fan_out_read = [read - first_read for read in settled_read.values()]

    audit_ok = True
    report = (await http.get("/admin/report", headers=operator)).json()["tables"][TABLE]
    for token in tokens:
        view = (await http.get(f"/rounds/{round_id}", headers={"Authorization": f"Bearer {token}"})).json()
        now = (await http.get("/me", headers={"Authorization": f"Bearer {token}"})).json()["balances"]["EUR"]
        if now != balances[token] - view["me"]["staked"] + view["me"]["returned"]:
            audit_ok = False
    print(f"players {players}: deal of {players} seats {deal_seconds * 1000:.0f} ms; "
          f"decisions {len(latencies)} in {decisions_seconds:.2f} s "
          f"(p50 {percentile(latencies, .5) * 1000:.1f} ms, p95 {percentile(latencies, .95) * 1000:.1f} ms, "
          f"p99 {percentile(latencies, .99) * 1000:.1f} ms)")
    print(f"settled events received by {len(lags)}/{players} sockets; after the last decision was sent "
          f"(each player's result settled and sent) p50 {percentile(lags, .5) * 1000:.0f} ms, "
          f"p99 {percentile(lags, .99) * 1000:.0f} ms, "
          f"max {max(lags, default=float('nan')) * 1000:.0f} ms")
    print(f"the settling decision (the one the server took last, which settles all {players} in its transaction) "
          f"was sent {(last_sent - settling_sent) * 1000:.0f} ms before the last decision and answered "
          f"{(settling_answered - settling_sent) * 1000:.0f} ms after it was sent; the first settled event arrived "
          f"{(first - settling_sent) * 1000:.0f} ms after it was sent")
    print(f"fan-out: each socket's settled event after the first socket's, as the kernel stamped its arrival, p50 "
          f"{percentile(fan_out, .5) * 1000:.0f} ms, p99 {percentile(fan_out, .99) * 1000:.0f} ms; as the listener "
          f"read it (one process reading all {players} sockets, on a machine the server and the crowd keep busy), "
          f"p50 {percentile(fan_out_read, .5) * 1000:.0f} ms, p99 {percentile(fan_out_read, .99) * 1000:.0f} ms")
    print(f"statuses {dict(sorted(statuses.items()))}; rounds {report['rounds']}, staked {report['staked']}, "
          f"returned {report['returned']}; "
          f"every wallet reconciled: {audit_ok}; mean decision {statistics.fmean(latencies) * 1000:.1f} ms")
    if pages:
        print(f"in play the pages read the table {reads_in_play} times (players hit below 12 to 17: some finish "
              f"before others, and a finished page reads nothing at a step)")
    if refusals:
        print(f"decisions refused: {len(refusals)}, e.g. {refusals[0]!r}")
    if figures:
        figures.write_text(json.dumps({
            "players": players, "sockets_settled": len(lags), "kernel_stamped": kernel_stamped,
            "stamped_after_read": sum(settled_at[token] > settled_read[token] for token in settled_at),
            "fan_out_p50_s": percentile(fan_out, .5), "fan_out_p99_s": percentile(fan_out, .99),
            "fan_out_read_p99_s": percentile(fan_out_read, .99), "settled_after_last_decision_p99_s":
            percentile(lags, .99), "decisions": len(latencies), "statuses": statuses, "audit_ok": audit_ok}))
    return 0 if audit_ok and not any(code >= 500 for code in statuses) and len(lags) == players else 1


SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h): stamp each received packet with the kernel's clock
RECEIVED_AT = struct.Struct("@qq")  # struct timespec on a 64-bit Linux: seconds, nanoseconds


def listen_only(ws_base: str, pages: bool) -> None:
    """``--listener``: open a socket for each token on stdin, then write each event it receives to stdout as ``index
    stamp event read``. Only round events are passed on, or, with ``--pages``, every event (the pages act on the
    others too).

    ``stamp`` is when the event's bytes reached the socket, as the kernel stamped them (``SO_TIMESTAMPNS``), put on
    ``time.perf_counter()``'s clock (the system's monotonic clock, which the crowd's process shares). This process is
    one of three on the machine's two cores at a settlement (the server sends 1,000 events, the crowd sends 1,000
    re-reads); the time it then takes to get to each socket is its own, not the server's, and not what 1,000 players'
    own machines would see. It is reported too, as ``read`` (``stamp`` is ``nan`` where the kernel gave none). A read
    that takes several packets carries the stamp of the last (Linux's TCP keeps the latest), which for the last event
    it holds is its own. On loopback the kernel stamps a packet as the server's send hands it over, so ``stamp`` is
    the server's send as the kernel saw it: the fan-out without any client's delay.

    The sockets are websockets' sans-I/O client over a selector, not its asyncio client: ``recvmsg`` is what carries
    the kernel's stamp.
    """
    tokens = sys.stdin.read().split()
    out = sys.stdout
    host, port = ws_base.removeprefix("ws://").split(":")
    selector = selectors.DefaultSelector()
    pending = len(tokens)  # sockets not yet settled
    for index, token in enumerate(tokens):
        connection = socket.create_connection((host, int(port)))
        connection.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        protocol = ClientProtocol(parse_uri(f"{ws_base}/ws/tables/{TABLE}?token={token}"))
        protocol.send_request(protocol.connect())
        connection.sendall(b"".join(protocol.data_to_send()))
        selector.register(connection, selectors.EVENT_READ, (index, protocol, connection))
    hellos = 0
    while pending:
        for key, _ in selector.select(timeout=60):
            index, protocol, connection = key.data
            try:
                data, ancillary, _, _ = connection.recvmsg(1 << 16, socket.CMSG_SPACE(RECEIVED_AT.size))
            except OSError:  # reset by the server: as a close (the crowd counts the socket as not settled)
                data, ancillary = b"", []
            read = time.perf_counter()
            # The kernel stamps on the wall clock, which is taken again at each read: an offset from the start drifts
            # as the wall clock is slewed (a VM's is, by milliseconds a minute), and a stamp then seemed to come
            # after its own read. Within one read's offset a stamp is never later than its read.
            clock_offset = time.time() - read
            stamp = math.nan  # the kernel gave none
            for level, kind, value in ancillary:
                if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
                    seconds, nanoseconds = RECEIVED_AT.unpack(value)
                    stamp = seconds + nanoseconds / 1e9 - clock_offset
            if data:
                protocol.receive_data(data)
            else:  # the server closed the socket
                protocol.receive_eof()
            done = not data
            for received in protocol.events_received():
                if not isinstance(received, Frame) or received.opcode != Opcode.TEXT:
                    continue  # the handshake's response, pings (answered by the protocol) and the close
                text = bytes(received.data).decode()
                event = json.loads(text)
                if event.get("type") == "hello":
                    hellos += 1
                    if hellos == len(tokens):
                        out.write("ready\n")
                        out.flush()
                elif pages or event.get("type") == "round":
                    out.write(f"{index} {stamp!r} {text} {read!r}\n")
                done = done or (event.get("type") == "round" and event.get("status") == "settled")
            if protocol.handshake_exc is not None:
                sys.exit(f"socket {index}: the server refused the WebSocket ({protocol.handshake_exc})")
            if (outgoing := protocol.data_to_send()) and not done:  # pongs
                with contextlib.suppress(OSError):  # the server went: its EOF comes next
                    connection.sendall(b"".join(outgoing))
            if done:
                selector.unregister(connection)
                connection.close()
                pending -= 1
        out.flush()  # once per turn of the loop, not once per event


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--database", help="a PostgreSQL URL; default: SQLite in a temporary folder")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds any phase may take")
    parser.add_argument("--pages", action="store_true", help="players also re-read the table as the web page does")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--listener", metavar="WS_BASE", help=argparse.SUPPRESS)  # the sockets' own process
    options = parser.parse_args()
    if options.listener:
        listen_only(options.listener, options.pages)
        sys.exit(0)
    sys.exit(asyncio.run(main(options.players, options.database, options.timeout, options.pages, options.json)))
