"""The HTTP and WebSocket API (FastAPI). ``create_app`` wires settings, database, wallet and timers.

Every error is ``{"detail": "One sentence."}`` with its status code (plus
``legal_actions`` on a refused decision). Requests that change state take an
``Idempotency-Key`` header; a retry with the same key gets the first answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from importlib import resources
from typing import Annotated, Any

from anyio import CapacityLimiter, to_thread
from fastapi import Depends, FastAPI, Header, Query, Request, WebSocket, WebSocketDisconnect
from fastapi import Path as PathParam
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic_core import to_json
from sqlalchemy import event
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from twentyone.core.shoe import RandomBits
from twentyone.server.accounts import EASED_LATER, session_id
from twentyone.server.cluster import AdvisoryOwnership, PostgresBroadcaster, is_postgres
from twentyone.server.config import Settings, TableSpec
from twentyone.server.context import Busy, Caller, ServiceError
from twentyone.server.db import Database, migrate, worker_threads
from twentyone.server.direct import READING
from twentyone.server.downtime import BEAT_SECONDS
from twentyone.server.events import DROPPED_CODE
from twentyone.server.guards import (
    BodyLimit,
    HashingGate,
    RateLimiter,
    SecurityHeaders,
    SocketLimits,
    bad_token_limiter,
    document_errors,
)
from twentyone.server.readiness import RETRY_AFTER, Readiness
from twentyone.server.rounds import close_answer
from twentyone.server.service import GameService
from twentyone.server.shapes import (
    MAX_ID,
    BalanceChange,
    BetPlacement,
    ChipChoice,
    Credentials,
    Decision,
    HistoryQuery,
    LimitsUpdate,
    LookedUp,
    Registration,
    ReportQuery,
    RoundsQuery,
    SettingsUpdate,
    SignOut,
    TableCreate,
    WalletCallsQuery,
)
from twentyone.server.store import KEY_MALFORMED
from twentyone.server.tables import table_json
from twentyone.server.wallet import OperatorWallet, record_wallet_mode, wallet_name

log = logging.getLogger("twentyone.server")
NOT_JSON = "The body is not valid JSON (UTF-8)."


class Answer(JSONResponse):
    """A JSON answer encoded by pydantic-core (Rust): the same compact bytes as Starlette's, four times faster.

    Every state-changing request answers with a round or slip view of 1-20 KB; under load the
    standard library's encoder was a tenth of the event loop's time.

    >>> Answer({"id": 7, "legal_actions": ["hit", "stand"]}).body
    b'{"id":7,"legal_actions":["hit","stand"]}'
    """

    def render(self, content: Any) -> bytes:
        return to_json(content)


# An unexpected error's answer (:class:`Unexpected`): whether the request had committed anything when it failed.
UNEXPECTED = "Internal error: it is logged; nothing was changed by this request."
UNEXPECTED_AFTER_A_COMMIT = ("Internal error: it is logged. Part of this request may have been applied: read what it "
                             "would change before sending it again.")
# The request being served: a cell that a commit of one of its write transactions fills (_note_a_commit). A list, not
# a flag: its work runs in worker threads, each in a copy of the request's context, which sees the same list.
_COMMITS: ContextVar[list[bool] | None] = ContextVar("twentyone_commits", default=None)


@event.listens_for(Session, "after_commit")
def _note_a_commit(session: Session) -> None:
    """A write transaction of the request being served committed (a read's session ends with a COMMIT too, and a
    savepoint released is not the transaction's end: neither counts)."""
    commits = _COMMITS.get()
    if commits is not None and not session.info.get(READING) and not session.in_nested_transaction():
        commits.append(True)


class Unexpected:
    """An error no handler answers (a bug) is answered ``{"detail": ...}`` with status 500, as JSON like every other
    error, and logged with its traceback; the connection stays open. The detail says nothing was changed only where
    no write transaction of the request committed (a failure after its commit, while the answer was made, is
    answered :data:`UNEXPECTED_AFTER_A_COMMIT`).

    Before, Starlette's last resort answered ``Internal Server Error`` in plain text and raised the error on to
    uvicorn, which closed the connection (found by an integrator's trial: a wallet's balance of ``"abc"``). An
    exception handler for ``Exception`` would not do: Starlette calls it from the same last resort, which raises the
    error on all the same. Innermost of the middleware, so that the answer carries the security headers.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        commits: list[bool] = []
        serving = _COMMITS.set(commits)

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            if started:  # the answer is on its way: nothing else can be said on this connection
                raise
            log.exception("unexpected error answering %s %s%s", scope["method"], scope["path"],
                          " (after a commit)" if commits else "")
            detail = UNEXPECTED_AFTER_A_COMMIT if commits else UNEXPECTED
            await Answer({"detail": detail}, status_code=500)(scope, receive, send)
        finally:
            _COMMITS.reset(serving)


def freeze_startup_objects() -> None:
    """Take what start-up built (modules, tables, routes: about 120,000 objects) out of the cyclic GC's sight.

    A full collection walks every tracked object, and with these in view it took 45-50 ms, during
    which no request moved: under load that pause was the tail of the latency. Frozen, the same
    collection takes about 2 ms. Called once by ``serve`` (and each worker) just before serving;
    not by :func:`create_app`, which tests call hundreds of times in one process.
    """
    gc.collect()
    gc.freeze()


SIGNED_OUT_CODE = 4401  # a WebSocket closed for its sign-in: refused, ended (POST /auth/logout) or expired
TIMER_THREADS = 8  # tables' timers (and the wallet's retries) run at once, in threads apart from the requests'
SOCKET_RECHECK_SECONDS = 60.0  # an open socket asks whether its sign-in still holds, this often (and when opened)
TOO_MANY_SOCKETS_CODE = 4429  # a WebSocket past its player's or its address's limit (guards.SocketLimits)
MAX_BODY = 64 * 1024  # bytes: the largest request any endpoint needs is a table definition
# A player's decision is theirs, or their timer's (recorded as ``source: timeout``). The operator's token took any
# decision in any round, doubles spending the player's money included, recorded as the player's own (found by an
# operator's trial): the service's act lets its operator caller act for whoever is awaited, which the timer needs.
OPERATOR_DECIDES_NOT = ("The operator takes no player's decision: each is the player's, or their timer's when their "
                        "time runs out.")


async def given_once(request: Request) -> None:
    """A query parameter given twice (``?since=A&since=B``) is a 422 naming it. A query model takes one value of each
    parameter, and took the last one in silence (found by an operator trial); one it does not take at all is the
    model's 422 (``FORBID_EXTRA``). Every endpoint with a query model takes this (:data:`GivenOnce`), after the
    caller's sign-in is checked, before the model reads the values."""
    if not request.url.query:
        return
    names = [name for name, _ in request.query_params.multi_items()]
    for name in dict.fromkeys(names):
        if (count := names.count(name)) > 1:
            raise ServiceError(422, f"{name}: Given {count} times; a parameter is given once.")


GivenOnce = Annotated[None, Depends(given_once)]

# What a client may send as "no body" to an endpoint that takes none: nothing, or JSON's empty object or null.
NO_BODY = frozenset({b"", b"{}", b"null"})


async def no_body(request: Request) -> None:
    """An endpoint that takes no body refuses one (422), as one with a body model refuses a field it does not take:
    before, ``POST /tables/{id}/deal`` with ``{"bets": [...]}`` dealt the slip and dropped the body in silence (an
    attacker's trial). Every body-less write takes this (:data:`NoBody`)."""
    if b"".join((await request.body()).split()) not in NO_BODY:
        raise ServiceError(422, "This request takes no body: send none.")


NoBody = Annotated[None, Depends(no_body)]


def client_address(request: Request) -> str:
    """The client's address, as the limits on new accounts and on wrong passwords count it."""
    return request.client.host if request.client else "unknown"


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header. The scheme's name is read in any case, as HTTP defines it (RFC 9110):
    ``bearer TOKEN`` was a 401 (found by an operator's trial). A bare token, without a scheme, is taken as ever.

    >>> bearer_token("Bearer abc"), bearer_token("bearer abc"), bearer_token("BEARER  abc "), bearer_token("abc")
    ('abc', 'abc', 'abc', 'abc')
    >>> bearer_token(None) is None
    True
    """
    if not authorization:
        return None
    scheme, _, credentials = authorization.strip().partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else authorization.strip()


async def caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Caller:
    """The signed-in player (or the operator) from the bearer token: from memory when the token is known,
    else looked up in a worker thread (a sync dependency would cost every request a thread hop)."""
    token = bearer_token(authorization)
    service: GameService = request.app.state.service
    known = None if service.accounts.is_operator_token(token) else service.accounts.known(token)
    if known is not None:
        return known
    return await run_in_threadpool(token_caller, service, request.app.state.bad_tokens, client_address(request), token)


def token_caller(service: GameService, bad_tokens: RateLimiter, address: str, token: str | None) -> Caller:
    """The caller of ``token`` (:meth:`GameService.authenticate`), with a limit on guesses
    (:func:`~twentyone.server.guards.bad_token_limiter`): each token this server does not take (a 401) counts against
    ``address``, and past the limit every token from there is looked up as a player's, the operator's too, and any
    but a player's is 429 after that same lookup. Before, a guesser of a weak operator token had as many tries as the
    server answered (an operator's trial: 30 wrong ones in a row, each a 401), at any endpoint, the lobby's read and
    the table's WebSocket included."""
    if not token:  # no guess: told to sign in
        return service.authenticate(token)
    # A place in the minute's count is taken before the token is looked up, and given back if it is taken: guesses
    # sent at once get 30 answers at most. Counted after the lookup, a burst at 29 had several answered (review).
    if not bad_tokens.count(address):
        try:
            return service.authenticate(token, operator=False)
        except ServiceError as error:
            if error.status != 401:
                raise
            raise bad_tokens.refused() from None
    try:
        caller = service.authenticate(token)
    except ServiceError as error:
        if error.status != 401:  # not a wrong token (storage busy, say): no count
            bad_tokens.uncount(address)
        raise
    bad_tokens.uncount(address)
    return caller


Me = Annotated[Caller, Depends(caller)]


async def operator(who: Me) -> Caller:
    """The caller of an ``/admin`` endpoint, who must be the operator: a 403 before the request's body or query is
    read. Before, a player's malformed request was told what the body lacked (a 422) rather than that the endpoint is
    not theirs (found by a trial of an operator). The service checks again."""
    if not who.is_operator:
        raise ServiceError(403, "Only the operator can do this.")
    return who


Operator = Annotated[Caller, Depends(operator)]
Key = Annotated[str | None, Header(alias="Idempotency-Key", max_length=128)]
RoundId = Annotated[int, PathParam(ge=1, le=MAX_ID)]
WEB = resources.files("twentyone.ui") / "web"  # the web table's static files, wherever the package is installed


def create_app(settings: Settings, operator_wallet: OperatorWallet | None = None,
               clock: Callable[[], datetime] | None = None, rng: RandomBits | None = None,
               timers: bool = True, cluster: bool | None = None, wallet_spec: str | None = None) -> FastAPI:
    """The application; migrations run here, timers run while it serves.

    ``cluster`` (default: on for PostgreSQL) makes the process one of several on
    the database: timers owned by advisory lock, events bridged by LISTEN/NOTIFY
    (:mod:`~twentyone.server.cluster`). SQLite is one process: everything is local.

    Where the balances live (the built-in ledger, or ``operator_wallet``, named by ``wallet_spec`` or else its
    class) is recorded in the database where it changed since the last start (:func:`record_wallet_mode`), for the
    command line's credits and debits to go by.
    """
    migrate(settings.database_url)
    threads = worker_threads(settings.database_url, remote_wallet=operator_wallet is not None)
    db = Database(settings.database_url, threads, durable=operator_wallet is not None)
    record_wallet_mode(db.transaction, None if operator_wallet is None else wallet_spec or wallet_name(operator_wallet),
                       clock() if clock is not None else datetime.now(UTC))
    kwargs: dict[str, Any] = {}
    if clock is not None:
        kwargs["clock"] = clock
    if cluster is None:
        cluster = is_postgres(settings.database_url)
    if cluster:
        kwargs["events"] = PostgresBroadcaster(settings.database_url)
        kwargs["ownership"] = AdvisoryOwnership(settings.database_url)
    service = GameService(db, settings, operator_wallet, rng=rng, **kwargs)
    # Served by every process on the database:
    service.registry.publish(settings.tables, settings.tables_source, settings.tables_given)
    if retired := service.shoes.retire_unfit(service.store, service.registry.all()):
        log.info("finished %d shoes no table deals from as configured now (revealed for /verify)", retired)
    if isinstance(service.events, PostgresBroadcaster):
        service.events.on_tables_changed = service.reload_tables
    readiness = Readiness(read=service.store.answers, timers_answering=lambda: service.ownership.answering,
                          events_connected=service.events.connected,
                          tick_seconds=settings.tick_seconds if timers else None)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = threads
        await run_in_threadpool(service.events.start)
        db.start_checkpoints()
        task = asyncio.create_task(_timers(service, readiness)) if timers else None
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await run_in_threadpool(service.events.stop)
        service.ownership.close()  # a clean stop hands this process's tables to the others at once
        service.wallet.close()  # an operator's wallet: this process's debit journal, deleted if all is resolved
        await run_in_threadpool(db.close)

    app = FastAPI(title="twentyone", version="0.1.0", lifespan=lifespan,
                  description="Blackjack tables, wallet and history. Amounts are integers in minor units.")
    app.state.service = service
    app.state.readiness = readiness  # its checks, for tests to look into
    app.add_middleware(Unexpected)  # innermost: its 500 passes through the others
    app.add_middleware(BodyLimit, limit=MAX_BODY)
    app.add_middleware(SecurityHeaders)  # outermost: a 413 from BodyLimit carries them too
    # This process's count comes first: a flood it has seen alone is refused without a write transaction.
    guests = RateLimiter(per_minute=settings.guests_per_minute, clock=lambda: service.clock().timestamp())
    app.state.bad_tokens = bad_token_limiter()  # tokens this server does not take, by address (``caller``)
    hashing = HashingGate()  # sign-ins and sign-ups: their password hashes, one at a time
    sockets = SocketLimits(per_address=settings.sockets_per_address)  # open in this process, by player and address
    document_errors(app)

    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, error: ServiceError) -> JSONResponse:
        return Answer({"detail": error.detail, **error.extra}, status_code=error.status, headers=error.headers)

    async def not_json(request: Request) -> JSONResponse:
        """A body that is not JSON: a 422, after the caller of an ``/admin`` endpoint is found to be the operator.
        FastAPI decodes the body before it solves any dependency, so a player's or a stranger's unparseable body to
        ``/admin`` was a 422 where the operator check answers every other request of theirs 403 or 401 (found by an
        integrator's trial)."""
        route = getattr(request.scope.get("route"), "path", request.url.path)  # the route's, behind any root_path
        if route.startswith("/admin/") or route == "/admin":
            try:
                await operator(await caller(request, request.headers.get("authorization")))
            except ServiceError as refused:
                return await service_error(request, refused)
        return Answer({"detail": NOT_JSON}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid request"}
        if first.get("type") == "json_invalid":  # its "loc" is a character offset, not a field
            return await not_json(request)
        if [str(part).lower() for part in first["loc"]] == ["header", "idempotency-key"]:
            # The store's 400 and words for any malformed key: one too long was a 422 of the header's schema, which a
            # client's retry layer reads as a key reused on another request (an integrator's trial).
            return Answer({"detail": KEY_MALFORMED}, status_code=400)
        # The field alone ("since: …"), not where FastAPI found it ("query.since: …"); a header keeps "header.".
        where = ".".join(str(part) for part in first["loc"] if part not in ("body", "query", "path")) or "request"
        message = str(first["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's own ValueError
        return Answer({"detail": f"{where}: {message}."}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        # FastAPI answers a body it cannot decode (not UTF-8) with a 400 of its own words; here 400 means a
        # missing Idempotency-Key, and malformed input is a 422 like any other.
        if error.status_code == 400 and error.detail == "There was an error parsing the body":
            return await not_json(request)
        return await http_exception_handler(request, error)

    async def once(who: Caller, key: str | None, request: Request, body: Any,
                   work: Callable[[], dict[str, Any]], status: int = 200) -> JSONResponse:
        fingerprint = f"{request.method} {request.url.path} " + hashlib.sha256(
            json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:32]

        code, answer = await run_in_threadpool(service.idempotent, who, key, fingerprint, status, work)
        return Answer(answer, status_code=code)

    # ----------------------------------------------------------- pages
    with resources.as_file(WEB) as web_directory:
        app.mount("/static", StaticFiles(directory=web_directory), name="static")

    # HEAD and OPTIONS too: a load balancer's default check may be ``HEAD /`` (HAProxy's ``option httpchk HEAD /``),
    # which was 405, and marked every process down (an operator's trial).
    @app.api_route("/", methods=["GET", "HEAD", "OPTIONS"], response_class=HTMLResponse, include_in_schema=False)
    async def index() -> str:
        return (WEB / "index.html").read_text("utf-8")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response((WEB / "favicon.svg").read_bytes(), media_type="image/svg+xml")

    # A load balancer's check may be HEAD or OPTIONS (HAProxy's plain ``option httpchk`` sends OPTIONS), and a path
    # written with a slash at the end was redirected: a 3xx passes HAProxy's check, so a floor that could not serve
    # looked healthy there. Each check answers every one of these itself.
    probe_methods = ["GET", "HEAD", "OPTIONS"]

    async def health() -> dict[str, str]:
        return {"status": "ok"}

    async def ready() -> JSONResponse:
        """Whether this process can serve the floor now: its database answers, its timers run, other processes'
        events reach it (:mod:`~twentyone.server.readiness`); 503 with what is wrong otherwise."""
        passed, checks = await readiness.report()
        if passed:
            return Answer({"status": "ready", "checks": checks})
        wrong = "; ".join(f"{name}: {word}" for name, word in checks.items() if word not in ("ok", "off"))
        return Answer({"detail": f"Not ready ({wrong}).", "status": "not ready", "checks": checks},
                      status_code=503, headers={"Retry-After": RETRY_AFTER})

    # GET alone in the schema: one route of several methods gave each the same operation id, which OpenAPI forbids
    # and generated clients trip on (review).
    for path, check in (("/health", health), ("/health/ready", ready)):
        app.add_api_route(path, check, methods=["GET"])
        app.add_api_route(path, check, methods=["HEAD", "OPTIONS"], include_in_schema=False)
        app.add_api_route(f"{path}/", check, methods=probe_methods, include_in_schema=False)

    # ------------------------------------------------------------ auth
    @app.post("/auth/register", status_code=201)
    async def register(body: Registration, request: Request) -> dict[str, Any]:
        address = client_address(request)
        guests.check(address)  # a new account, as a guest is: one budget for both
        who, token = await hashing.run(run_in_threadpool, service.register, body.name, body.password, address)
        return {"token": token, "player": {"id": who.id, "name": who.name}}

    @app.post("/auth/login")
    async def login(body: Credentials, request: Request) -> dict[str, Any]:
        who, token, returned = await hashing.run(run_in_threadpool, service.login, body.name, body.password,
                                                 client_address(request))
        return {"token": token, "player": {"id": who.id, "name": who.name}, "returned_bets": returned}

    @app.post("/auth/guest", status_code=201)
    def guest(request: Request, _none: NoBody) -> dict[str, Any]:
        address = client_address(request)
        guests.check(address)
        who, token = service.guest(address)
        return {"token": token, "player": {"id": who.id, "name": who.name, "guest": True}}

    @app.post("/auth/logout")
    def logout(who: Me, authorization: Annotated[str | None, Header()] = None,
               body: SignOut | None = None) -> dict[str, Any]:
        """End this sign-in (``{"everywhere": true}``: every sign-in of the player's): its token is refused from then
        on, its WebSockets close (4401), and bets never dealt are returned (``returned_bets``)."""
        token = bearer_token(authorization) or ""
        return service.sign_out(who, token, body.everywhere if body is not None else False)

    # -------------------------------------------------------------- me
    @app.get("/me")
    def me(who: Me) -> dict[str, Any]:
        return service.profile(who)

    @app.put("/me/settings")
    async def settings_update(who: Me, body: SettingsUpdate, request: Request, key: Key = None) -> JSONResponse:
        changes = body.model_dump(exclude_none=True)
        return await once(who, key, request, changes, lambda: service.update_settings(who, changes))

    @app.put("/me/limits")
    async def limits_update(who: Me, body: LimitsUpdate, request: Request, key: Key = None) -> JSONResponse:
        # A limit given as null is to be removed, as a looser limit is (after the cooling-off); one left out stays.
        removed = {name for name in EASED_LATER if name in body.model_fields_set and getattr(body, name) is None}
        return await once(who, key, request, body.model_dump(exclude_unset=True), lambda: service.update_limits(
            who, body.daily_loss_limit, body.session_minutes, body.exclude_days, removed))

    @app.get("/me/history")
    def history(who: Me, _once: GivenOnce, query: Annotated[HistoryQuery, Query()]) -> dict[str, Any]:
        """Newest first; page with ``before`` (the last page's ``next_before``): constant cost, no shifts."""
        return service.history(who, query.page, query.size, query.before)

    @app.post("/me/reconnect")
    def reconnect(who: Me, _none: NoBody) -> dict[str, Any]:
        return {"returned_bets": service.reconnect(who)}

    # ---------------------------------------------------------- tables
    def signed_in(authorization: str | None, address: str) -> Caller | None:
        """The caller a bearer token names, for a read that anyone may make: None without a token, or with one that
        is no longer signed in (the lobby is shown all the same)."""
        token = bearer_token(authorization) or ""
        if not token:
            return None
        try:
            return token_caller(service, app.state.bad_tokens, address, token)
        except ServiceError as error:
            # A token not taken, or not now (past the limit of wrong ones, the operator's as any other): the lobby
            # is shown as to anyone. Before, past the limit, a page holding a stale token had no lobby (a trial).
            if error.status == 401 or error.extra.get("token_refused"):
                return None
            raise

    @app.get("/tables")
    def tables(request: Request, authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        """Every table and its setting; for a signed-in player, ``closed_tables``: those taken out of the
        configuration where they have a round open, to finish it (each with its ``round_id``), and ``open_rounds``:
        their rounds open at the tables configured (``round_id``, ``table_id``, ``status``), newest first."""
        seated = service.seated()
        configured = service.tables()
        who = signed_in(authorization, client_address(request))
        closed = [table_id for table_id in seated if table_id not in configured]  # rounds open, no table now
        listed = [{**table_json(table), "players": seated.get(table.id, 0)} for table in configured.values()]
        answer = {"tables": listed,
                  "closed_tables": service.views.closed_tables(who, closed) if who is not None and closed else []}
        if who is not None:
            answer["open_rounds"] = service.views.open_rounds(who, configured.keys())
        return answer

    def reached(who: Caller, table_id: str) -> TableSpec:
        """The table as the caller may reach it: as configured, or a closed one's stand-in for a player who played
        there (``TableRegistry.seen_by``); else 404."""
        return service.table(table_id) if who.is_operator else service.registry.seen_by(table_id, who.id)

    @app.get("/tables/{table_id}")
    def table_state(who: Me, table_id: str) -> dict[str, Any]:
        table = reached(who, table_id)
        if table.closed:  # taken out of the configuration: a player's round there is finished here
            return service.rounds.closed_table(who, table)
        return service.table_state(who, table_id)

    def at_open_table(who: Caller, table_id: str, work: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        """``work``, a bet control or a deal at ``table_id``. At a table taken out of the configuration, for a player
        who played there, a 409 that says it is closed (to anyone else, the 404 of a table there is not): the page
        that finishes a round there must not be told the table does not exist."""

        def checked() -> dict[str, Any]:
            try:
                return work()
            except ServiceError as error:
                if error.status == 404 and not who.is_operator and reached(who, table_id).closed:
                    raise ServiceError(409, f"The table {table_id!r} is closed: it takes no new bets.") from None
                raise

        return checked

    @app.post("/tables/{table_id}/chip")
    async def chip(who: Me, table_id: str, body: ChipChoice, request: Request, key: Key = None) -> JSONResponse:
        return await once(who, key, request, body.model_dump(), at_open_table(
            who, table_id, lambda: service.bet_control(who, table_id, "chip", chip=body.chip)))

    @app.post("/tables/{table_id}/bets")
    async def bet(who: Me, table_id: str, body: BetPlacement, request: Request, key: Key = None) -> JSONResponse:
        return await once(who, key, request, body.model_dump(), at_open_table(
            who, table_id, lambda: service.bet_control(who, table_id, "bet", body.spot, body.type, body.chip)))

    for control in ("undo", "double", "rebet", "clear"):
        def make(name: str) -> Callable[..., Any]:
            async def handler(who: Me, table_id: str, request: Request, _none: NoBody,
                              key: Key = None) -> JSONResponse:
                return await once(who, key, request, {}, at_open_table(
                    who, table_id, lambda: service.bet_control(who, table_id, name)))
            handler.__name__ = f"bet_{name}"
            return handler

        app.post(f"/tables/{{table_id}}/{control}", name=f"bet_{control}")(make(control))

    @app.post("/tables/{table_id}/deal")
    async def deal(who: Me, table_id: str, request: Request, _none: NoBody, key: Key = None) -> JSONResponse:
        return await once(who, key, request, {}, at_open_table(who, table_id, lambda: service.deal(who, table_id)))

    # ---------------------------------------------------------- rounds
    @app.get("/rounds/{round_id}")
    def round_view(who: Me, round_id: RoundId) -> dict[str, Any]:
        return service.round_view(who, round_id)

    @app.post("/rounds/{round_id}/actions")
    async def act(who: Me, round_id: RoundId, body: Decision, request: Request, key: Key = None) -> JSONResponse:
        if who.is_operator:  # the service lets its timer act for a player; over HTTP the operator's token may not
            raise ServiceError(403, OPERATOR_DECIDES_NOT)
        return await once(who, key, request, body.model_dump(), lambda: service.act(who, round_id, body.action))

    @app.get("/rounds/{round_id}/hint")
    def round_hint(who: Me, round_id: RoundId) -> dict[str, Any]:
        return service.hint(who, round_id)

    @app.get("/rounds/{round_id}/replay")
    def replay(who: Me, round_id: RoundId) -> dict[str, Any]:
        return service.replay(who, round_id)

    @app.get("/rounds/{round_id}/verify")
    def verify(who: Me, round_id: RoundId) -> dict[str, Any]:
        return service.verify(who, round_id)

    # ----------------------------------------------------------- admin
    @app.post("/admin/tables", status_code=201)
    async def create_table(who: Operator, body: TableCreate, request: Request, key: Key = None) -> JSONResponse:
        spec = body.model_dump(exclude_none=True)
        table_id = spec.pop("id")
        return await once(who, key, request, body.model_dump(),
                          lambda: service.create_table(who, table_id, spec), status=201)

    @app.delete("/admin/tables/{table_id}")
    async def remove_table(who: Operator, table_id: str, request: Request, _none: NoBody,
                           key: Key = None) -> JSONResponse:
        """Take a table the operator made out of the configuration: what was played there stays readable, a round
        dealt there is played out (docs/server.md, "Changing a table")."""
        return await once(who, key, request, {}, lambda: service.remove_table(who, table_id))

    @app.post("/admin/tables/{table_id}/close-betting")
    async def close_betting(who: Operator, table_id: str, request: Request, _none: NoBody,
                            key: Key = None) -> JSONResponse:
        """Close a shared table's betting window now and deal (what the timer does when it runs out)."""

        def work() -> dict[str, Any]:
            if not who.is_operator:
                raise ServiceError(403, "Only the operator can do this.")
            if not service.table(table_id).shared:
                raise ServiceError(409, f"{table_id!r} is a private table: it deals at once, with no betting window.")
            return close_answer(service.close_betting(table_id))  # None: no round is forming there

        return await once(who, key, request, {}, work)

    @app.post("/admin/credit")
    async def credit(who: Operator, body: BalanceChange, request: Request, key: Key = None) -> JSONResponse:
        return await once(who, key, request, body.model_dump(),
                          lambda: service.credit(who, body.player, body.currency, body.amount))

    @app.post("/admin/debit")
    async def debit(who: Operator, body: BalanceChange, request: Request, key: Key = None) -> JSONResponse:
        """Take an amount from a player's balance (a correction), up to the balance: the built-in ledger's only."""
        return await once(who, key, request, body.model_dump(),
                          lambda: service.debit(who, body.player, body.currency, body.amount))

    @app.get("/admin/report")
    def report(who: Operator, _once: GivenOnce, query: Annotated[ReportQuery, Query()]) -> dict[str, Any]:
        """Rounds and money by table and by currency: all of them, or those that ended in [since, until) (ISO 8601
        with an offset)."""
        return service.report(who, query.since, query.until)

    @app.get("/admin/rounds")
    def rounds(who: Operator, _once: GivenOnce, query: Annotated[RoundsQuery, Query()]) -> dict[str, Any]:
        """Rounds newest first, with their clocks, seats and money: every one, or those of a ``status`` (``open``:
        betting or playing) and/or a ``table``; page with ``before`` (the last page's ``next_before``)."""
        return service.list_rounds(who, query.status, query.table, query.before, query.size)

    @app.get("/admin/players/{name}")
    def player(who: Operator, name: Annotated[LookedUp, PathParam()]) -> dict[str, Any]:
        """A player, found by name as ``/admin/credit`` finds one: balances, limits, whether signed in now, and their
        last rounds as their own history shows them."""
        return service.player(who, name)

    @app.get("/admin/wallet/calls")
    def wallet_calls(who: Operator, _once: GivenOnce, query: Annotated[WalletCallsQuery, Query()]) -> dict[str, Any]:
        """Calls to the operator's wallet still pending (refused or unanswered), oldest first, with their totals."""
        return service.wallet_calls(who, query.after, query.size)

    # ------------------------------------------------------- websocket
    @app.websocket("/ws/tables/{table_id}")
    async def table_events(websocket: WebSocket, table_id: str, token: str = "") -> None:
        try:
            who = await run_in_threadpool(token_caller, service, app.state.bad_tokens,
                                          websocket.client.host if websocket.client else "unknown", token)
            await run_in_threadpool(reached, who, table_id)  # a closed table's too, for a round played out there
        except ServiceError as error:
            # Accept first: a close before the handshake reaches the client as a bare HTTP 403,
            # without the code that says why.
            await websocket.accept()
            # A token refused past the limit of wrong ones closes as a signed-out one: the page then stops, where on
            # 4429 it tried again every few seconds, each try a wrong token more (review).
            # Storage busy (a 503) is 1013, try again later, as a client too slow is: 4404 told the terminal to give
            # up for good during a busy moment (review). 4404 is a table this caller cannot reach.
            code = SIGNED_OUT_CODE if error.status in (401, 429) else DROPPED_CODE if error.status == 503 else 4404
            await websocket.close(code=code, reason=error.detail[:120])
            return
        await websocket.accept()
        player = None if who.role == "operator" else who.id
        address = websocket.client.host if websocket.client else "unknown"
        try:
            others = sockets.admit(player, address)
        except ServiceError as error:
            await websocket.close(code=TOO_MANY_SOCKETS_CODE, reason=error.detail[:120])
            return
        try:
            await serve_socket(websocket, table_id, who, token, others)
        finally:
            sockets.release(player, address)

    async def serve_socket(websocket: WebSocket, table_id: str, who: Caller, token: str, others: int) -> None:
        """A table's events to one admitted socket; ``others``: the player's other sockets open in this process."""
        # A new connection while another of the player's is open is not a return from a disconnection: their other
        # page still shows those bets. Before, a second tab returned the first tab's bets (noted by two trials).
        # Another process's sockets are not counted: there a second tab still returns them.
        reconnected = who.role != "operator" and not others
        returned = await run_in_threadpool(service.reconnect, who) if reconnected else []
        # Subscribed before the hello (and after the reconnection, whose own news the hello carries): a client that
        # heard hello hears every later event, and is counted at the table. Before, an event that fell between the
        # two was lost to the socket, and a player who heard hello was not yet counted (found by review).
        subscription = service.events.subscribe(table_id, None if who.role == "operator" else who.id)
        signed_in = session_id(token)

        async def signed_out() -> None:
            with contextlib.suppress(Exception):  # the client may have gone already
                await websocket.close(code=SIGNED_OUT_CODE, reason="Your sign-in ended: sign in again.")

        async def still_signed_in() -> bool:
            try:
                return await run_in_threadpool(service.accounts.still_signed_in, token)
            except Busy:  # storage busy this once: asked again at the next check, the socket left open
                return True

        async def forward() -> None:
            while (event := await subscription.next()) is not None:
                if event["type"] == "signed-out":  # the server's own news: no client's, the operator's neither
                    ended = event.get("sessions")  # absent from an event cut to fit NOTIFY: ask the database
                    if event["player_id"] == who.id and (
                            signed_in in ended if ended is not None else not await still_signed_in()):
                        await signed_out()  # this sign-in ended: its socket ends with it
                        return
                    continue  # another sign-in ended (the player's, or anyone's at the operator's socket)
                await websocket.send_json(event)

        async def watch_sign_in() -> None:
            """Close the socket once its sign-in has ended or expired, as the database says, asked now and every
            :data:`SOCKET_RECHECK_SECONDS`: a sign-out in another process that this one's memory did not know of
            yet, or one made while this socket was being opened (before it heard events), and an expiry. Before,
            such a socket stayed open for ever with the player's private news (found by review)."""
            while await still_signed_in():
                await asyncio.sleep(SOCKET_RECHECK_SECONDS)
            await signed_out()

        async def dropped() -> None:  # fires even while a send to a client that does not read is stuck
            await subscription.wait_dropped()

        async def listen() -> None:  # notices a client that left, so the connection closes at once
            while (await websocket.receive())["type"] != "websocket.disconnect":
                pass

        tasks: set[asyncio.Task[None]] = set()
        try:
            await websocket.send_json({"type": "hello", "table_id": table_id, "returned_bets": returned})
            tasks = {asyncio.create_task(forward()), asyncio.create_task(listen()), asyncio.create_task(dropped())}
            if who.role != "operator":  # the operator's token is the server's own: it does not end
                tasks.add(asyncio.create_task(watch_sign_in()))
            _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if subscription.dropped:  # too slow (or events were lost between processes): reconnect and re-read
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(websocket.close(code=DROPPED_CODE, reason=subscription.drop_reason),
                                           timeout=2)
        except WebSocketDisconnect:
            pass
        finally:
            for task in tasks:
                task.cancel()
            service.events.unsubscribe(table_id, subscription)

    return app


async def _timers(service: GameService, readiness: Readiness) -> None:
    """Betting windows, decision timeouts and wallet retries, checked every tick (:meth:`GameService.timers_due`).

    Each table's timers, and the operator wallet's retries, run apart, in threads of their own
    (:data:`TIMER_THREADS` at once, none taken from requests): a table whose last timers still run (an operator's
    wallet slow to answer its close's debits, say) is passed over until they are done, and the others go on.
    """
    limiter = CapacityLimiter(TIMER_THREADS)
    running: dict[str, asyncio.Task[None]] = {}
    # The heartbeat (server/downtime.py), in a thread of its own, never one of the requests' or the timers': the first
    # beat is awaited before the first look, so that the clocks of a downtime before this start are given back before
    # any timer judges them due; the later ones run beside the looks, one at a time (a late one is judged by its
    # clock, and a timer judged before a clock moved does not act: Rounds.act's expected_since).
    # After a beat that storage refused (the database away), the next is awaited before any look, and no look is made
    # until one succeeds: the time the database was away is given back before a timer judges a clock due.
    beats = CapacityLimiter(1)
    beating: asyncio.Task[bool] | None = None
    try:
        answered = await _beat(service, beats)
        beaten = asyncio.get_running_loop().time()
        while True:
            # The repeats of an outage's 503s, told as their window ends; before the look below, which an outage
            # can hold up until the pool's time-out.
            service.store.busy_lines.flush()
            if beating is not None and beating.done():
                answered, beating = beating.result(), None
            now = asyncio.get_running_loop().time()
            if not answered:
                answered, beaten = await _beat(service, beats), now
            elif beating is None and now - beaten >= BEAT_SECONDS:
                beating, beaten = asyncio.create_task(_beat(service, beats)), now
            try:
                due = await run_in_threadpool(service.timers_due) if answered else []
                if answered:
                    readiness.looked()
            except Busy:  # storage contention, logged as one line where it arose: the next tick tries again
                due = []
            except Exception:  # a failing look must not stop the timers; it is logged and tried again
                log.exception("timer tick failed")
                due = []
            for key in [key for key, task in running.items() if task.done()]:
                del running[key]
            for key, timer in due:
                if key not in running:
                    running[key] = asyncio.create_task(_run_timer(timer, limiter))
            await asyncio.sleep(service.settings.tick_seconds)
    finally:  # at the stop: the timers under way end (their threads finish) before the database closes
        for task in [*running.values(), *([beating] if beating is not None else [])]:
            task.cancel()
        await asyncio.gather(*running.values(), *([beating] if beating is not None else []), return_exceptions=True)
        # The last beat: a floor stopped whole (a deploy) counts its downtime from now, not from up to a beat ago.
        await _beat(service, beats)
        service.store.busy_lines.flush(every=True)  # repeats counted in the last window are not lost


async def _beat(service: GameService, limiter: CapacityLimiter) -> bool:
    """One beat of the heartbeat (:meth:`GameService.beat`): whether storage answered it. One that fails is logged
    (storage's refusal as one line where it arose), and the next tries again; one that fails otherwise (a fault of
    its own) holds up no timer."""
    try:
        await to_thread.run_sync(service.beat, limiter=limiter)
    except Busy:
        return False
    except Exception:
        log.exception("the heartbeat failed; it beats again at the next tick")
    return True


async def _run_timer(timer: Callable[[], dict[str, int]], limiter: CapacityLimiter) -> None:
    try:
        await to_thread.run_sync(timer, limiter=limiter)
    except Busy:  # logged where it arose; the next tick tries again
        pass
    except Exception:
        log.exception("a timer failed; tried again at the next tick")
