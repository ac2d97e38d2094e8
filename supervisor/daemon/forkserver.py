"""The fork server: a small program that starts teammates in milliseconds.

The supervisor execs it (``python -m supervisor.daemon.forkserver``) with one end of a
SOCK_SEQPACKET socketpair. It imports the teammate's module once, by name, and then forks
for every spawn order: twice, so that the intermediate exits at once and the teammate is
re-parented to the supervisor, a child subreaper. The teammate is thus the supervisor's own
child (waitpid, SIGCHLD, exit codes) yet born from warm, pre-imported memory. It never
creates a ZeroMQ context, so forking it is always safe; if it dies, the supervisor starts
another.

Each teammate gets its own session, stdin from /dev/null, its stderr in a log file, and
Claude Code's flags as its command line (``/proc/PID/cmdline``), so process-tree tools
find it by ``--agent-id``.
"""

from __future__ import annotations

import argparse
import array
import importlib
import os
import signal
import socket
import sys
import time

import msgspec

from ipc.key_handover import KEY_FD_ENV
from ipc.osproc import (
    fix_malloc_mmap_threshold,
    prepare_command_line,
    set_command_line,
    set_parent_death_signal,
    set_process_name,
)


class SpawnOrder(msgspec.Struct):
    argv: list[str]
    env: dict[str, str]
    cwd: str
    log: str
    title: str
    nice: int = 0  # added to the fork server's niceness (the supervisor's): teammates yield to it


class Spawned(msgspec.Struct):
    pid: int = 0
    error: str = ""


def serve(sock: socket.socket, supervisor_pid: int, module_name: str) -> None:
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != supervisor_pid:
        return
    set_process_name("at-forkserver")
    prepare_command_line()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fix_malloc_mmap_threshold()  # before the teammates' imports: every teammate inherits it
    module = importlib.import_module(module_name)  # warm: the teammate's imports are paid once, here
    buffer = bytearray(1 << 20)  # one, reused: it lives as long as the team, and so must not grow
    fd_space = socket.CMSG_SPACE(array.array("i").itemsize)
    while True:
        size, ancillary, _, _ = sock.recvmsg_into([buffer], fd_space)
        if not size:
            return
        key_fd = _passed_fd(ancillary)
        try:
            order = msgspec.msgpack.decode(memoryview(buffer)[:size], type=SpawnOrder)
            if key_fd is not None:
                order.env[KEY_FD_ENV] = str(key_fd)  # the descriptor's number, not the key
            pid = _double_fork(order, sock, supervisor_pid, module)
            sock.send(msgspec.msgpack.encode(Spawned(pid=pid)))
        except Exception as exc:  # report, keep serving
            sock.send(msgspec.msgpack.encode(Spawned(error=f"{type(exc).__name__}: {exc}")))
        finally:
            if key_fd is not None:
                os.close(key_fd)  # the teammate has it; this process keeps no key


def _passed_fd(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The descriptor the supervisor sent along with an order (a teammate's key pipe)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            for extra in fds[1:]:
                os.close(extra)
            return fds[0] if fds else None
    return None


def _double_fork(order: SpawnOrder, sock: socket.socket, supervisor_pid: int, module: object) -> int:
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read_end)
        child = os.fork()
        if child == 0:
            os.close(write_end)
            sock.close()
            _become_teammate(order, supervisor_pid, module)
        os.write(write_end, str(child).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(middle, 0)
    return int(data)


def _become_teammate(order: SpawnOrder, supervisor_pid: int, module: object) -> None:
    code = 1
    try:
        os.setsid()  # its own session and process group: the supervisor can kill all of it
        if order.nice:
            os.nice(order.nice)  # before any thread starts: each thread has its own niceness
        deadline = time.monotonic() + 5
        while os.getppid() != supervisor_pid:  # until re-parented to the subreaper
            if time.monotonic() > deadline:
                os._exit(1)
            time.sleep(0.0002)
        _redirect(order.log)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(order.env)
        os.chdir(order.cwd)
        sys.argv = [order.title.split(" ", 1)[0], *order.argv]
        set_command_line([order.title, *order.argv])
        code = module.main(order.argv)  # type: ignore[attr-defined]
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _redirect(log: str) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m supervisor.daemon.forkserver")
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--supervisor-pid", type=int, required=True)
    p.add_argument("--module", required=True)
    args = p.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    try:
        serve(sock, args.supervisor_pid, args.module)
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
