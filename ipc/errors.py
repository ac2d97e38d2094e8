"""One exception hierarchy for agentteams.

Every error a person can see derives from :class:`AgentTeamsError` and carries a one-line
message that says what was wrong and what would be right. Backend exceptions (OSError,
msgspec, zmq, filelock, psutil) are mapped into these at the boundary, by the context
managers of :mod:`ipc.boundary`.
"""

from __future__ import annotations


class AgentTeamsError(Exception):
    """Base of every error agentteams raises on purpose."""

    def __init__(self, message: str) -> None:
        # One line, always: a multi-line message would break `--json` consumers and logs.
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        return str(self.args[0])


class InvalidInput(AgentTeamsError):
    """A name, field or argument that is not acceptable; nothing was changed."""


class NotFound(AgentTeamsError):
    """A team, member, task or request that does not exist."""


class Conflict(AgentTeamsError):
    """The operation clashes with the current state (already exists, still running, cycle)."""


class LimitReached(Conflict):
    """A limit of the host (open files, sockets) leaves no room; the message names the limit
    and what to change. Nothing was changed."""


class Forbidden(AgentTeamsError):
    """The caller may not do this as who it says: an agent's tool asking for the lead's
    authority. Nothing was changed."""


class Halted(AgentTeamsError):
    """An agent told to stop mid-turn (an in-process teammate, by its host): the turn ends
    where it is and acts on nothing more, as a process stopped by a signal would."""


class TaskFailed(AgentTeamsError):
    """A task a job waited for failed; its error is in the task (``metadata.lastError``)."""


class CorruptFile(AgentTeamsError):
    """A state file that cannot be parsed; its bytes are kept, never silently deleted."""

    def __init__(self, path: object, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


class StorageError(AgentTeamsError):
    """Writing or locking state failed (disk full, permissions); the previous state is intact."""


class LockTimeout(StorageError):
    """A lock could not be taken within its timeout."""


class UnsafeRuntimeDir(AgentTeamsError):
    """The runtime directory is owned by another user or open to others."""


class NotRunning(AgentTeamsError):
    """The team's supervisor (or the process asked for) is not running."""


class SupervisorError(AgentTeamsError):
    """The supervisor answered a command with an error."""


class TransportError(AgentTeamsError):
    """A socket could not be created, bound or used."""


class Timeout(AgentTeamsError, TimeoutError):
    """Something did not happen in the time allowed. Also a builtin ``TimeoutError``, so
    callers that catch that keep working."""


def internal_error_line(exc: BaseException) -> str:
    """What every door says of a bug of ours (not bad input): one line, the traceback logged."""
    return " ".join(f"internal error: {type(exc).__name__}: {exc} (please report this)".split())
