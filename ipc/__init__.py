"""The contract every agentteams process shares: schemas, paths, locked state on disk
(mailboxes, task list, team config), and the ZeroMQ doorbell, link and control sockets.

The public surface is what this module exports; the machinery is in its submodules.
"""

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
    Timeout,
    TransportError,
    UnsafeRuntimeDir,
)
from ipc.launch import LaunchSpec, SupervisorOptions, TeammateOptions, TeammateStatus, TeamStatus
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths, resolve_root
from ipc.tasks import ClaimResult, TaskList, claim_prompt

__all__ = [
    "AgentTeamsError",
    "ClaimResult",
    "Conflict",
    "CorruptFile",
    "InvalidInput",
    "LaunchSpec",
    "LockTimeout",
    "Mailbox",
    "Messenger",
    "NotFound",
    "NotRunning",
    "StorageError",
    "SupervisorError",
    "SupervisorOptions",
    "TaskList",
    "TeamConfigStore",
    "TeamPaths",
    "TeamStatus",
    "TeammateOptions",
    "TeammateStatus",
    "Timeout",
    "TransportError",
    "UnsafeRuntimeDir",
    "claim_prompt",
    "list_teams",
    "resolve_root",
]
