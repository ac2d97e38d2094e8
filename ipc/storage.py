"""Writing state files so that a kill at any instant leaves something readable.

- :func:`atomic_write`: temp file in the same directory, fsync per the durability setting,
  ``os.replace``, mode 0600. A reader sees the old file or the new one, never a torn one;
  the temps of writers killed half-way go with a later write (:mod:`ipc.leftovers`).
- :func:`append_line`: one ``write(2)`` with ``O_APPEND`` to a JSONL log.
- :func:`write_at`: bytes written in place at an offset (the inbox's hot path; its callers
  detect and repair a torn tail, see :mod:`ipc.inbox_file`).

The caller holds the file's lock (:mod:`ipc.locks`) for every read-modify-write.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from ipc.boundary import decode_errors, os_errors, reason
from ipc.errors import StorageError
from ipc.leftovers import remove_dead_temps, temp_path
from ipc.osproc import alive
from ipc.paths import DIR_MODE, FILE_MODE, child_path
from ipc.settings import env

T = TypeVar("T")
FileKey = tuple[int, int, int]  # inode, mtime ns, size: whether a file changed since a look
Durability = Literal["none", "fsync", "full"]


def durability() -> Durability:
    """``AGENTTEAMS_DURABILITY``: none (survives process crashes: the default), fsync (also
    survives power loss of file contents), full (fsync the directory too)."""
    value = env("AGENTTEAMS_DURABILITY", "none")
    if value not in ("none", "fsync", "full"):
        raise StorageError(f"AGENTTEAMS_DURABILITY={value!r}; use one of none, fsync, full")
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
    with os_errors(f"cannot create directory {path}"):
        for directory in reversed(missing):
            try:
                directory.mkdir(mode=DIR_MODE)
            except FileExistsError:
                continue  # another process made it: its creator set the mode
            os.chmod(directory, DIR_MODE)


# The seam fault tests use to inject ENOSPC and the like: every state write goes through it.
WriteHook = Callable[[Path, bytes], None]
_write_hook: WriteHook | None = None


def set_write_hook(hook: WriteHook | None) -> None:
    global _write_hook
    _write_hook = hook


def atomic_write(path: Path, data: bytes) -> FileKey:
    """Replace ``path`` with ``data`` atomically (caller holds the lock). Mode 0600. Returns
    the written file's key (:func:`file_key`), taken from the file itself before it took
    ``path``'s name: a stat after could see another writer's file."""
    with atomic_write_from(path) as write:
        key = write(data)
    return key


@contextlib.contextmanager
def _becoming(tmp: Path, path: Path, intact: str) -> Iterator[None]:
    """A block that writes ``tmp`` and renames it to ``path``: if it fails, ``tmp`` is removed
    (nothing is left half-made), and an OSError is said as StorageError naming ``path``."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise StorageError(f"could not write {path}: {reason(exc)}{intact}") from exc
        raise


@contextlib.contextmanager
def atomic_write_from(path: Path) -> Iterator[Callable[[bytes], FileKey]]:
    """Replace ``path`` atomically with what is written through the function this yields,
    piece by piece (caller holds the lock); if the block raises, ``path`` is left as it was.
    Each piece written returns the file's key as it then is."""
    ensure_dir(path.parent)
    remove_dead_temps(path)  # killed writers' temps would pile up, megabytes each
    tmp = temp_path(path)
    mode = durability()
    with _becoming(tmp, path, "; the previous version is intact"):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)  # umask may have narrowed it; never widened

            def write(data: bytes) -> FileKey:
                if _write_hook is not None:
                    _write_hook(path, data)
                _write_all(fd, data)
                info = os.fstat(fd)  # a rename keeps the inode, mtime and size
                return (info.st_ino, info.st_mtime_ns, info.st_size)

            yield write
            if mode != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if mode == "full":
            _fsync_dir(path.parent)


PAGE = os.sysconf("SC_PAGE_SIZE")


def within_a_page(offset: int, length: int) -> bool:
    """Whether a write of ``length`` bytes at ``offset`` stays inside one page of the file: the
    kernel copies a write page by page and stops between pages on a fatal signal, so only such
    a write is whole or absent after a kill -9 (one that crosses a page can be cut there)."""
    return length <= 0 or offset // PAGE == (offset + length - 1) // PAGE


def write_at(fd: int, path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` of the open file (caller holds the lock)."""
    try:
        if _write_hook is not None:
            _write_hook(path, data)
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
        if durability() != "none":
            os.fsync(fd)
    except OSError as exc:
        raise StorageError(f"could not write {path}: {reason(exc)}") from exc


IN_PLACE_MAX = 4096  # one page: a write(2) this size at offset 0 is never torn by a kill


def rewrite(path: Path, data: bytes, *, grow: bool = True) -> None:
    """Replace a small state file's contents in place (caller holds the lock): one ``write(2)``
    at offset 0 of at most a page, which a kill can stop only before it starts (the kernel
    copies a write page by page and checks for a fatal signal before each), so the file is
    the old version or the new one; a reader that catches the copy half-done reads again
    (:func:`read_settled`). No rename, no truncate (ext4 flushes on both, ~200 µs): a shorter
    version is padded with spaces, which JSON ignores, to one byte past the old size, so the
    size changes with every write and a cache keyed on it never misses one (``grow=False``:
    to the old size, for a file no one caches by its key). A missing file,
    one past a page, or a durability setting that wants fsync, takes :func:`atomic_write`."""
    if len(data) >= IN_PLACE_MAX or durability() != "none":
        atomic_write(path, data)
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        create(path, data)
        return
    except OSError as exc:
        raise StorageError(f"could not write {path}: {reason(exc)}; the previous version is intact") from exc
    try:
        size = os.fstat(fd).st_size
        target = size + 1 if grow else size
        padded = data + b" " * (target - len(data)) if len(data) < target else data
        if len(padded) > IN_PLACE_MAX:
            os.close(fd)
            fd = -1
            atomic_write(path, data)
            return
        if _write_hook is not None:
            _write_hook(path, padded)
        if os.pwrite(fd, padded, 0) != len(padded):
            raise StorageError(f"could not write {path}: a short write")
    except OSError as exc:  # a one-page write that fails has copied nothing
        raise StorageError(f"could not write {path}: {reason(exc)}; the previous version is intact") from exc
    finally:
        if fd >= 0:
            os.close(fd)


# Making a file (an inode) costs ~300 µs on ext4 here, renaming one to a new name ~20 µs: a
# new file is written into a spare this process made earlier and renamed into place.
_spares: dict[Path, Path] = {}
_spare_count = itertools.count()
_spares_removed_at_exit = False
_SPARE = re.compile(r"^\.spare\.([0-9]+)\.[0-9]+$")
_looked_for_dead: set[Path] = set()  # directories whose dead processes' spares were removed


def create(path: Path, data: bytes) -> None:
    """Write a new file (caller holds the lock, and ``path`` does not exist): into this
    process's spare in the directory when it has one (see :func:`make_spare`), then renamed
    to ``path``, whole; else as :func:`atomic_write` does."""
    spare = _spares.pop(path.parent, None)
    if spare is None or durability() != "none":
        atomic_write(path, data)
        return
    try:
        fd = os.open(spare, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        atomic_write(path, data)
        return
    with _becoming(spare, path, ""):
        try:
            if _write_hook is not None:
                _write_hook(path, data)
            _write_all(fd, data)
        finally:
            os.close(fd)
        try:
            os.rename(spare, path)
        except FileNotFoundError:  # removed by a process that saw its pid dead: another pid namespace's
            atomic_write(path, data)


def make_spare(directory: Path) -> None:
    """Make this process's spare file in ``directory`` if it has none (off the hot path: after
    a create has rung whom it wakes). A hidden name no reader of the layout lists; removed
    when the process exits."""
    if directory in _spares or durability() != "none":
        return
    if directory not in _looked_for_dead:
        _looked_for_dead.add(directory)
        _remove_dead_spares(directory)
    spare = child_path(directory, f".spare.{os.getpid()}.{next(_spare_count)}")
    try:
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except OSError:
        return  # only a cost: the next create makes its file the slow way
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    global _spares_removed_at_exit
    if not _spares_removed_at_exit:
        atexit.register(remove_spares)
        _spares_removed_at_exit = True
    _spares[directory] = spare


def _remove_dead_spares(directory: Path) -> None:
    """The spares of processes that are gone (killed before they could remove their own):
    made by this code, as their name says, so this code's to remove. Once per process and
    directory: a listing of a task list costs as much as many creates."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        found = _SPARE.match(name)
        if found is not None and not alive(int(found.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(directory / name)


def remove_spares() -> None:
    """Remove this process's spare files (at exit; a command that ends with ``os._exit``
    calls it itself)."""
    for spare in _spares.values():
        with contextlib.suppress(OSError):
            os.unlink(spare)
    _spares.clear()


def _forget_spares_after_fork() -> None:
    _spares.clear()  # the parent's: a child that used one would take it from under the parent


os.register_at_fork(after_in_child=_forget_spares_after_fork)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def append_line(path: Path, line: bytes) -> None:
    """Append one line to a JSONL log with O_APPEND (one write(2): never interleaved). A
    log whose last line a killed writer left without its end gets one first: this line
    would otherwise be joined to it, and readers would skip both."""
    ensure_dir(path.parent)
    try:
        if _write_hook is not None:
            _write_hook(path, line)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            os.write(fd, (b"\n" if torn else b"") + (line if line.endswith(b"\n") else line + b"\n"))
            if durability() != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageError(f"could not append to {path}: {reason(exc)}") from exc


def read_bytes(path: Path | str) -> bytes | None:
    """The file's bytes, or None if it does not exist. (Plain os calls: this is on the hot
    path of every hand-off, where io's buffered objects cost more than the read.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {reason(exc)}") from exc
    try:
        chunks = []
        size = os.fstat(fd).st_size + 1  # one more: a file that grew meanwhile is read on
        while True:
            chunk = os.read(fd, max(size, 65536))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except IsADirectoryError as exc:
        raise StorageError(f"cannot read {path}: it is a directory") from exc
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {reason(exc)}") from exc
    finally:
        os.close(fd)


def read_jsonl(path: Path, kind: type[T]) -> list[T]:
    """Every line of a JSONL log that decodes as ``kind``; a torn or foreign line (a writer
    killed mid-append, a hand edit) is skipped, never fatal."""
    return _decode_lines(read_bytes(path) or b"", kind)


def read_jsonl_after(path: Path, kind: type[T], offset: int) -> tuple[list[T], int]:
    """The lines of a JSONL log past byte ``offset`` that decode as ``kind``, and the offset
    after the last complete line: a log followed as it grows, at the cost of what is new. A
    line still being written waits for its newline; a file shorter than ``offset`` (deleted and
    made again) is read from its start."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < offset:
                offset = 0
            f.seek(offset)
            data = f.read(size - offset)
    except FileNotFoundError:
        return [], 0
    end = data.rfind(b"\n") + 1
    return _decode_lines(data[:end], kind), offset + end


def lines_from_end(path: Path, chunk: int = 1 << 16) -> Iterator[bytes]:
    """The non-empty lines of ``path``, last first, read a chunk at a time from the end: a
    reader that wants only the recent part of a long log stops early and pays for that part."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, across the yields
    except FileNotFoundError:
        return
    with f:
        pos = os.fstat(f.fileno()).st_size
        rest = b""
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            f.seek(pos)
            lines = (f.read(step) + rest).split(b"\n")
            rest = lines[0]  # its start may be in the chunk before
            yield from (line for line in reversed(lines[1:]) if line)
        if rest:
            yield rest


def _decode_lines(data: bytes, kind: type[T]) -> list[T]:
    decoder = msgspec.json.Decoder(kind)
    found = []
    for line in data.splitlines():
        try:
            found.append(decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found


SETTLE_SECONDS = 0.05


def read_settled(path: Path, decode: Callable[[bytes], T], what: str) -> T | None:
    """``decode`` of the file's bytes, or None if it does not exist. A file caught mid-write
    by a writer that rewrites in place (Claude Code, claude-code-teams-mcp) is read again for
    up to 50 ms before it is called corrupt."""
    found = read_settled_bytes(path, decode, what)
    return None if found is None else found[1]


def read_settled_bytes(path: Path, decode: Callable[[bytes], T], what: str) -> tuple[bytes, T] | None:
    """As :func:`read_settled`, with the bytes the value was decoded from."""
    deadline = time.monotonic() + SETTLE_SECONDS
    delay = 0.001
    while True:
        data = read_bytes(path)
        if data is None:
            return None
        try:
            return data, decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            if time.monotonic() >= deadline:
                with decode_errors(path, what):
                    return data, decode(data)
            time.sleep(delay)
            delay = min(delay * 2, 0.01)


def file_key(path: Path) -> FileKey | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)
