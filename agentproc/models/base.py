"""One interface for every model backend: take a turn's input, call tools, stop."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from agentproc.tools import ToolBox
from agentproc.transcript import Transcript
from ipc.agents import AgentDefinition
from ipc.launch import LaunchSpec
from ipc.replies import SubagentResult
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
    shown: str = ""  # what a person watching the turn is shown, when not ``text`` (no wrappers)
    # A notification turn's subagent: marked told once the turn's input is recorded.
    notifies: SubagentResult | None = None


@dataclass(frozen=True)
class TurnOutcome:
    failure_reason: str = ""  # non-empty: the turn ended on an error (idleReason "failed")
    final_text: str = ""  # the model's last words (2.1.330's idle notification ``result``)
    budget_reached: bool = False  # no request was made: a budget of the team's is used up
    halted: bool = False  # stopped mid-turn (agentproc.context.AgentContext.halt): not a failure


@dataclass(frozen=True)
class ModelContext:
    """What a model backend needs to know about its agent: no more, and not the loop."""

    spec: LaunchSpec
    definition: AgentDefinition
    transcript: Transcript


class Model(Protocol):
    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome: ...


def wrap_message(sender: str, text: str, color: str = "", summary: str = "", *, verified: bool = True) -> str:
    """A teammate message as Claude Code wraps it for the model, so prompts written for
    Claude Code read the same here. Nothing inside can close or open a wrapper (it is made
    inert), and an entry from a writer that cannot sign says so (``verified="false"``)."""
    mark = "" if verified else ' verified="false"'
    return (
        f'<teammate-message teammate_id="{_attr(sender)}" color="{_attr(color)}" '
        f'summary="{_attr(summary)}"{mark}>\n{inert(text)}\n</teammate-message>'
    )


# An opening or closing tag of a wrapper the model is shown (however spaced or cased).
_WRAPPER_TAG = re.compile(r"<(\s*/?\s*)(teammate-message|system-event|task-notification)", re.IGNORECASE)


def inert(text: str) -> str:
    """``text`` with every wrapper tag defused (``<`` written ``&lt;``): shown, never obeyed."""
    return _WRAPPER_TAG.sub(r"&lt;\1\2", text)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
