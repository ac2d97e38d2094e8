"""A connection to the engine, one per process and URL, and every NATS error mapped into
ours (:mod:`ipc.errors`) here, at the boundary.

The connection reconnects for ever once it has connected: a host that loses the server keeps
its teammates running. A write made while the server is away is retried, with the same
``Nats-Msg-Id``, until it is stored or :func:`retry_seconds` pass, so a retried publish is
never a second message (JetStream drops the duplicate and acknowledges the first).
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ipc.engine.bridge import Bridge, bridge
from ipc.engine.url import EngineUrl, parse
from ipc.errors import Timeout, TransportError
from ipc.settings import env

log = logging.getLogger("agentteams.engine")
T = TypeVar("T")
CONNECT_TIMEOUT = 3.0
REQUEST_TIMEOUT = 2.0  # one try; a write is tried again until retry_seconds()


def retry_seconds() -> float:
    """How long a write waits for a server that is away before it gives up."""
    return float(env("AGENTTEAMS_ENGINE_RETRY", "120"))


IMPATIENT_SECONDS = 5.0  # what an impatient process waits for an engine that does not answer
_impatient = False  # see impatient()
_gave_up = False  # an impatient process gave up on a write


def impatient() -> None:
    """From now on a write while the server is away gives up at once, and one it does not
    answer after :data:`IMPATIENT_SECONDS`, not :func:`retry_seconds`: a supervisor going down
    must not wait minutes for writes that the other hosts make good when its lease runs out,
    and the resident door's caller waits for an answer only 20 s (a command run while the
    engine is away fails and changes nothing, as on the full path, rather than being told so
    and carried out later)."""
    global _impatient
    _impatient = True


def gave_up() -> bool:
    """Whether this process left a write undone (see :func:`impatient`)."""
    return _gave_up


class Connection:
    """``nc`` and ``js`` live on the bridge's loop; call them through :meth:`run`."""

    def __init__(self, url: EngineUrl) -> None:
        self.url = url
        self.bridge: Bridge = bridge()
        self.connected = threading.Event()
        self.nc: Any = None
        self.js: Any = None
        self.bridge.run(self._connect(), CONNECT_TIMEOUT + 2)

    async def _connect(self) -> None:
        from nats.aio.client import Client

        options: dict[str, Any] = {
            "servers": [self.url.server],
            "name": f"agentteams pid {os.getpid()}",
            "connect_timeout": CONNECT_TIMEOUT,
            "allow_reconnect": True,
            "max_reconnect_attempts": 1,  # the first connect fails fast; then for ever (below)
            "reconnect_time_wait": 0.25,
            "ping_interval": 5,
            "max_outstanding_pings": 3,
            "pending_size": 64 * 1024 * 1024,
            "error_cb": self._on_error,
            "disconnected_cb": self._on_disconnected,
            "reconnected_cb": self._on_reconnected,
        }
        if self.url.user:
            options["user"], options["password"] = self.url.user, self.url.password
        if self.url.creds:
            options["user_credentials"] = self.url.creds
        if self.url.tls:
            context = ssl.create_default_context()
            ca = os.environ.get("AGENTTEAMS_NATS_CA", "")
            if ca:
                context.load_verify_locations(ca)
            options["tls"] = context
        self.errors: list[str] = []
        client: Any = _tls_only() if self.url.tls else Client()
        try:
            await client.connect(**options)
        except Exception as exc:  # NoServersError, OSError, an auth error: one line
            if getattr(client, "offered", None) is False:
                raise TransportError(
                    f"the engine at {self.url.shown} does not offer TLS, so nothing was sent to it; "
                    "give it a TLS certificate (engine start --config) or use nats:// where clear text will do"
                ) from None
            raise TransportError(self._why(exc)) from None
        self.nc = client
        self.nc.options["max_reconnect_attempts"] = -1
        self.js = self.nc.jetstream(timeout=REQUEST_TIMEOUT)
        self.connected.set()

    def _why(self, exc: BaseException) -> str:
        seen = " ".join([*self.errors, str(exc)]).lower()
        if "authorization" in seen or "authentication" in seen or "permissions" in seen:
            return f"the engine at {self.url.shown} refused the credentials (give user:password@ in the URL or AGENTTEAMS_NATS_CREDS)"
        if "ssl" in seen or "tls" in seen or "certificate" in seen:
            return (
                f"TLS with the engine at {self.url.shown} failed: {self.errors[-1] if self.errors else exc}"
            )
        return f"cannot reach the engine at {self.url.shown}; is it running? ('agentteams engine start', 'agentteams engine status')"

    async def _on_error(self, exc: Exception) -> None:
        self.errors.append(str(exc) or type(exc).__name__)
        del self.errors[:-5]
        if self.connected.is_set():
            log.debug("engine: %s", exc)

    async def _on_disconnected(self) -> None:
        if self.connected.is_set():
            log.warning("lost the engine at %s; reconnecting", self.url.shown)

    async def _on_reconnected(self) -> None:
        log.warning("reconnected to the engine at %s", self.url.shown)

    def run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        return self.bridge.run(_wrap(coro), timeout)

    def online(self) -> bool:
        """Connected now (not reconnecting to a server that is away)."""
        return self.nc is not None and self.nc.is_connected

    def retry(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """``attempt()`` until it succeeds; a server that is away (no responders, a timeout,
        the connection reconnecting) is waited for up to :func:`retry_seconds`."""
        global _gave_up
        patience = min(retry_seconds(), IMPATIENT_SECONDS) if _impatient else retry_seconds()
        deadline = time.monotonic() + patience
        delay = 0.05
        while True:
            if _impatient and not self.online():
                _gave_up = True
                raise TransportError(
                    f"{what}: the engine at {self.url.shown} is away; try again once it is back "
                    "('agentteams engine status')"
                )
            try:
                return self.bridge.run(_wrap(attempt()), REQUEST_TIMEOUT + 1)
            except (Timeout, TransportError) as exc:
                if time.monotonic() + delay > deadline:
                    _gave_up = _gave_up or _impatient
                    raise TransportError(
                        f"{what}: the engine at {self.url.shown} did not answer for {patience:g}s ({exc.message})"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def close(self) -> None:
        self.connected.clear()  # a close is not a lost server: nothing to warn about
        if self.nc is not None and not self.nc.is_closed:
            try:
                self.bridge.run(self.nc.close(), 5)
            except Exception:
                pass


async def _wrap(coro: Awaitable[T]) -> T:
    """NATS's errors as ours: an unreachable server is a TransportError (retried by
    :meth:`Connection.retry`), anything else keeps its type for the caller to judge."""
    import nats.errors
    import nats.js.errors

    try:
        return await coro
    except (TimeoutError, nats.errors.TimeoutError) as exc:
        raise Timeout(f"the engine did not answer ({type(exc).__name__})") from exc
    except (
        nats.errors.NoRespondersError,
        nats.errors.ConnectionClosedError,
        nats.errors.ConnectionReconnectingError,
        nats.errors.OutboundBufferLimitError,
        nats.errors.StaleConnectionError,
        nats.js.errors.ServiceUnavailableError,  # JetStream still starting
    ) as exc:
        raise TransportError(f"the engine is not available ({type(exc).__name__})") from exc
    except OSError as exc:
        raise TransportError(f"the engine is not available ({exc})") from exc


def _tls_only() -> Any:
    """A client that goes over to TLS before it says anything, or hangs up. The server's INFO
    line comes in clear text, and nats-py upgrades only when it asks to: a server without TLS,
    or a man in the middle who drops the flag, would be sent the password in clear.
    ``offered``: whether the last INFO offered TLS (None: none came)."""
    from nats.aio.client import Client
    from nats.errors import Error

    class TlsOnly(Client):
        offered: bool | None = None

        async def _process_info(self, info: dict[str, Any], initial_connection: bool = False) -> None:
            if initial_connection:  # every connect and reconnect; later INFOs are cluster news
                self.offered = bool(info.get("tls_required") or info.get("tls_available"))
                if not self.offered:
                    raise Error("the server does not offer TLS")
                # Offered but not required (allow_non_tls): nats-py would stay in clear text.
                info["tls_required"] = self._server_info["tls_required"] = True
            await super()._process_info(info, initial_connection)

    return TlsOnly()


_connections: dict[tuple[int, str], Connection] = {}
_lock = threading.Lock()


def connect(url: str | EngineUrl) -> Connection:
    """This process's connection to ``url`` (made on first use)."""
    parsed = parse(url) if isinstance(url, str) else url
    key = (os.getpid(), parsed.url)
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            conn = _connections[key] = Connection(parsed)
        return conn


def close_all() -> None:
    """Close this process's connections (tests, and a process done with its teams)."""
    with _lock:
        found = [c for (pid, _), c in _connections.items() if pid == os.getpid()]
        _connections.clear()
    for conn in found:
        conn.close()


def _forget_after_fork() -> None:
    global _lock
    _connections.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
