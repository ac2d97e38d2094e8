"""The teammate loop of SPEC §7: handle → idle notification → wait → next input by priority.

Priorities when choosing the next input (seed 000 §5):
1. in-memory user messages pushed by the lead over the PAIR,
2. a shutdown_request (even if older unread messages exist),
3. unread messages from team-lead,
4. any other unread message,
5. auto-claim a task.
"""

from __future__ import annotations

import logging
import os
from collections import deque

from agentproc import agents, hooks
from agentproc.channel import Channel
from agentproc.context import AgentContext
from agentproc.identity import Identity
from agentproc.models import Model, Turn, TurnOutcome, load_model, wrap_message
from agentproc.tools import ToolBox, toolbox_for
from agentproc.transcript import Transcript
from ipc import messaging, probe
from ipc.clock import now_iso
from ipc.config import TeamConfigStore
from ipc.mailbox import Mailbox
from ipc.paths import request_epoch_ms
from ipc.schemas import (
    LEAD_NAME,
    IdleNotification,
    InboxMessage,
    ShutdownRequest,
    TaskAssignment,
    parse_body,
)
from ipc.tasks import TaskList, claim_prompt
from ipc.wake import Frame, UserMessage

log = logging.getLogger("agentteams.agent")
MAX_IDLE_BLOCKS = 5


def choose_message(messages: list[InboxMessage]) -> int | None:
    """Priorities 2–4 over an inbox: the index of the message to take next, or None."""
    unread = [(i, m) for i, m in enumerate(messages) if not m.read]
    for i, m in unread:
        if isinstance(parse_body(m.text), ShutdownRequest):
            return i
    for i, m in unread:
        if m.from_ == LEAD_NAME:
            return i
    return unread[0][0] if unread else None


class AgentLoop:
    def __init__(self, identity: Identity, channel: Channel, model: Model | None = None) -> None:
        self.identity = identity
        self.definition = agents.resolve(identity.agent_type, identity.cwd)
        self.ctx = AgentContext(identity=identity, channel=channel)
        # A mode given on the command line wins, then the agent definition's; a teammate
        # spawned with neither accepts edits inside its cwd (see agentproc.permissions).
        self.ctx.permission_mode = identity.permission_mode or self.definition.permission_mode or "acceptEdits"
        self.ctx.plan_mode = identity.plan_mode_required
        self.ctx.transcript = Transcript(identity.root, identity.team, identity.name)
        self.tools: ToolBox = toolbox_for(self.ctx, self.definition)
        self.model = model or load_model(self.definition.model if identity.model == "inherit" and self.definition.model else identity.model, self)
        self.idle_blocks = 0
        member = TeamConfigStore(identity.root, identity.team).config_member(identity.name)
        self.spawn_prompt = member.prompt if member is not None and isinstance(member.prompt, str) else None
        self.mailbox = Mailbox(identity.root, identity.team, identity.name)
        self.tasks = TaskList(identity.root, identity.team)
        self.user_queue: deque[str] = deque()
        self.idle = False

    # ------------------------------------------------------------ inputs

    def absorb(self, frames: list[Frame]) -> None:
        frames = [*self.ctx.frames, *frames]
        self.ctx.frames.clear()
        for frame in frames:
            if isinstance(frame, UserMessage):
                self.user_queue.append(frame.text)

    def _is_stale(self, body: ShutdownRequest) -> bool:
        """A request issued before this incarnation started is for a previous process."""
        issued = request_epoch_ms(body.request_id)
        return issued is not None and issued < self.identity.incarnation_ms

    def next_turn(self) -> Turn | None:
        if self.user_queue:
            text = self.user_queue.popleft()
            return Turn(kind="user", text=text, sender=LEAD_NAME, content=text)
        while True:
            unread = self.mailbox.unread_entries()
            index = choose_message([m for _, m in unread])
            if index is None:
                break
            position, message = unread[index]
            # The hand-off is the read; the message is marked read right after it, before the
            # turn runs. A crash in between redelivers it: at least once, never lost.
            sent_ns = probe.sent_ns_of(message.text)
            if sent_ns is not None:
                probe.record(self.mailbox.paths, self.identity.name, sent_ns)
            self.mailbox.mark_read_matching(message, position)
            if sent_ns is not None:
                continue  # a latency probe: recorded, no turn
            body = parse_body(message.text)
            if isinstance(body, ShutdownRequest) and self._is_stale(body):
                log.info("%s: ignoring stale %s (before this incarnation)", self.identity.name, body.request_id)
                continue
            summary = message.summary if isinstance(message.summary, str) else ""
            color = message.color if isinstance(message.color, str) else ""
            return Turn(
                kind="shutdown" if isinstance(body, ShutdownRequest) else "message",
                text=wrap_message(message.from_, message.text, color, summary),
                sender=message.from_,
                body=body,
                task_id=body.task_id if isinstance(body, TaskAssignment) else "",
                content=message.text,
                is_prompt=message.from_ == LEAD_NAME and message.text == self.spawn_prompt,
            )
        task = self.tasks.claim_next(self.identity.name)
        if task is not None:
            return Turn(kind="claim", text=claim_prompt(task), task_id=task.id)
        return None

    # ------------------------------------------------------------ states

    def idle_hook_blocks(self) -> bool:
        """TeammateIdle hooks: exit 2 keeps the teammate working, fed the hook's stderr."""
        outcome = hooks.run(self.ctx, "TeammateIdle", {})
        if not outcome.blocked:
            self.idle_blocks = 0
            return False
        self.idle_blocks += 1
        if self.idle_blocks > MAX_IDLE_BLOCKS:
            log.warning("%s: TeammateIdle blocked %d times in a row; going idle anyway", self.identity.name, self.idle_blocks)
            self.idle_blocks = 0
            return False
        self.user_queue.append(f"[TeammateIdle hook] {outcome.feedback}")
        return True

    def go_idle(self, outcome: TurnOutcome) -> None:
        """Send exactly one idle notification per stretch of idleness."""
        last_dm, completed = self.ctx.last_dm, self.ctx.completed
        body = IdleNotification(
            from_=self.identity.name,
            timestamp=now_iso(),
            idle_reason="failed" if outcome.failure_reason else "available",
        )
        if last_dm:
            body.summary = f"[to {last_dm[0]}] {last_dm[1]}"
        if completed:
            body.completed_task_id, body.completed_status = completed
        if outcome.failure_reason:
            body.failure_reason = outcome.failure_reason
        messaging.send_body(self.identity.root, self.identity.team, self.identity.name, LEAD_NAME, body, color=self.identity.color)
        self.ctx.channel.ring(LEAD_NAME)
        self.ctx.channel.state("idle")
        self.ctx.last_dm = self.ctx.completed = None
        self.idle = True

    def handle(self, turn: Turn) -> TurnOutcome:
        self.idle = False
        self.ctx.channel.state("running", turn.task_id)
        self.ctx.transcript.append("user", turn.text)  # models record their own replies
        try:
            return self.model.run_turn(turn, self.tools)
        except Exception as exc:  # a model bug must not kill the teammate: report it
            log.exception("%s: turn failed", self.identity.name)
            return TurnOutcome(failure_reason=f"{type(exc).__name__}: {exc}")

    def run(self) -> int:
        self.ctx.channel.hello(self.identity.name, os.getpid())
        outcome = TurnOutcome()
        while True:
            turn = self.next_turn()
            if turn is None and self.idle:
                self.absorb(self.ctx.channel.wait())
                continue
            if turn is not None:
                outcome = self.handle(turn)
                if self.ctx.exit_requested:
                    return 0
            # After every turn, and once when there is nothing to do: one idle notification.
            if not self.idle_hook_blocks():
                self.go_idle(outcome)
