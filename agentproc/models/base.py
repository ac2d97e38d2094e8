"""One interface for every model backend: take a turn's input, call tools, stop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from agentproc.tools import ToolBox
from agentproc.transcript import Transcript
from ipc.agents import AgentDefinition
from ipc.launch import LaunchSpec
from ipc.schemas import InboxMessage, ProtocolBody

# message: one inbox message; claim: a task claimed; shutdown: a shutdown request; user: from
# the person (or the lead's prompt); notification: a background subagent ended; inbox: the
# lead's batch of inbox messages and events.
TurnKind = Literal["message", "claim", "shutdown", "user", "notification", "inbox"]


@dataclass(frozen=True)
class Turn:
    kind: TurnKind
    text: str  # what a language model is shown (messages wrapped as <teammate-message>)
    sender: str = ""
    body: ProtocolBody | None = None  # the protocol body, when the message carried one
    task_id: str = ""  # for claim turns and task assignments
    content: str = ""  # the raw message text, unwrapped
    is_prompt: bool = False  # the spawn prompt: the first message of the inbox, from the lead
    batch: tuple[InboxMessage, ...] = ()  # the lead's turn: the inbox messages it carries


@dataclass(frozen=True)
class TurnOutcome:
    failure_reason: str = ""  # non-empty: the turn ended on an error (idleReason "failed")
    final_text: str = ""  # the model's last words (2.1.330's idle notification ``result``)
    budget_reached: bool = False  # no request was made: a budget of the team's is used up


@dataclass(frozen=True)
class ModelContext:
    """What a model backend needs to know about its agent: no more, and not the loop."""

    spec: LaunchSpec
    definition: AgentDefinition
    transcript: Transcript


class Model(Protocol):
    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome: ...


def wrap_message(sender: str, text: str, color: str = "", summary: str = "") -> str:
    """A teammate message as Claude Code wraps it for the model, so prompts written for
    Claude Code read the same here."""
    return f'<teammate-message teammate_id="{sender}" color="{color}" summary="{summary}">\n{text}\n</teammate-message>'
