"""A real server process on loopback for the attack and fault tests: start it, call it, kill it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from server_helpers import OPERATOR


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(data_dir: Path, port: int, database_url: str, env: dict[str, str] | None = None,
                 log: Path | None = None, cpus: set[int] | None = None) -> subprocess.Popen[bytes]:
    """``twentyone serve`` in its own process; returns once /health answers. ``cpus``: the only CPUs it may use."""
    environment = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": OPERATOR, **(env or {})}
    output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    process = subprocess.Popen(
        [sys.executable, "-m", "twentyone.cli.main", "serve", "--port", str(port), "--data-dir", str(data_dir),
         "--database", database_url], env=environment, stdout=output, stderr=output,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    deadline = time.time() + 60
    while time.time() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("the server did not start")


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a server started in a process group of its own (``serve --workers``: its supervisor and workers) with
    SIGTERM, as an operator's service manager would, and SIGKILL the group if it is still there after 20 s."""
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def call(port: int, method: str, path: str, token: str | None = None, json: object = None,
         key: str | None = None) -> httpx.Response:
    headers = {"Idempotency-Key": key or uuid.uuid4().hex}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.request(method, f"http://127.0.0.1:{port}{path}", headers=headers, json=json, timeout=30)


def raw(port: int, request: bytes, body_chunks: int = 0, chunk: bytes = b"", timeout: float = 30) -> bytes:
    """Send ``request`` bytes, then up to ``body_chunks`` chunks, stopping as soon as the server answers."""
    import select

    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        answer = b""
        for _ in range(body_chunks):
            if select.select([connection], [], [], 0)[0]:
                break
            try:
                connection.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        try:
            while b"\r\n\r\n" not in answer:
                data = connection.recv(65536)
                if not data:
                    break
                answer += data
            head, _, rest = answer.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:
                data = connection.recv(65536)
                if not data:
                    break
                rest += data
            return head + b"\r\n\r\n" + rest
        except ConnectionResetError:
            return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
