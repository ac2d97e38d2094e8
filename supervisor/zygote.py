"""The zygote: a warm fork server that starts teammates in milliseconds.

The supervisor forks it first thing, before it creates any ZeroMQ context (a forked
context is unusable), and the zygote never creates one. For each spawn order it forks
twice: the intermediate exits at once, so the teammate is re-parented to the supervisor,
which is a child subreaper. The teammate is thus the supervisor's own child (waitpid,
SIGCHLD, exit codes) yet was born from warm, pre-imported memory.
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import sys
import time

import msgspec

from ipc.osproc import set_parent_death_signal, set_process_name

TEAMMATE_MODULE = "agentproc.main"  # started by entry point and flags, as `python -m agentproc`


class SpawnOrder(msgspec.Struct):
    argv: list[str]
    env: dict[str, str]
    cwd: str


class Spawned(msgspec.Struct):
    pid: int = 0
    error: str = ""


class Zygote:
    """The supervisor's handle on its fork server."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(cls, supervisor_pid: int) -> Zygote:
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            parent_end.close()
            try:
                _serve(child_end, supervisor_pid)
            finally:
                os._exit(0)
        child_end.close()
        return cls(pid, parent_end)

    def spawn(self, order: SpawnOrder, timeout: float = 10.0) -> int:
        self.sock.settimeout(timeout)
        self.sock.send(msgspec.msgpack.encode(order))
        reply = msgspec.msgpack.decode(self.sock.recv(65536), type=Spawned)
        if reply.error:
            raise OSError(reply.error)
        return reply.pid

    def close(self) -> None:
        self.sock.close()


def _serve(sock: socket.socket, supervisor_pid: int) -> None:
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != supervisor_pid:
        return
    set_process_name("at-zygote")
    for sig in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    importlib.import_module(TEAMMATE_MODULE)  # warm: the teammate's imports are paid once, here
    while True:
        data = sock.recv(65536)
        if not data:
            return
        try:
            order = msgspec.msgpack.decode(data, type=SpawnOrder)
            pid = _double_fork(order, sock, supervisor_pid)
            sock.send(msgspec.msgpack.encode(Spawned(pid=pid)))
        except Exception as exc:  # report, keep serving
            sock.send(msgspec.msgpack.encode(Spawned(error=f"{type(exc).__name__}: {exc}")))


def _double_fork(order: SpawnOrder, sock: socket.socket, supervisor_pid: int) -> int:
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read_end)
        child = os.fork()
        if child == 0:
            os.close(write_end)
            sock.close()
            _become_teammate(order, supervisor_pid)
        os.write(write_end, str(child).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(middle, 0)
    return int(data)


def _become_teammate(order: SpawnOrder, supervisor_pid: int) -> None:
    code = 1
    try:
        os.setsid()  # its own session and process group: the supervisor can kill all of it
        deadline = time.monotonic() + 5
        while os.getppid() != supervisor_pid:  # until re-parented to the subreaper
            if time.monotonic() > deadline:
                os._exit(1)
            time.sleep(0.0002)
        os.environ.clear()
        os.environ.update(order.env)
        os.chdir(order.cwd)
        sys.argv = ["agentproc", *order.argv]
        code = importlib.import_module(TEAMMATE_MODULE).main(order.argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
