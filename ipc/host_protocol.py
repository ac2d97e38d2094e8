"""What a supervisor and its in-process host (``python -m agentproc.host``) say to each other
over the socket pair they share: start a teammate as a thread of the host, stop one; one
teammate runs (in which thread, for ``ps``), a session of its tools began or ended, and one
ended (with a wait status, as if its process had been reaped)."""

from __future__ import annotations

import msgspec

from ipc.launch import LaunchSpec


class Start(msgspec.Struct, tag="start", kw_only=True):
    spec: LaunchSpec
    key: bytes = b""  # the teammate's private key (ipc.trust), over the host's private socket


class Stop(msgspec.Struct, tag="stop", kw_only=True):
    name: str
    signal: int  # SIGTERM: stop cleanly; SIGKILL: its tools now, and it is given up


class Running(msgspec.Struct, tag="running", kw_only=True):
    name: str
    thread: int  # its thread's native id (the kernel's tid, as ``ps -L`` shows it)


class Ended(msgspec.Struct, tag="ended", kw_only=True):
    name: str
    status: int  # a wait status: code << 8, or the signal number


class ToolSession(msgspec.Struct, tag="tool-session", kw_only=True):
    """A teammate's tool command began a session of its own (``running``), or that session
    ended and its leader is reaped next: the host's death must end what is still running."""

    name: str
    sid: int
    running: bool


Command = Start | Stop
Report = Running | Ended | ToolSession


def wait_status(code: int) -> int:
    """A wait status for ``code`` as :func:`os.waitstatus_to_exitcode` reads it back."""
    return -code if code < 0 else code << 8
