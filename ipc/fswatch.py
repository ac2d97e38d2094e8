"""Hearing a file change without polling it: Linux inotify on a directory, filtered by name.

Writers that cannot ring a doorbell (Claude Code, peers' tools, a person's editor) still
write the inbox file; a watch on its directory hears each write as it is closed, or a file
renamed over it. The descriptor can sit in any poll set beside our sockets.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

from ipc.boundary import os_errors
from ipc.osproc import libc

IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_HEADER = struct.Struct("iIII")
OVERFLOW = "*"  # in changes(): the kernel's queue overflowed, events were lost  # wd, mask, cookie, len; then len bytes of name


class FileWatch:
    """Changes to the files called ``names`` in ``directory`` (which must exist); every
    file in it when ``names`` is None; ``removals``: a file removed or renamed away counts
    as a change too."""

    def __init__(self, directory: Path, names: Iterable[str] | None, *, removals: bool = False) -> None:
        import ctypes

        self.names = None if names is None else {n.encode() for n in names}
        fd = int(libc().inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if fd < 0:
            err = ctypes.get_errno()
            with os_errors("cannot watch inbox files"):
                raise OSError(err, os.strerror(err))
        self.fd = fd
        mask = IN_CLOSE_WRITE | IN_MOVED_TO | (IN_DELETE | IN_MOVED_FROM if removals else 0)
        if int(libc().inotify_add_watch(fd, os.fsencode(directory), mask)) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            with os_errors(f"cannot watch {directory}"):
                raise OSError(err, os.strerror(err))

    def changed(self) -> bool:
        """Read what is waiting; True if one of the names was written (or events were lost,
        when the kernel's queue overflowed: then anything may have changed)."""
        return bool(self.changes())

    def changes(self) -> set[str]:
        """Read what is waiting: the names written since the last read; :data:`OVERFLOW`
        among them when events were lost (then anything may have changed)."""
        hit: set[str] = set()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return hit
            offset = 0
            while offset + _HEADER.size <= len(data):
                _, mask, _, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                if mask & IN_Q_OVERFLOW:
                    hit.add(OVERFLOW)
                elif name and (self.names is None or name in self.names):
                    hit.add(os.fsdecode(name))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
