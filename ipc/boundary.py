"""Where backend errors become ours: one context manager per backend, as httpx maps
httpcore's. Code that calls into zmq, the file system, msgspec, filelock or psutil does it
inside one of these, so a caller only ever sees :mod:`ipc.errors`."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

import msgspec

from ipc.errors import (
    CorruptFile,
    InvalidInput,
    LockTimeout,
    StorageError,
    Timeout,
    TransportError,
)


def reason(exc: OSError) -> str:
    """A short reason for an OSError, in words a person knows."""
    if exc.errno == errno.ENOSPC:
        return "disk full"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)


@contextlib.contextmanager
def os_errors(what: str) -> Iterator[None]:
    """OSError → StorageError("{what}: {reason}")."""
    try:
        yield
    except OSError as exc:
        raise StorageError(f"{what}: {reason(exc)}") from exc


@contextlib.contextmanager
def decode_errors(path: object, what: str) -> Iterator[None]:
    """msgspec's decode and validation errors → CorruptFile naming the file."""
    try:
        yield
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptFile(path, f"not a valid {what} ({exc})") from exc


@contextlib.contextmanager
def input_errors(what: str) -> Iterator[None]:
    """msgspec's decode and validation errors on input from a peer → InvalidInput."""
    try:
        yield
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidInput(f"malformed {what}: {exc}") from exc


@contextlib.contextmanager
def zmq_errors(what: str) -> Iterator[None]:
    """zmq.Again → Timeout; any other ZMQError → TransportError."""
    import zmq

    try:
        yield
    except zmq.Again as exc:
        raise Timeout(f"{what}: timed out") from exc
    except zmq.ZMQError as exc:
        raise TransportError(f"{what}: {exc.strerror}") from exc


@contextlib.contextmanager
def filelock_errors(path: object, timeout: float | None) -> Iterator[None]:
    """filelock.Timeout → LockTimeout."""
    import filelock

    try:
        yield
    except filelock.Timeout as exc:
        raise LockTimeout(f"timed out after {timeout}s waiting for lock {path}") from exc
