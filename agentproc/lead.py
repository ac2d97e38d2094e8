"""The lead agent, Claude Code's session a person talks to: ``python -m agentproc.lead``,
started from a :class:`~ipc.launch.LeadLaunch` by ``agentteams lead`` and ``agentteams
chat`` (and ``Team.lead``) once the team's supervisor runs.

It attaches to the supervisor, which then leaves the lead's inbox to it and passes on every
wake. Its turns are, in order: what the person typed (the goal first), the inbox (each
message wrapped as Claude Code wraps it, protocol messages rendered as events, teammates
that terminated), then a background subagent that has ended. Headless, it stops when a turn
ends with nothing left that could produce another: no message waiting, no teammate working
or about to, no claimable or running task, no subagent running; or when the team is
deleted, or at ``--timeout``. It writes a :class:`~ipc.replies.LeadResult` to
``--result-file``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import sys
import time
from collections import deque
from pathlib import Path

import msgspec

from agentproc import bubble, subagents
from agentproc.channel import Wakeup, engine_listener
from agentproc.lead_turns import permission_prompt, render_batch, render_batch_for_people
from agentproc.models import Model, Turn, TurnOutcome
from agentproc.permissions import NoAskPolicy
from agentproc.runner import AgentRunner
from agentproc.tools.lead import TEAM_CREATE, TEAM_DELETE
from agentproc.tools.team import LEAD_SEND_MESSAGE
from ipc import control, trace, trust
from ipc.errors import AgentTeamsError, NotRunning, Timeout
from ipc.launch import DEFAULT_FALLBACK_POLL, RESULT_DIR_PREFIX, LaunchSpec, LeadLaunch
from ipc.osproc import set_parent_death_signal
from ipc.poller import Poller, close_context, context
from ipc.replies import LeadResult
from ipc.schemas import LEAD_NAME, TeammateTerminated
from ipc.storage import atomic_write, read_jsonl_after
from ipc.task_rules import claimable
from ipc.usage import team_usage
from ipc.wake import LEAD_AGENT, WakeListener, Waker

log = logging.getLogger("agentteams.lead")
QUIET = 0.3  # s: how long "nothing left to do" must hold before a headless lead stops
WORKING = ("starting", "running", "stopping")
MAX_FAILED_TURNS = 3


class LeadChannel:
    """The lead agent's doorbell (the supervisor passes team-lead's wakes on to it), a
    waker for the teammates, task wakes through the supervisor, and the terminal."""

    handed = False  # the lead claims nothing handed to it

    def __init__(self, spec: LaunchSpec, *, terminal: bool) -> None:
        runtime = spec.team_paths().runtime_dir()
        self.zctx = context()
        self.listener = WakeListener(self.zctx, runtime, LEAD_AGENT)
        self._waker = Waker(runtime, ctx=self.zctx, linger_ms=200)
        self.control = control.ControlClient(runtime)
        self.poller = Poller()
        self.poller.register(self.listener)
        # A team on the engine: team-lead is rung from any host (and by its own inbox).
        self.engine_ring = engine_listener(msgspec.structs.replace(spec, agent_name=LEAD_NAME))
        if self.engine_ring is not None:
            self.poller.register(self.engine_ring.fileno())
        self.terminal = terminal
        self.piped = terminal and not os.isatty(sys.stdin.fileno())
        if terminal:
            self.poller.register(sys.stdin.fileno())
        self.typed = b""  # terminal input not yet a whole line

    def hello(self, agent: str, pid: int) -> None:
        self.control.call(control.AttachLead(id=control.new_id(), pid=pid), timeout=30)

    def state(self, state: str, task: str = "") -> None:
        pass  # the supervisor watches the lead's pid, not its state

    def waiting(self, waiting: bool) -> None:
        pass  # nor counts its turns

    def tasks_ready(self, ids: list[str], rung: str = "") -> None:
        try:
            self.control.call(control.TasksReady(id=control.new_id(), ids=ids), timeout=10)
        except AgentTeamsError as exc:  # the fallback poll of the teammates still finds them
            log.warning("could not tell the supervisor of tasks %s: %s", ids, exc.message)

    def waker(self) -> Waker:
        return self._waker

    def wait(self, timeout: float | None = None) -> Wakeup:
        ready = self.poller.poll(DEFAULT_FALLBACK_POLL if timeout is None else timeout)
        woke = Wakeup(at_ns=time.time_ns())
        if self.listener in ready:
            self.listener.drain()
        if self.engine_ring is not None and self.engine_ring.fileno() in ready:
            self.engine_ring.drain()
        if self.terminal and sys.stdin.fileno() in ready:
            self._read_typed()
        return woke

    def _read_typed(self) -> None:
        """Everything typed by now: a terminal hands over one line a read, and lines pasted
        together must reach the lead as one turn (a goal of several lines)."""
        fd = sys.stdin.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                self.typed += b"\n\x04\n"  # end of input: a line, then the end mark as a line
                if self.piped:  # a pipe stays readable at its end: no more to wait for there
                    self.poller.unregister(fd)
                    self.terminal = False
                return
            self.typed += chunk
            if not select.select([fd], [], [], 0)[0]:
                return

    def lines(self) -> list[str]:
        """Whole lines typed so far."""
        *whole, self.typed = self.typed.split(b"\n")
        return [line.decode(errors="replace") for line in whole]

    def close(self) -> None:
        self.control.close()
        self._waker.close()
        self.listener.close()
        if self.engine_ring is not None:
            self.engine_ring.close()
        close_context(self.zctx)


class LeadLoop(AgentRunner):
    """The lead: it is asked itself, so what would ask is denied; it has the team tools."""

    def __init__(self, launch: LeadLaunch, channel: LeadChannel, model: Model | None = None):
        super().__init__(
            launch.spec,
            channel,
            policy=NoAskPolicy(),
            model=model,
            extra=(TEAM_CREATE, TEAM_DELETE, LEAD_SEND_MESSAGE),
        )
        self.channel, self.launch = channel, launch
        self.ctx.team_ours = launch.owns_team
        self.ctx.keep_reason = launch.keep_reason
        self.typed: deque[str] = deque([launch.prompt] if launch.prompt else [])
        self.events_read = read_jsonl_after(self.ctx.paths.events, TeammateTerminated, 0)[1]  # the past
        self.events_pending: list[TeammateTerminated] = []  # seen while checking for work
        self.result = LeadResult(team=self.ctx.team, answer="", stopped_by="done", turns=0, seconds=0.0)
        self.failed_turns = 0
        self.input_ended = False
        self.finish_then_end = False  # a pipe's input ended: the lead goes on as `lead` does

    # ------------------------------------------------------------ inputs

    def _new_events(self) -> list[TeammateTerminated]:
        """Terminations logged since the last look (only the new bytes are read: the log
        grows for as long as the team runs)."""
        events, self.events_read = read_jsonl_after(
            self.ctx.paths.events, TeammateTerminated, self.events_read
        )
        return events

    def next_turn(self) -> Turn | None:
        if self.typed:  # what was typed (or pasted) since the last turn is one turn, as a goal is
            text = "\n".join(self.typed)
            self.typed.clear()
            return Turn(kind="user", text=text, sender="user", content=text)
        if self.ctx.team_deleted:
            return None
        messages, unverified = [], set()
        for message in self.ctx.mailbox.take_where(lambda m: True):
            check = self.ctx.gate.admit(message)  # refused ones become notices, never turns
            if check is not None:
                messages.append(message)
                if check.status == trust.UNVERIFIED and isinstance(message.msg_id, str):
                    unverified.add(message.msg_id)
        refusals = tuple(self.ctx.gate.refusals)
        self.ctx.gate.refusals.clear()
        events = self.events_pending + self._new_events()
        self.events_pending = []
        if messages or events or refusals:
            now = time.time_ns()
            for message in messages:
                if trace.enabled() and isinstance(message.msg_id, str):
                    trace.record(self.ctx.paths, message.msg_id, LEAD_NAME, taken=now)
            self.result.messages += len(messages)
            text = render_batch(messages, events, frozenset(unverified), refusals)
            shown = render_batch_for_people(messages, events, refusals)
            return Turn(kind="inbox", text=text, sender="", content=text, batch=tuple(messages), shown=shown)
        asked = bubble.answer_pending(self.ctx, sorted(self.ctx.background), can_take_turn=True)
        if asked is not None:  # a subagent's request the lead's own mode would ask about: its model answers
            text = permission_prompt(asked)
            return Turn(kind="inbox", text=text, sender=asked.agent_id, content=text)
        finished = subagents.next_notification(self.ctx) if self.ctx.background else None
        if finished is not None:
            self.ctx.background.discard(finished.id)  # its record is marked as the turn begins
            text = subagents.notification(finished, str(self.ctx.paths.subagent_result(finished.id)))
            shown = f"[subagent] {finished.description or finished.id} {finished.status}"
            return Turn(
                kind="notification", text=text, content=finished.result, shown=shown, notifies=finished
            )
        return None

    def _read_terminal(self) -> None:
        for line in self.channel.lines():
            if line == "\x04" and self.channel.piped:
                # A terminal's Ctrl-D ends the chat; the end of a pipe leaves the lead to
                # see through what it was given, as a headless lead does.
                self.finish_then_end = True
            elif line == "\x04" or line.strip() in ("/exit", "/quit"):
                self.input_ended = True
            elif line.strip():
                self.typed.append(line)

    # ------------------------------------------------------------ turns

    def handle(self, turn: Turn) -> TurnOutcome:
        self._show(turn.shown or turn.text if turn.kind != "user" else "")
        outcome = self.take_turn(turn)
        self.result.turns += 1
        if outcome.final_text:
            self.result.answer = outcome.final_text
            self._show(outcome.final_text, answer=True)
        if outcome.failure_reason:
            self.failed_turns += 1
            self.result.error = outcome.failure_reason
            self._show(f"[the lead's turn failed] {outcome.failure_reason}")
        else:
            self.failed_turns = 0
        if not self.ctx.team_deleted:
            self._snapshot()
        return outcome

    def _show(self, text: str, *, answer: bool = False) -> None:
        if not text or not (self.launch.interactive or self.launch.verbose):
            return
        stream = sys.stdout if self.launch.interactive else sys.stderr
        print(("lead> " if answer else "") + text, file=stream, flush=True)

    def _snapshot(self) -> None:
        """What the result reports of the team, kept as it stood before it could be deleted."""
        try:
            config = self.ctx.messenger.store.read()
            tasks = self.ctx.tasks.list(include_internal=False)
        except AgentTeamsError:
            return
        with contextlib.suppress(AgentTeamsError):
            self.result.usage = team_usage(self.ctx.paths)
        seen = set(self.result.teammates)
        self.result.teammates += [m.name for m in config.teammates() if m.name not in seen]
        self.result.tasks = [
            {
                "id": t.id,
                "subject": t.subject,
                "status": "failed" if t.failed else t.status,
                "owner": t.owner_name or "",
                "error": str(t.meta["lastError"]).strip().splitlines()[0] if t.failed else "",
            }
            for t in tasks
        ]

    def _judge(self) -> None:
        """``done`` only if every task of the team completed and the lead's last turn did
        not fail; otherwise say what is left."""
        if not self.ctx.team_deleted:
            self._snapshot()
        tasks = self.result.tasks
        failed = [t for t in tasks if t["status"] == "failed"]
        left = [t for t in tasks if t["status"] not in ("completed", "failed")]
        if failed or left:
            self.result.stopped_by = "failed" if failed else "unfinished"
            named = [f"task #{t['id']} ({t['subject']}) failed: {t['error'] or 'no detail'}" for t in failed]
            named += [f"#{t['id']} {t['status']}" for t in left]
            self.result.error = (
                f"{len(failed) + len(left)} of {len(tasks)} tasks did not complete: {'; '.join(named)}"
            )
        elif self.failed_turns:
            self.result.stopped_by = "error"

    # ------------------------------------------------------------ when to stop

    def settled(self) -> bool:
        """Nothing left that could give the lead another turn."""
        if self.typed or self.ctx.mailbox.has_unread():
            return False
        if control.running_pid(self.ctx.paths.runtime_dir()) is None:
            return True  # its subagents went with the supervisor, whatever their records still say
        if self.ctx.background or subagents.running(self.ctx):
            return False
        self.events_pending += self._new_events()
        if self.events_pending:  # for the next turn
            return False
        # Asked a second at a time: a supervisor brought down under it answers nothing, and
        # is seen gone at once, not after a wait of 10 s that ends the lead as an error.
        deadline = time.monotonic() + 10
        while True:
            if control.running_pid(self.ctx.paths.runtime_dir()) is None:
                return True
            try:
                status = self.ctx.control().call(control.Status(id=control.new_id()), timeout=1)
                break
            except NotRunning:
                return True
            except Timeout:
                if time.monotonic() > deadline:
                    raise
        mates = [t for t in status.teammates if t.role == "teammate"]
        if any(t.state in WORKING for t in mates):
            return False
        alive = [t for t in mates if t.state == "idle"]
        if any(self.ctx.messenger.mailbox(t.name).has_unread() for t in alive):
            return False  # woken a moment from now
        tasks = self.ctx.tasks.list(include_internal=False)
        if any(t.status == "in_progress" for t in tasks):
            return False
        return not (alive and next(claimable(tasks), None) is not None)

    def run(self) -> LeadResult:
        started = time.monotonic()
        self.result.started_ns = time.time_ns()
        deadline = None if self.launch.timeout is None else started + self.launch.timeout
        self.hello()
        self._snapshot()
        quiet_since: float | None = None
        try:
            while True:
                turn = self.next_turn()
                if turn is not None:
                    quiet_since = None
                    outcome = self.handle(turn)
                    if outcome.budget_reached:
                        self.result.stopped_by = "budget"
                        break
                    if self.failed_turns >= MAX_FAILED_TURNS:
                        self.result.stopped_by = "error"
                        break
                    continue
                if self.ctx.team_deleted:
                    break
                if self.input_ended:  # /exit, or a terminal's Ctrl-D
                    break
                if self.launch.interactive and not self.finish_then_end:
                    pass  # what is typed next
                elif self.settled():
                    now = time.monotonic()
                    if quiet_since is not None and now - quiet_since >= QUIET:
                        break
                    quiet_since = quiet_since or now
                else:
                    quiet_since = None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self.result.stopped_by = "timeout"
                    self.result.error = (
                        f"stopped after {self.launch.timeout:g}s with the team's work unfinished"
                    )
                    break
                wait = QUIET if quiet_since is not None else DEFAULT_FALLBACK_POLL
                self.channel.wait(wait if remaining is None else min(wait, remaining))
                self._read_terminal()
        except KeyboardInterrupt:
            self.result.stopped_by = "interrupted"
            self.result.error = "interrupted"
        if self.result.stopped_by == "done":
            self._judge()
        self.result.seconds = round(time.monotonic() - started, 3)
        return self.result


# ---------------------------------------------------------------- the process


def _interrupt_once(signum: int, frame: object) -> None:
    # A Ctrl-C reaches the lead from its terminal and again from the command that runs it:
    # the first ends the run, the rest must not break the report being written.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGINT, _interrupt_once)
    # The command that runs it (lead, chat) killed outright: it ends as on Ctrl-C, not unattended.
    runner = os.getppid()
    set_parent_death_signal(signal.SIGINT)
    logging.basicConfig(level=logging.WARNING, format="lead: %(message)s", stream=sys.stderr)
    try:
        launch = LeadLaunch.from_argv(sys.argv[1:] if argv is None else argv)
    except AgentTeamsError as exc:
        print(f"agentproc.lead: {exc.message}", file=sys.stderr)
        return 2
    channel: LeadChannel | None = None
    try:
        channel = LeadChannel(launch.spec, terminal=launch.interactive)
        result = LeadLoop(launch, channel).run()
    except AgentTeamsError as exc:
        result = LeadResult(
            team=launch.spec.team_name, answer="", stopped_by="error", turns=0, seconds=0.0, error=exc.message
        )
    finally:
        if channel is not None:
            channel.close()
    result_file = Path(launch.result_file)
    if os.getppid() != runner and result_file.parent.name.startswith(RESULT_DIR_PREFIX):
        shutil.rmtree(result_file.parent, ignore_errors=True)  # no one is left to read it
    else:
        atomic_write(result_file, msgspec.json.encode(result))
    return 0 if result.stopped_by == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
