"""A byte relay between a TCP port on loopback and a Unix socket, so that a process confined to its
own network namespace reaches, and is reached from, the host's loopback through the filesystem.

Why it exists: every server the sim starts listens on 127.0.0.1 only, and Karpenter cannot be told
to. sigs.k8s.io/karpenter v1.14.1 ``pkg/operator/operator.go`` (``NewOperator``, lines 181-183) binds
its metrics and health-probe servers to ``fmt.Sprintf(":%d", ...MetricsPort)`` and
``fmt.Sprintf(":%d", ...HealthProbePort)``, every interface, with no bind-address option; the binary
is static Go, so no ``LD_PRELOAD`` shim reaches its ``bind``. So the sim runs Karpenter in a network
namespace of its own (``unshare --net``), where "every interface" is that namespace's loopback, and
bridges exactly what it needs through Unix sockets, whose paths every network namespace shares:

* the API server: in the namespace ``tcp:127.0.0.1:<port>=unix:<state>/karpenter-api.sock``, on the
  host ``unix:<state>/karpenter-api.sock=tcp:127.0.0.1:<API server port>``; Karpenter's kubeconfig
  names the in-namespace ``https://127.0.0.1:<port>``, which the API server's certificate covers;
* its health probe: in the namespace ``unix:<state>/karpenter-health.sock=tcp:127.0.0.1:<health port>``,
  which the sim's readiness check GETs ``/healthz`` through (``unix_http_ok``).

Run as ``python relay.py [--lo-up] LISTEN=TARGET ... [-- COMMAND ...]`` (an endpoint is
``tcp:127.0.0.1:PORT`` or ``unix:PATH``): ``--lo-up`` brings the namespace's ``lo`` up first (a new
namespace's loopback is down); with a COMMAND, the relays serve while it runs and the relay exits with
its status; without, they serve until SIGTERM or SIGINT. A TCP listener must be on loopback
(127.0.0.0/8 or ::1): the relay cannot itself break the rule it exists for. Each relay serves at most
``MAX_CONNECTIONS`` connections at once (Karpenter holds a handful of HTTP/2 connections); one beyond
is closed with a message on stderr. The file uses the standard library only and is run by path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Sequence

MAX_CONNECTIONS = 64
"""Connections one relay serves at once (default); the client of one beyond is disconnected."""
CHUNK = 64 * 1024
UNIX_PATH_MAX = 107
"""Bytes a Unix socket path may hold (``sun_path`` is 108 bytes on Linux, with its NUL)."""


class RelayError(ValueError):
    """An endpoint the relay cannot serve (the message names it and the rule)."""


@dataclass(frozen=True)
class Endpoint:
    """``tcp:HOST:PORT`` (``host``, ``port``) or ``unix:PATH`` (``path``)."""

    host: str = ""
    port: int = 0
    path: str = ""

    def __str__(self) -> str:
        return f"unix:{self.path}" if self.path else f"tcp:{self.host}:{self.port}"

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.path:
            return await asyncio.open_unix_connection(self.path)
        return await asyncio.open_connection(self.host, self.port)


def parse_endpoint(text: str) -> Endpoint:
    """``tcp:HOST:PORT`` with a loopback HOST, or ``unix:PATH`` (at most UNIX_PATH_MAX bytes); RelayError otherwise."""
    kind, _, rest = text.partition(":")
    if kind == "unix" and rest:
        if len(os.fsencode(rest)) > UNIX_PATH_MAX:
            raise RelayError(f"relay endpoint {text}: a Unix socket path holds at most {UNIX_PATH_MAX} bytes, got {len(rest)}")
        return Endpoint(path=rest)
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        host = host.strip("[]")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise RelayError(f"relay endpoint {text}: the host must be a loopback address (127.0.0.0/8 or ::1), got {host!r}")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise RelayError(f"relay endpoint {text}: the port must be 1-65535, got {port!r}")
        return Endpoint(host=host, port=int(port))
    raise RelayError(f"relay endpoint {text!r}: must be tcp:127.0.0.1:PORT or unix:PATH")


def parse_route(text: str) -> tuple[Endpoint, Endpoint]:
    """``LISTEN=TARGET`` as two endpoints."""
    listen, sep, target = text.partition("=")
    if not sep:
        raise RelayError(f"relay route {text!r}: must be LISTEN=TARGET")
    return parse_endpoint(listen), parse_endpoint(target)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close the other side (so a request/response protocol can finish)."""
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def serve(listen: Endpoint, target: Endpoint, max_connections: int = MAX_CONNECTIONS) -> asyncio.AbstractServer:
    """Start relaying connections accepted on ``listen`` to ``target``; returns the listening server.
    A stale socket file at a Unix ``listen`` path is replaced."""
    active = 0

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        nonlocal active
        if active >= max_connections:
            print(f"relay {listen} -> {target}: {max_connections} connections open, refusing one more", file=sys.stderr)
            client_writer.close()
            return
        active += 1
        try:
            try:
                target_reader, target_writer = await target.open()
            except OSError as error:
                print(f"relay {listen} -> {target}: cannot connect: {error}", file=sys.stderr)
                return
            try:
                await asyncio.gather(_pump(client_reader, target_writer), _pump(target_reader, client_writer))
            finally:
                target_writer.close()
        finally:
            active -= 1
            client_writer.close()

    if listen.path:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(listen.path)
        return await asyncio.start_unix_server(handle, path=listen.path)
    return await asyncio.start_server(handle, host=listen.host, port=listen.port)


def unix_http_ok(socket_path: str, url_path: str, timeout: float = 2.0) -> bool:
    """True when ``GET url_path`` through the Unix socket ``socket_path`` answers 200."""

    class Connection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(socket_path)

    connection = Connection("localhost", timeout=timeout)
    try:
        connection.request("GET", url_path)
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def loopback_up() -> None:
    """Bring ``lo`` up (a new network namespace starts with it down)."""
    ip = shutil.which("ip") or "/usr/sbin/ip"
    subprocess.run([ip, "link", "set", "lo", "up"], check=True)


async def _run(routes: Sequence[tuple[Endpoint, Endpoint]], command: Sequence[str]) -> int:
    servers = [await serve(listen, target) for listen, target in routes]
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    child: subprocess.Popen[bytes] | None = None

    def terminate() -> None:
        if child is not None and child.poll() is None:
            child.terminate()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, terminate)
    try:
        if not command:
            await stop.wait()
            return 0
        child = subprocess.Popen(list(command))
        waiter = threading.Thread(target=child.wait, daemon=True)
        waiter.start()
        while waiter.is_alive():
            await asyncio.sleep(0.2)
        return child.returncode
    finally:
        for server in servers:
            server.close()
        for listen, _ in routes:
            if listen.path:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(listen.path)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        index = args.index("--")
        args, command = args[:index], args[index + 1 :]
    parser = argparse.ArgumentParser(prog="relay", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--lo-up", action="store_true", help="bring the network namespace's lo up first")
    parser.add_argument("routes", nargs="*", metavar="LISTEN=TARGET")
    options = parser.parse_args(args)
    try:
        routes = [parse_route(route) for route in options.routes]
    except RelayError as error:
        parser.error(str(error))
    if not routes and not command:
        parser.error("nothing to do: give at least one LISTEN=TARGET route or a command after --")
    if options.lo_up:
        loopback_up()
    return asyncio.run(_run(routes, command))


if __name__ == "__main__":
    sys.exit(main())
