"""The one locked, atomic write primitive every writer uses.

Lock: an OS lock (``flock``) on ``{file}.lock``. We take it with a raw ``fcntl.flock`` on a
fresh descriptor (about 4 µs, against ~110 µs for ``filelock.FileLock``; see
shared/MEASUREMENTS.md). It is the same kernel lock ``filelock.UnixFileLock`` takes, so the
two interoperate; ``AGENTTEAMS_LOCK=filelock`` selects filelock itself. The kernel drops a
flock when its holder dies, so a SIGKILLed writer never leaves a stale lock.

Write: temp file in the same directory, fsync per the durability setting, ``os.replace``,
mode 0600. A reader therefore sees the old file or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

import filelock
import msgspec

from ipc.errors import LockTimeout, StorageError
from ipc.paths import DIR_MODE, FILE_MODE, is_claude_root

T = TypeVar("T")
Durability = Literal["none", "fsync", "full"]
LockBackend = Literal["flock", "filelock"]

DEFAULT_LOCK_TIMEOUT = 30.0
_lock_timeout = DEFAULT_LOCK_TIMEOUT


def set_default_lock_timeout(seconds: float) -> None:
    """This process's lock timeout. The supervisor uses a short one: a frozen teammate that
    holds a lock must cost it a retry, never its event loop."""
    global _lock_timeout
    _lock_timeout = seconds


def durability() -> Durability:
    """``AGENTTEAMS_DURABILITY``: none (survives process crashes: the default), fsync (also
    survives power loss of file contents), full (fsync the directory too)."""
    value = os.environ.get("AGENTTEAMS_DURABILITY", "none")
    if value not in ("none", "fsync", "full"):
        raise StorageError(f"AGENTTEAMS_DURABILITY={value!r}; use one of none, fsync, full")
    return value  # type: ignore[return-value]


def lock_backend() -> LockBackend:
    value = os.environ.get("AGENTTEAMS_LOCK", "flock")
    if value not in ("flock", "filelock"):
        raise StorageError(f"AGENTTEAMS_LOCK={value!r}; use flock or filelock")
    return value  # type: ignore[return-value]


def ensure_dir(path: Path) -> None:
    """Create a state directory 0700, regardless of umask, and every missing parent too
    (``mkdir(parents=True)`` would give the parents the umask's mode). Directories that
    already exist are left as they are."""
    if path.is_dir():
        return
    missing = []
    current = path
    while not current.is_dir():
        missing.append(current)
        current = current.parent
    try:
        for directory in reversed(missing):
            try:
                directory.mkdir(mode=DIR_MODE)
            except FileExistsError:
                continue  # another process made it: its creator set the mode
            os.chmod(directory, DIR_MODE)
    except OSError as exc:
        raise StorageError(f"cannot create directory {path}: {exc.strerror}") from exc


def refuse_claude_root(root: Path) -> None:
    if is_claude_root(root):
        raise StorageError(
            f"refusing to write under {root}: Claude Code locks with a mkdir protocol that our "
            "flock does not honour; read-only commands work, or use another --root"
        )


@contextlib.contextmanager
def locked(path: Path, timeout: float | None = -1.0) -> Iterator[None]:
    """Hold the exclusive lock on ``{path}.lock`` (``path`` itself when it ends in .lock).
    ``timeout`` -1 means this process's default; None waits for ever."""
    if timeout is not None and timeout < 0:
        timeout = _lock_timeout
    lock_path = path if path.name.endswith(".lock") else path.with_name(path.name + ".lock")
    ensure_dir(lock_path.parent)
    if lock_backend() == "filelock":
        flock = filelock.UnixFileLock(str(lock_path), timeout=-1 if timeout is None else timeout, mode=FILE_MODE)
        try:
            flock.acquire()
        except filelock.Timeout as exc:
            raise LockTimeout(f"timed out after {timeout}s waiting for lock {lock_path}") from exc
        try:
            yield
        finally:
            flock.release()
        return
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise StorageError(f"cannot open lock {lock_path}: {exc.strerror}") from exc
    try:
        _acquire(fd, lock_path, timeout)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _acquire(fd: int, lock_path: Path, timeout: float | None) -> None:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    deadline = time.monotonic() + timeout
    delay = 0.0002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(f"timed out after {timeout}s waiting for lock {lock_path}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.005)


# The seam fault tests use to inject ENOSPC and the like: every state write goes through it.
WriteHook = Callable[[Path, bytes], None]
_write_hook: WriteHook | None = None


def set_write_hook(hook: WriteHook | None) -> None:
    global _write_hook
    _write_hook = hook


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (caller holds the lock). Mode 0600."""
    ensure_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    mode = durability()
    try:
        if _write_hook is not None:
            _write_hook(path, data)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)  # umask may have narrowed it; never widened
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if mode == "full":
            dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise StorageError(f"could not write {path}: {reason}; the previous version is intact") from exc


def append_line(path: Path, line: bytes) -> None:
    """Append one line to a JSONL log with O_APPEND (one write(2): never interleaved)."""
    ensure_dir(path.parent)
    try:
        if _write_hook is not None:
            _write_hook(path, line)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
        try:
            os.write(fd, line if line.endswith(b"\n") else line + b"\n")
            if durability() != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise StorageError(f"could not append to {path}: {reason}") from exc


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from exc


def read_jsonl(path: Path, kind: type[T]) -> list[T]:
    """Every line of a JSONL log that decodes as ``kind``; a torn or foreign line (a writer
    killed mid-append, a hand edit) is skipped, never fatal."""
    decoder = msgspec.json.Decoder(kind)
    found = []
    for line in (read_bytes(path) or b"").splitlines():
        try:
            found.append(decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found


def quarantine(path: Path) -> Path:
    """Move a corrupt file aside (``{name}.corrupt-{ms}``) so its bytes are kept for a person."""
    from ipc.clock import now_ms

    target = path.with_name(f"{path.name}.corrupt-{now_ms()}")
    os.replace(path, target)
    return target
