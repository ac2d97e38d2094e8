"""The one lock seam: every mutation of a shared file takes its locks here, in one fixed order.

Several programs write these files, each with its own lock:

1. our fast path: ``flock`` on a descriptor of ``{dir}/{stem}.lock`` (``inboxes/alice.lock``
   for ``inboxes/alice.json``; the task list's ``tasks/{team}/.lock`` itself). That is also
   agent-team-mail's inbox lock and claude-code-teams-mcp's task-list lock, so those peers
   are excluded for free. The kernel drops a flock when its holder dies.
2. peers' flocks: claude-code-teams-mcp's ``inboxes/.lock`` (for any inbox).
3. in a Claude Code root, Claude Code's own lock: proper-lockfile's ``mkdir {file}.lock``,
   with bounded retries, stale after 10 s by mtime (refreshed while held), removed on
   release. A lock directory left by an agentteams writer that was killed is recognised
   (a signature in its mtime's nanoseconds plus a flock on the directory) and cleared at
   once; anything else is cleared only when proper-lockfile would clear it.

Nothing here ever leaves a regular file at a path Claude Code uses as a lock directory.
(Some 400 lines, on purpose: the lock order is only safe if it is read as one whole.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import stat
import threading
import time
from pathlib import Path
from typing import Any

from ipc.boundary import filelock_errors, reason
from ipc.errors import LockTimeout, StorageError
from ipc.lock_settings import claude_locks_setting, default_timeout, lock_backend, spin_seconds
from ipc.paths import FILE_MODE, child_path

STALE_SECONDS = 10.0  # proper-lockfile's default, as Claude Code uses it
REFRESH_SECONDS = 5.0  # proper-lockfile refreshes at stale / 2
_SIGNATURE_NS = 424_242  # sub-millisecond part of the mtime of our lock directories


def own_lock_path(path: Path) -> Path:
    """Our flock for ``path``: ``X.lock`` beside ``X.json``; a ``.lock`` file is its own."""
    if path.name == ".lock":
        return path
    return path.with_name((path.stem if path.suffix == ".json" else path.name) + ".lock")


def claude_lock_path(path: Path) -> Path:
    """proper-lockfile's lock directory for ``path``, as Claude Code names it."""
    return child_path(path.parent, path.name + ".lock")  # one per task: not interned


# ---------------------------------------------------------------- Claude Code roots

_CLAUDE_MARKERS = (
    ".claude.json",  # its settings in a CLAUDE_CONFIG_DIR (agentteams writes it before it starts claude)
    "projects",
    "settings.json",
    ".credentials.json",
    "statsig",
    "todos",
    "shell-snapshots",
    "session-env",
    "history.jsonl",
    "plugins",
    "ide",
)
_root_cache: dict[Path, tuple[float, bool]] = {}
_RECHECK_SECONDS = 5.0


def is_claude_root(root: Path) -> bool:
    """True if Claude Code may write under ``root``: it is ``~/.claude`` or
    ``$CLAUDE_CONFIG_DIR`` (symlinks resolved), or it already holds Claude Code's own files.
    ``AGENTTEAMS_CLAUDE_LOCKS=always|never`` forces the answer."""
    setting = claude_locks_setting()
    if setting != "auto":
        return setting == "always"
    now = time.monotonic()
    cached = _root_cache.get(root)
    if cached is not None and (cached[1] or now - cached[0] < _RECHECK_SECONDS):
        return cached[1]  # once Claude Code's, always: it may write here at any time
    answer = _looks_like_claude_root(root)
    _root_cache[root] = (now, answer)
    return answer


def note_claude_root(root: Path) -> None:
    """Claude Code is about to run under ``root`` (a claude-code teammate): lock for it now."""
    _root_cache[root] = (time.monotonic(), True)


def _looks_like_claude_root(root: Path) -> bool:
    try:
        resolved = root.resolve()
    except OSError:
        return False
    known = [Path.home() / ".claude"]
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        known.append(Path(os.environ["CLAUDE_CONFIG_DIR"]).expanduser())
    for candidate in known:
        with contextlib.suppress(OSError):
            if candidate.resolve() == resolved:
                return True
    return any((resolved / marker).exists() for marker in _CLAUDE_MARKERS)


# ---------------------------------------------------------------- flock


def _open_lock_file(path: Path) -> int:
    try:  # no context manager here: this is on every send's path
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise StorageError(f"cannot open lock {path}: {reason(exc)}") from exc


class _Spinning:
    """Whether a wait for a busy flock spins first: while at least one in three of this
    process's recent spins won the lock. Where fewer do, each lost spin costing 200 µs of a
    CPU that others need (64 teammates reporting to one lead at once lost three spins in
    four; 16 writers into one inbox, one in four), only every fourth wait spins, to see
    whether that has changed."""

    def __init__(self) -> None:
        self.odds = 1.0  # a moving average of spins won (1) and lost (0)
        self.waits = 0

    def budget(self) -> float:
        self.waits += 1
        return spin_seconds() if self.odds >= 1 / 3 or self.waits % 4 == 0 else 0.0

    def note(self, won: bool) -> None:
        self.odds += (won - self.odds) / 8


_spinning = _Spinning()


def _flock(fd: int, path: Path, deadline: float | None) -> None:
    """Take the flock on ``fd``: retried at once for a while (:class:`_Spinning`), then
    polled (a blocking flock cannot time out): at most every 5 ms while the wait is short,
    then less often the longer it lasts, up to every 50 ms with jitter, so that hundreds of
    waiters do not spend the CPU the holder needs to finish.

    Why the spin: an append holds an inbox's lock some 25 µs. A waiter that went to sleep at
    once left the lock to whoever held it last, which took it again and again while the
    other core idled: 16 writers appended no faster than one (measured: 14,500 appends/s
    without the spin, 22,000 with it, on 2 cores)."""
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    delay = 0.0002
    spin = -1.0  # decided at the first refusal; 0 once the spin is over
    started = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if spin > 0:
                _spinning.note(won=True)
            return
        except BlockingIOError:
            now = time.monotonic()
            if spin < 0:
                spin = _spinning.budget()
            if now - started < spin and now < deadline:
                continue
            if spin > 0:
                _spinning.note(won=False)
                spin = 0.0
            if now >= deadline:
                raise LockTimeout(f"timed out waiting for lock {path}") from None
            time.sleep(delay)
            cap = min(0.05, max(0.005, (now - started) / 10))
            delay = min(delay * 2, cap) * random.uniform(0.75, 1.25)


# ---------------------------------------------------------------- Claude Code's mkdir lock


class _Refresher:
    """Keeps the mtime of long-held lock directories fresh, as proper-lockfile does, so
    Claude Code never judges a lock we hold to be stale."""

    def __init__(self) -> None:
        self.held: dict[Path, float] = {}
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, path: Path) -> None:
        with self.guard:
            self.held[path] = time.monotonic()
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="lock-refresh", daemon=True)
                self.thread.start()

    def remove(self, path: Path) -> None:
        with self.guard:
            self.held.pop(path, None)

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            # Stamped under the guard: release() forgets a lock (under it) before removing
            # its directory, so a late stamp cannot sign a directory Claude Code made anew at
            # that path, which another of our processes would then take for ours and remove.
            with self.guard:
                for path, stamped in self.held.items():
                    if now - stamped >= REFRESH_SECONDS:
                        self.held[path] = now
                        with contextlib.suppress(OSError):
                            _stamp(path)


_refresher = _Refresher()


def _forget_after_fork() -> None:
    # A forked child holds none of its parent's locks, and has no refresher thread.
    global _refresher
    _refresher = _Refresher()


os.register_at_fork(after_in_child=_forget_after_fork)


def _stamp(path: Path) -> None:
    """Set the directory's mtime to now, with our signature in its sub-millisecond part."""
    ns = (time.time_ns() // 1_000_000) * 1_000_000 + _SIGNATURE_NS
    os.utime(path, ns=(ns, ns))


class _DirLock:
    """One proper-lockfile lock directory held by this process."""

    def __init__(self, path: Path, deadline: float | None) -> None:
        self.path = path
        self.fd = -1
        delay = 0.005  # 2.1.330 retries inbox locks 5-100 ms apart
        while True:
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                if self._clear_if_dead():
                    continue
            except OSError as exc:
                raise StorageError(f"cannot take Claude Code's lock {path}: {exc.strerror}") from exc
            else:
                self._own()
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeout(
                    f"timed out waiting for Claude Code's lock {path} (held by another program)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _own(self) -> None:
        # A flock on the directory says "an agentteams process holds this, alive".
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        _stamp(self.path)
        _refresher.add(self.path)

    def _clear_if_dead(self) -> bool:
        """True if the existing lock was removed (stale, or left by a dead writer of ours)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return True
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            # An older agentteams left its flock file here; Claude Code can never clear it.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            return True
        if not stat.S_ISDIR(info.st_mode):
            raise StorageError(
                f"{self.path} is not a lock directory; Claude Code cannot lock the file beside it until it is removed"
            )
        stale = info.st_mtime < time.time() - STALE_SECONDS
        if not stale and info.st_mtime_ns % 1_000_000 == _SIGNATURE_NS:
            stale = self._holder_gone()
        if not stale:
            return False
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise StorageError(f"cannot clear stale lock {self.path}: {exc.strerror}") from exc
            return False
        return True

    def _holder_gone(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True  # signed by us, and no process of ours holds it: its writer died
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    def release(self) -> None:
        _refresher.remove(self.path)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.path)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ---------------------------------------------------------------- the seam


class Guard:
    """The locks held for one mutation. :meth:`also` takes Claude Code's lock of another
    file while they are held (its per-task lock, in a Claude Code root)."""

    def __init__(self, root_is_claude: bool, deadline: float | None) -> None:
        self.claude = root_is_claude
        self.deadline = deadline
        self.dirs: list[_DirLock] = []
        self.covered: set[Path] = set()

    def also(self, path: Path) -> None:
        if not self.claude:
            return
        lock_dir = claude_lock_path(path)
        if lock_dir in self.covered:
            return
        self.dirs.append(_DirLock(lock_dir, self.deadline))
        self.covered.add(lock_dir)

    def release(self) -> None:
        while self.dirs:
            self.dirs.pop().release()


class _Plan:
    """Which lock files one target needs, worked out once per process."""

    __slots__ = ("paths",)

    def __init__(self, path: Path) -> None:
        # Ours, then claude-code-teams-mcp's for an inbox: taken even before that peer made
        # it, so its first write races no one.
        own = own_lock_path(path)
        self.paths = (own, path.parent / ".lock") if path.parent.name == "inboxes" else (own,)


_plans: dict[Path, _Plan] = {}


class locked:  # noqa: N801 - used like a function: ``with locked(path, root=root) as guard``
    """Hold every lock a mutation of ``path`` needs, in the fixed order: our flock, peers'
    flocks, Claude Code's lock (in a Claude Code root). ``timeout`` -1
    means this process's default; None waits for ever.

    A class rather than a generator, and the lock paths worked out once per target: it is
    on the hot path of every send and every hand-off."""

    __slots__ = ("path", "root", "timeout", "fds", "guard", "filelocks")

    def __init__(self, path: Path, *, root: Path, timeout: float | None = -1.0) -> None:
        self.path = path
        self.root = root
        self.timeout = default_timeout() if timeout is not None and timeout < 0 else timeout
        spin_seconds()  # a bad setting refuses every lock, not only the first one found busy
        self.fds: list[int] = []
        self.filelocks: list[Any] = []
        self.guard: Guard | None = None

    def __enter__(self) -> Guard:
        plan = _plans.get(self.path)
        if plan is None:
            plan = _plans[self.path] = _Plan(self.path)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        claude = is_claude_root(self.root)  # asked before the flocks: they are held for less
        try:
            if lock_backend() == "filelock":
                for path in plan.paths:
                    self._filelock(path, deadline)
            else:
                for path in plan.paths:  # all opened before any is taken: the first is held for less
                    self.fds.append(_open_lock_file(path))
                for fd, path in zip(self.fds, plan.paths, strict=True):
                    _flock(fd, path, deadline)
            self.guard = Guard(claude, deadline)
            self.guard.also(self.path)
        except BaseException:
            self._release()
            raise
        return self.guard

    def _filelock(self, path: Path, deadline: float | None) -> None:
        import filelock

        remaining = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        lock = filelock.UnixFileLock(str(path), timeout=remaining, mode=FILE_MODE)
        with filelock_errors(path, self.timeout):
            lock.acquire()
        self.filelocks.append(lock)

    def _release(self) -> None:
        if self.guard is not None:
            self.guard.release()
        for lock in reversed(self.filelocks):
            lock.release()
        for fd in reversed(self.fds):
            os.close(fd)  # closing the descriptor releases the flock
        self.fds.clear()
        self.filelocks.clear()

    def __exit__(self, *exc: object) -> None:
        self._release()
