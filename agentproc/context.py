"""What a teammate's tools share during one process lifetime."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from agentproc.channel import Channel
from agentproc.identity import Identity


@dataclass
class AgentContext:
    identity: Identity
    channel: Channel
    # Set by tools during a turn; read by the loop when it goes idle.
    last_dm: tuple[str, str] | None = None  # (peer, summary) of the last DM to a peer
    completed: tuple[str, str] | None = None  # (task id, status) of a task finished this turn
    exit_requested: bool = False
    current_task: str = ""
    tool_groups: set[int] = field(default_factory=set)  # process groups of running tools
    # Permission state: the mode can change when a plan is approved.
    permission_mode: str = "acceptEdits"
    plan_mode: bool = False
    frames: deque[Any] = field(default_factory=deque)  # doorbell frames that arrived mid-turn
    transcript: Any = None  # agentproc.transcript.Transcript

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def pane_id(self) -> str:
        return f"process:{os.getpid()}"
