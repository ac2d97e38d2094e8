"""The contract every agentteams process shares: schemas, paths, locked atomic state on disk
(mailboxes, task list, team config), and the ZeroMQ wake and control channels."""

from ipc.config import TeamConfigStore, list_teams
from ipc.errors import (
    AgentTeamsError,
    Conflict,
    CorruptFile,
    InvalidInput,
    LockTimeout,
    NotFound,
    NotRunning,
    StorageError,
    SupervisorError,
    UnsafeRuntimeDir,
)
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths, resolve_root
from ipc.tasks import ClaimResult, TaskList, claim_prompt

__all__ = [
    "AgentTeamsError",
    "ClaimResult",
    "Conflict",
    "CorruptFile",
    "InvalidInput",
    "LockTimeout",
    "Mailbox",
    "NotFound",
    "NotRunning",
    "StorageError",
    "SupervisorError",
    "TaskList",
    "TeamConfigStore",
    "TeamPaths",
    "UnsafeRuntimeDir",
    "claim_prompt",
    "list_teams",
    "resolve_root",
]
