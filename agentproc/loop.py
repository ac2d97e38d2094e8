"""A teammate's loop, as Claude Code's teammates run: handle → idle notification → wait →
next input by priority.

Priorities when choosing the next input, in Claude Code's order:
1. in-memory user messages pushed by the lead over the link,
2. a shutdown_request (even if older unread messages exist),
3. unread messages from team-lead,
4. any other unread message,
5. a background subagent that has ended, as a ``<task-notification>``,
6. auto-claim a task (the one the supervisor woke us for, if we can have it).

A turn that fails (the model's API, a bug) gives back the task it was on, with the error
recorded in the task; after several failed turns in a row the agent backs off, and then
gives up: it exits with :data:`EXIT_GAVE_UP`, which the supervisor reports to the lead
rather than restarting it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import deque

from agentproc import bubble, hooks, subagents
from agentproc.channel import Channel, Wakeup
from agentproc.models import Model, Turn, TurnOutcome, wrap_message
from agentproc.permissions import ModePolicy, apply_updates
from agentproc.runner import AgentRunner
from ipc import link, trace, trust
from ipc.clock import now_iso
from ipc.errors import AgentTeamsError, LockTimeout
from ipc.launch import EXIT_GAVE_UP, LaunchSpec
from ipc.paths import request_epoch_ms
from ipc.schemas import (
    LEAD_NAME,
    IdleNotification,
    InboxMessage,
    ModeSetRequest,
    ShutdownRequest,
    TaskAssignment,
    TeamPermissionUpdate,
    parse_body,
)
from ipc.task_rules import claim_prompt

log = logging.getLogger("agentteams.agent")
MAX_IDLE_BLOCKS = 5
LOCK_BACKOFF = 1.0  # s before looking again after a lock wait timed out


def max_failed_turns() -> int:
    return int(os.environ.get("AGENTTEAMS_MAX_FAILED_TURNS", "3"))


def choose_shutdown(unread: list[tuple[int, InboxMessage]]) -> int | None:
    """Only a shutdown request (an agent held by its budget takes nothing else)."""
    return next(
        (i for i, (_, m) in enumerate(unread) if isinstance(parse_body(m.text), ShutdownRequest)), None
    )


def choose_message(unread: list[tuple[int, InboxMessage]]) -> int | None:
    """Priorities 2–4 over the unread messages: the index of the one to take next."""
    for i, (_, m) in enumerate(unread):
        if isinstance(parse_body(m.text), ShutdownRequest):
            return i
    for i, (_, m) in enumerate(unread):
        if m.from_ == LEAD_NAME:
            return i
    return 0 if unread else None


class AgentLoop(AgentRunner):
    """A teammate: it asks the lead for what its permission mode does not allow."""

    def __init__(self, spec: LaunchSpec, channel: Channel, model: Model | None = None) -> None:
        super().__init__(spec, channel, policy=ModePolicy(), model=model)
        member = self.ctx.messenger.store.config_member(spec.agent_name)
        self.spawn_prompt = member.prompt if member is not None and isinstance(member.prompt, str) else None
        self.user_queue: deque[str] = deque()
        self.task_hints: deque[str] = deque()  # tasks wakes named, in order (each may be ours)
        self.look = True  # look for work in the task list at the next chance (see absorb)
        self.idle = False
        self.idle_blocks = 0
        self.failed_turns = 0  # in a row
        self.budget_stop = ""  # why no turn may start: a budget is used up
        self.resume_at = 0.0  # monotonic time before which no task is claimed (back-off)
        self.woke_ns = 0
        self.reported = ""  # the idle state last reported to the supervisor
        # After a restart: the ends of its subagents it has not heard, from their records.
        subagents.take_up(self.ctx, member.joined_at if member is not None else 0)

    # ------------------------------------------------------------ inputs

    def absorb(self, woke: Wakeup) -> None:
        self.woke_ns = woke.at_ns
        frames = [*self.ctx.frames, *woke.frames]
        self.ctx.frames.clear()
        named = False
        for frame in frames:
            if isinstance(frame, link.UserMessage):
                self.user_queue.append(frame.text)
            elif isinstance(frame, link.Wake) and frame.task:
                self.task_hints.append(frame.task)
                named = True
        if not named and not woke.queued:
            # Rung (the on-call ring, a message, a plain wake) or the fallback poll: look at
            # the task list. A wake that names a task needs no look: the task is ours already;
            # nor a poll while the supervisor holds ready tasks to hand out.
            self.look = True

    def _take_permission_change(self, body: ModeSetRequest | TeamPermissionUpdate) -> None:
        """The lead's mode_set_request or team_permission_update, kept for the rest of this
        session, and a line to the lead saying what it now runs with."""
        if isinstance(body, ModeSetRequest):
            before, self.ctx.permission_mode = self.ctx.permission_mode, body.mode
            said = f"My permission mode is now {body.mode} (was {before})."
        else:
            # Only for this session, whatever it names: the lead's door writes settings files.
            apply_updates(self.ctx, [{**body.permission_update, "destination": "session"}])
            said = f"Applied for the rest of my session: {json.dumps(body.permission_update)}"
        log.info("%s: %s", self.spec.agent_name, said)
        try:
            self.ctx.messenger.send_message(self.spec.agent_name, LEAD_NAME, said, "permissions changed")
        except AgentTeamsError as exc:
            log.error("%s could not tell the lead: %s", self.spec.agent_name, exc.message)

    def _is_stale(self, body: ShutdownRequest) -> bool:
        """A request issued before this incarnation started is for a previous process."""
        issued = request_epoch_ms(body.request_id)
        return issued is not None and issued < self.spec.incarnation_ms

    def _budget_holds(self) -> bool:
        """While a budget is used up no turn starts but a shutdown; raising the budget (a new
        ``budget.json``) lets the agent go on at its next wake."""
        if self.budget_stop:
            over = getattr(self.model, "over_budget", None)
            self.budget_stop = over() if over is not None else ""
        return bool(self.budget_stop)

    def next_turn(self) -> Turn | None:
        held = self._budget_holds()
        if self.user_queue and not held:
            text = self.user_queue.popleft()
            return Turn(kind="user", text=text, sender=LEAD_NAME, content=text)
        while True:
            # The hand-off: choose and mark read in one locked pass. A crash before the turn
            # runs loses nothing that was not already handed over.
            taken = self.ctx.mailbox.take(choose_shutdown if held else choose_message)
            if not taken:
                break
            message = taken[0]
            check = self.ctx.gate.admit(message)
            if check is None:
                continue  # refused: recorded and reported to the lead, never shown to the model
            if trace.enabled() and isinstance(message.msg_id, str):
                # "taken" once verified: the turn cannot start before, so the figure includes it
                trace.record(
                    self.ctx.paths,
                    message.msg_id,
                    self.spec.agent_name,
                    woke=self.woke_ns or time.time_ns(),
                    taken=time.time_ns(),
                )
            body = parse_body(message.text)
            if isinstance(body, ModeSetRequest | TeamPermissionUpdate) and message.from_ == LEAD_NAME:
                self._take_permission_change(body)  # no turn: it holds from the next one
                continue
            if isinstance(body, ShutdownRequest) and self._is_stale(body):
                log.info(
                    "%s: ignoring stale %s (before this incarnation)", self.spec.agent_name, body.request_id
                )
                continue
            return Turn(
                kind="shutdown" if isinstance(body, ShutdownRequest) else "message",
                text=wrap_message(
                    message.from_,
                    message.text,
                    message.color_name,
                    message.summary_text,
                    verified=check.status != trust.UNVERIFIED,
                ),
                sender=message.from_,
                body=body,
                task_id=body.task_id if isinstance(body, TaskAssignment) else "",
                content=message.text,
                is_prompt=message.from_ == LEAD_NAME and message.text == self.spawn_prompt,
            )
        if held:
            self._give_back_handed()
            return None
        if self.ctx.background:
            # What its background subagents ask: answered by its mode, or passed on to the lead.
            bubble.answer_pending(self.ctx, sorted(self.ctx.background), can_take_turn=False)
            finished = subagents.next_notification(self.ctx)
            if finished is not None:
                self.ctx.background.discard(finished.id)  # its record is marked as the turn begins
                text = subagents.notification(finished, str(self.ctx.paths.subagent_result(finished.id)))
                return Turn(kind="notification", text=text, content=finished.result, notifies=finished)
        if time.monotonic() < self.resume_at:
            self._give_back_handed()
            return None  # backing off after failed turns: messages yes, new work not yet
        hint = self.task_hints.popleft() if self.task_hints else ""
        if not hint and not self.look and self.ctx.channel.handed:
            # After a turn the idle report goes up, and the supervisor answers with the next
            # ready task, already claimed for this agent: no read of the task list here.
            return None
        self.look = False
        task = self.ctx.tasks.claim_next(self.spec.agent_name, hint=hint)
        if task is not None:
            if trace.enabled():
                now = time.time_ns()
                woke = self.woke_ns or now
                trace.record(self.ctx.paths, f"task-{task.id}", self.spec.agent_name, woke=woke, taken=now)
            self.ctx.current_task = task.id
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
            log.warning(
                "%s: TeammateIdle blocked %d times in a row; going idle anyway",
                self.spec.agent_name,
                self.idle_blocks,
            )
            self.idle_blocks = 0
            return False
        self.user_queue.append(outcome.feedback)
        return True

    def go_idle(self, outcome: TurnOutcome) -> None:
        """Send exactly one idle notification per stretch of idleness."""
        last_dm, completed = self.ctx.last_dm, self.ctx.completed
        body = IdleNotification(
            from_=self.spec.agent_name,
            timestamp=now_iso(),
            idle_reason="failed" if outcome.failure_reason else "available",
        )
        if last_dm:
            body.summary = f"[to {last_dm[0]}] {last_dm[1]}"
        if completed:
            body.completed_task_id, body.completed_status = completed
        if outcome.failure_reason:
            body.failure_reason = outcome.failure_reason
        if outcome.final_text:
            body.result = outcome.final_text[:4000]
        self.ctx.messenger.send_body(self.spec.agent_name, LEAD_NAME, body, color=self.spec.agent_color)
        self.reported = self._idle_state()
        self.ctx.channel.state(self.reported)
        self.ctx.last_dm = self.ctx.completed = None
        self.idle = True

    def _idle_state(self) -> str:
        """What idleness to report: "held" (its budget is used up, or it backs off after failed
        turns) keeps the supervisor from handing it tasks it would not start."""
        return "held" if self.budget_stop or time.monotonic() < self.resume_at else "idle"

    def _give_back_handed(self) -> None:
        """Tasks handed to this agent while it cannot start them go back, for another."""
        if not self.task_hints:
            return
        self.task_hints.clear()
        self.reported = "held"
        self.ctx.channel.state("held")  # before the tasks: the supervisor must not hand them back here
        released = self.ctx.tasks.release_owner(self.spec.agent_name)
        if released:
            self.ctx.channel.tasks_ready(released)

    def handle(self, turn: Turn) -> TurnOutcome:
        self.idle = False
        self.ctx.channel.state("running", turn.task_id)
        outcome = self.take_turn(turn)
        if outcome.halted:
            return outcome  # its task stays as it was; the supervisor releases it at the exit
        if outcome.budget_reached:
            # Not the task's fault: it goes back as it was, for whoever has budget left.
            self.budget_stop = outcome.failure_reason
            released = self.ctx.tasks.release_owner(self.spec.agent_name)
            log.warning("%s: %s; released task(s) %s", self.spec.agent_name, outcome.failure_reason, released)
        elif outcome.failure_reason:
            self._after_failure(outcome.failure_reason)
        else:
            self.failed_turns = 0
        self.ctx.current_task = ""
        return outcome

    def _after_failure(self, reason: str) -> None:
        """Give the task back with the error recorded; wait longer after each failure."""
        self.failed_turns += 1
        self.resume_at = time.monotonic() + min(30.0, 2.0 ** (self.failed_turns - 1))
        released = self.ctx.tasks.release_owner(self.spec.agent_name, error=f"turn failed: {reason}")
        if released:
            log.warning("%s: turn failed (%s); released task(s) %s", self.spec.agent_name, reason, released)

    def _wait_timeout(self) -> float | None:
        backing_off = self.resume_at - time.monotonic()
        return min(backing_off, self.spec.fallback_poll) if backing_off > 0 else None

    def run(self) -> int:
        self.hello()
        outcome = TurnOutcome()
        while True:
            if self.ctx.halt:  # an in-process teammate asked to stop (its host rang it awake)
                return self.ctx.halt
            try:
                turn = self.next_turn()
            except LockTimeout as exc:
                self._lock_busy(exc)
                continue
            if turn is None and self.idle:
                if self.reported != (state := self._idle_state()):
                    self.reported = state  # held no longer (or now): the supervisor hears of it
                    self.ctx.channel.state(state)
                self.absorb(self.ctx.channel.wait(self._wait_timeout()))
                continue
            if turn is not None:
                outcome = self.handle(turn)
                if self.ctx.exit_requested:
                    return 0
                if self.ctx.halt:
                    return self.ctx.halt
                if self.failed_turns >= max_failed_turns():
                    self.go_idle(outcome)
                    print(
                        f"{self.spec.agent_name}: gave up after {self.failed_turns} failed turns in a row: "
                        f"{outcome.failure_reason}",
                        file=sys.stderr,
                    )
                    return EXIT_GAVE_UP
            # After every turn, and once when there is nothing to do: one idle notification.
            if not self.idle_hook_blocks():
                try:
                    self.go_idle(outcome)
                except LockTimeout as exc:
                    self._lock_busy(exc)  # not idle yet: the notification is tried again

    def _lock_busy(self, exc: LockTimeout) -> None:
        """A lock held longer than our timeout by a live process (hundreds of teammates busy on
        a few cores): wait a moment (a wake cuts it short) and look again, rather than exit
        and come back through a restart that adds to the crowd."""
        log.warning("%s: %s; looking again shortly", self.spec.agent_name, exc.message)
        self.absorb(self.ctx.channel.wait(LOCK_BACKOFF))
