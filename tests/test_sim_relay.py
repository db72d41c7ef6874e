"""The relay that bridges Karpenter's network namespace and the host (``gpupools.sim.relay``): bytes
make the round trip TCP -> Unix socket -> TCP on 127.0.0.1, a half-close reaches the far end, a
non-loopback listener is refused, a health check works through a socket, and with a command the
relay exits with the command's status and leaves no socket behind."""

from __future__ import annotations

import asyncio
import gc
import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Coroutine, Iterator, TypeVar

import pytest
from gpupools.sim import relay
from gpupools.sim.relay import Endpoint, RelayError

T = TypeVar("T")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """On a loop of its own: ``asyncio.run`` would leave no current loop for Pulumi's mocks in later tests.

    Closed the way ``asyncio.run`` closes its loop (CPython ``Lib/asyncio/runners.py``,
    ``Runner.close``: ``_cancel_all_tasks``, ``shutdown_asyncgens``, then ``loop.close()``): a relay
    connection still being served when the scenario returns is a pending ``handle`` task; closed
    with it pending, the task was collected later and its ``finally`` closed its writers on the
    closed loop, the ``RuntimeError: Event loop is closed`` traceback a passing run showed."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def test_a_connection_still_served_at_the_end_is_closed_on_its_loop(tmp_path: Path) -> None:
    """The scenario returns while the relay still pumps an open connection; nothing may be left to
    run on the closed loop (``sys.unraisablehook`` sees what a collected task raised)."""

    async def scenario() -> None:
        target = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        inner = await relay.serve(
            Endpoint(host="127.0.0.1", port=0), Endpoint(host="127.0.0.1", port=target.sockets[0].getsockname()[1])
        )
        _, writer = await asyncio.open_connection("127.0.0.1", inner.sockets[0].getsockname()[1])
        writer.write(b"x")
        await asyncio.sleep(0.2)  # the relay's handle task is now pumping
        inner.close()
        target.close()

    raised: list[BaseException | None] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: raised.append(unraisable.exc_value)
    try:
        _run(scenario())
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert raised == []


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    data = await reader.read()  # until the client half-closes
    writer.write(data[::-1])
    await writer.drain()
    writer.close()


def test_bytes_round_trip_tcp_unix_tcp(tmp_path: Path) -> None:
    async def scenario() -> bytes:
        echo = await asyncio.start_server(_echo, "127.0.0.1", 0)
        echo_port = echo.sockets[0].getsockname()[1]
        path = str(tmp_path / "api.sock")
        host_side = await relay.serve(Endpoint(path=path), Endpoint(host="127.0.0.1", port=echo_port))
        inner = await relay.serve(Endpoint(host="127.0.0.1", port=0), Endpoint(path=path))
        inner_port = inner.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", inner_port)
        payload = os.urandom(300_000)  # several chunks
        writer.write(payload)
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), timeout=10)
        writer.close()
        for server in (inner, host_side, echo):
            server.close()
        assert answer == payload[::-1]
        return answer

    _run(scenario())


def test_an_unreachable_target_closes_the_client(tmp_path: Path) -> None:
    async def scenario() -> bytes:
        inner = await relay.serve(Endpoint(host="127.0.0.1", port=0), Endpoint(path=str(tmp_path / "absent.sock")))
        reader, writer = await asyncio.open_connection("127.0.0.1", inner.sockets[0].getsockname()[1])
        answer = await asyncio.wait_for(reader.read(), timeout=10)
        writer.close()
        inner.close()
        return answer

    assert _run(scenario()) == b""


def test_connections_beyond_the_limit_are_refused(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, bytes]:
        hold = asyncio.Event()

        async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await hold.wait()
            writer.write(b"ok")
            writer.close()

        target = await asyncio.start_server(slow, "127.0.0.1", 0)
        inner = await relay.serve(
            Endpoint(host="127.0.0.1", port=0), Endpoint(host="127.0.0.1", port=target.sockets[0].getsockname()[1]), 1
        )
        port = inner.sockets[0].getsockname()[1]
        first = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.2)
        second = await asyncio.open_connection("127.0.0.1", port)
        refused = await asyncio.wait_for(second[0].read(), timeout=10)
        hold.set()
        served = await asyncio.wait_for(first[0].read(), timeout=10)
        for _, writer in (first, second):
            writer.close()
        inner.close()
        target.close()
        return refused, served

    assert _run(scenario()) == (b"", b"ok")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("tcp:0.0.0.0:6443", "loopback"),
        ("tcp::6443", "loopback"),
        ("tcp:10.0.0.1:6443", "loopback"),
        ("tcp:127.0.0.1:0", "1-65535"),
        ("udp:127.0.0.1:53", "tcp:127.0.0.1:PORT or unix:PATH"),
        ("unix:/" + "x" * 200, "at most 107 bytes"),
    ],
)
def test_endpoints_outside_the_rule_are_refused(text: str, rule: str) -> None:
    with pytest.raises(RelayError, match=rule) as error:
        relay.parse_endpoint(text)
    assert text[:20] in str(error.value)


def test_loopback_endpoints_parse() -> None:
    assert relay.parse_endpoint("tcp:127.0.0.1:6443") == Endpoint(host="127.0.0.1", port=6443)
    assert relay.parse_endpoint("tcp:[::1]:8081") == Endpoint(host="::1", port=8081)
    assert relay.parse_route("unix:/tmp/a.sock=tcp:127.0.0.2:1") == (Endpoint(path="/tmp/a.sock"), Endpoint("127.0.0.2", 1))


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_relay_command_serves_while_its_command_runs_then_removes_its_socket(tmp_path: Path, health_port: int) -> None:
    """What Karpenter's namespace runs: routes, then the command; the command checks health through the socket."""
    path = tmp_path / "health.sock"
    check = (
        "import sys, time; from gpupools.sim import relay\n"
        "for _ in range(50):\n"
        f"    if relay.unix_http_ok({str(path)!r}, '/healthz') and not relay.unix_http_ok({str(path)!r}, '/nope'):\n"
        "        sys.exit(7)\n"
        "    time.sleep(0.1)\n"
        "sys.exit(1)\n"
    )
    components = str(Path(relay.__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, relay.__file__, f"unix:{path}=tcp:127.0.0.1:{health_port}", "--", sys.executable, "-c", check],
        env={**os.environ, "PYTHONPATH": components},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 7, result.stderr
    assert not path.exists()


def test_the_relay_command_refuses_an_address_off_loopback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, relay.__file__, f"tcp:0.0.0.0:8080=unix:{tmp_path / 'a.sock'}"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "tcp:0.0.0.0:8080" in result.stderr and "loopback" in result.stderr


def test_unix_http_ok_is_false_without_a_server(tmp_path: Path) -> None:
    assert relay.unix_http_ok(str(tmp_path / "absent.sock"), "/healthz") is False
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(tmp_path / "silent.sock"))  # bound, never listening
        assert relay.unix_http_ok(str(tmp_path / "silent.sock"), "/healthz") is False


def test_karpenter_runs_in_its_own_network_namespace_behind_the_relays(tmp_path: Path) -> None:
    """Karpenter binds ``:<port>`` (every interface): its command line puts it in a new network
    namespace, bridges the API server and the health probe through the state directory's sockets,
    and its kubeconfig names the in-namespace relay, not the API server's own port."""
    from gpupools.sim import karpenter
    from gpupools.sim.build import Build
    from gpupools.sim.control_plane import ClusterState

    state = ClusterState("s", str(tmp_path), "", "", {"kube-apiserver": 40123})
    argv = karpenter.commands(state, Build(tmp_path / "build", {}))
    inner = argv[karpenter.NAME]
    assert Path(inner[0]).name == "unshare" and inner[1] == "--net"
    assert "--lo-up" in inner and inner[-1] == str(tmp_path / "build" / "bin" / "karpenter-kwok")
    api, health = tmp_path / karpenter.API_SOCKET, tmp_path / karpenter.HEALTH_SOCKET
    port = karpenter.NAMESPACE_PORTS["api"]
    assert f"tcp:127.0.0.1:{port}=unix:{api}" in inner
    assert f"unix:{health}=tcp:127.0.0.1:{karpenter.NAMESPACE_PORTS['health']}" in inner
    assert argv[karpenter.RELAY][-1] == f"unix:{api}=tcp:127.0.0.1:40123"
    assert "unshare" not in " ".join(argv[karpenter.RELAY])
    for route in [a for a in inner + argv[karpenter.RELAY] if "=" in a]:
        relay.parse_route(route)  # every route is one the relay accepts (loopback, valid paths)


def test_a_state_directory_too_deep_for_a_unix_socket_is_refused(tmp_path: Path) -> None:
    from gpupools.sim import karpenter
    from gpupools.sim.build import Build
    from gpupools.sim.control_plane import ClusterState

    deep = tmp_path / ("d" * 120)
    state = ClusterState("s", str(deep), "", "", {"kube-apiserver": 40123})
    with pytest.raises(RelayError, match="at most 107 bytes"):
        karpenter.commands(state, Build(tmp_path, {}))
