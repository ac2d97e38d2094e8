"""The contract every agentteams process shares: schemas, paths, locked state on disk
(mailboxes, task list, team config), and the ZeroMQ doorbell, link and control sockets.

The public surface is what this module exports; the machinery is in its submodules, which
are imported on first use (a command-line call that needs one of them does not pay for
the rest).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ipc.config import TeamConfigStore
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
    from ipc.launch import LaunchSpec, SupervisorOptions
    from ipc.mailbox import Mailbox
    from ipc.messaging import Messenger
    from ipc.options import TeammateOptions
    from ipc.paths import TeamPaths, resolve_root
    from ipc.replies import TeammateStatus, TeamStatus
    from ipc.task_rules import ClaimResult, claim_prompt
    from ipc.tasks import TaskList
    from ipc.team_list import list_teams

_HOME = {
    "TeamConfigStore": "ipc.config",
    "list_teams": "ipc.team_list",
    "AgentTeamsError": "ipc.errors",
    "Conflict": "ipc.errors",
    "CorruptFile": "ipc.errors",
    "InvalidInput": "ipc.errors",
    "LockTimeout": "ipc.errors",
    "NotFound": "ipc.errors",
    "NotRunning": "ipc.errors",
    "StorageError": "ipc.errors",
    "SupervisorError": "ipc.errors",
    "Timeout": "ipc.errors",
    "TransportError": "ipc.errors",
    "UnsafeRuntimeDir": "ipc.errors",
    "LaunchSpec": "ipc.launch",
    "SupervisorOptions": "ipc.launch",
    "TeammateOptions": "ipc.options",
    "TeammateStatus": "ipc.replies",
    "TeamStatus": "ipc.replies",
    "Mailbox": "ipc.mailbox",
    "Messenger": "ipc.messaging",
    "TeamPaths": "ipc.paths",
    "resolve_root": "ipc.paths",
    "ClaimResult": "ipc.task_rules",
    "TaskList": "ipc.tasks",
    "claim_prompt": "ipc.task_rules",
}
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


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'ipc' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
