"""The lead agent (SPEC §11): ``python -m agentproc.lead``, started by ``agentteams lead`` and
``agentteams chat`` (and ``Team.lead``) once the team's supervisor runs.

It attaches to the supervisor, which then leaves the lead's inbox to it and passes on every
wake. Its turns are, in order: what the person typed (the goal first), the inbox (each
message wrapped as Claude Code wraps it, protocol messages rendered as events, teammates
that terminated), then a background subagent that has ended. Headless, it stops when a turn
ends with nothing left that could produce another: no message waiting, no teammate working
or about to, no claimable or running task, no subagent running; or when the team is
deleted, or at ``--timeout``. It writes a :class:`~ipc.launch.LeadResult` to
``--result-file``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import msgspec

from agentproc import subagents
from agentproc.channel import Wakeup
from agentproc.context import AgentContext
from agentproc.lead_turns import render_batch
from agentproc.models import Model, ModelContext, Turn, TurnOutcome, load_model
from agentproc.permissions import NoAskPolicy
from agentproc.tools import toolbox_for
from agentproc.tools.lead import TEAM_CREATE, TEAM_DELETE
from agentproc.transcript import Transcript
from ipc import control, trace
from ipc.agents import resolve as resolve_agent_type
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, NotRunning
from ipc.launch import DEFAULT_FALLBACK_POLL, LaunchSpec, LeadResult
from ipc.paths import TeamPaths, agent_id
from ipc.poller import Poller, close_context, context
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

    def __init__(self, spec: LaunchSpec, *, terminal: bool) -> None:
        runtime = TeamPaths(spec.root, spec.team_name).runtime_dir()
        self.zctx = context()
        self.listener = WakeListener(self.zctx, runtime, LEAD_AGENT)
        self._waker = Waker(runtime, ctx=self.zctx, linger_ms=200)
        self.control = control.ControlClient(runtime)
        self.poller = Poller()
        self.poller.register(self.listener)
        self.terminal = terminal
        if terminal:
            self.poller.register(sys.stdin.fileno())
        self.typed = b""  # terminal input not yet a whole line

    def hello(self, agent: str, pid: int) -> None:
        self.control.call(control.AttachLead(id=control.new_id(), pid=pid), timeout=30)

    def state(self, state: str, task: str = "") -> None:
        pass  # the supervisor watches the lead's pid, not its state

    def tasks_ready(self, ids: list[str]) -> None:
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
            woke.doorbell = self.listener.drain() > 0
        if self.terminal and sys.stdin.fileno() in ready:
            chunk = os.read(sys.stdin.fileno(), 65536)
            self.typed += chunk if chunk else b"\n\x04"  # end of input: a line, then the end mark
        return woke

    def lines(self) -> list[str]:
        """Whole lines typed so far."""
        *whole, self.typed = self.typed.split(b"\n")
        return [line.decode(errors="replace") for line in whole]

    def close(self) -> None:
        self.control.close()
        self._waker.close()
        self.listener.close()
        close_context(self.zctx)


@dataclass(frozen=True)
class LeadOptions:
    prompt: str = ""
    interactive: bool = False
    timeout: float | None = None
    verbose: bool = False  # show what arrives and what the lead says (chat always does)


class LeadLoop:
    def __init__(
        self, spec: LaunchSpec, channel: LeadChannel, options: LeadOptions, model: Model | None = None
    ):
        self.spec, self.channel, self.options = spec, channel, options
        self.ctx = AgentContext(spec=spec, channel=channel)
        definition = resolve_agent_type(spec.agent_type, self.ctx.cwd)
        self.ctx.permission_mode = spec.permission_mode or "acceptEdits"
        self.ctx.transcript = Transcript(self.ctx.paths, LEAD_NAME)
        self.tools = toolbox_for(self.ctx, definition, NoAskPolicy(), extra=[TEAM_CREATE, TEAM_DELETE])
        self.model = model or load_model(spec.model, ModelContext(spec, definition, self.ctx.transcript))
        self.typed: deque[str] = deque([options.prompt] if options.prompt else [])
        self.events_read = read_jsonl_after(self.ctx.paths.events, TeammateTerminated, 0)[1]  # the past
        self.events_pending: list[TeammateTerminated] = []  # seen while checking for work
        self.result = LeadResult(team=self.ctx.team, answer="", stopped_by="done", turns=0, seconds=0.0)
        self.failed_turns = 0
        self.input_ended = False

    # ------------------------------------------------------------ inputs

    def _new_events(self) -> list[TeammateTerminated]:
        """Terminations logged since the last look (only the new bytes are read: the log
        grows for as long as the team runs)."""
        events, self.events_read = read_jsonl_after(
            self.ctx.paths.events, TeammateTerminated, self.events_read
        )
        return events

    def next_turn(self) -> Turn | None:
        if self.typed:
            text = self.typed.popleft()
            return Turn(kind="user", text=text, sender="user", content=text)
        if self.ctx.team_deleted:
            return None
        messages = self.ctx.mailbox.take_where(lambda m: True)
        events = self.events_pending + self._new_events()
        self.events_pending = []
        if messages or events:
            now = time.time_ns()
            for message in messages:
                if trace.enabled() and isinstance(message.msg_id, str):
                    trace.record(self.ctx.paths, message.msg_id, LEAD_NAME, taken=now)
            self.result.messages += len(messages)
            text = render_batch(messages, events)
            return Turn(kind="inbox", text=text, sender="", content=text, batch=tuple(messages))
        finished = subagents.next_notification(self.ctx) if self.ctx.background else None
        if finished is not None:
            subagents.mark_notified(self.ctx, finished)
            text = subagents.notification(finished, str(self.ctx.paths.subagent_result(finished.id)))
            return Turn(kind="notification", text=text, content=finished.result)
        return None

    def _read_terminal(self) -> None:
        for line in self.channel.lines():
            if line == "\x04" or line.strip() in ("/exit", "/quit"):
                self.input_ended = True
            elif line.strip():
                self.typed.append(line)

    # ------------------------------------------------------------ turns

    def handle(self, turn: Turn) -> TurnOutcome:
        self._show(turn.text if turn.kind != "user" else "")
        assert self.ctx.transcript is not None
        self.ctx.transcript.append("user", turn.text)
        try:
            outcome = self.model.run_turn(turn, self.tools)
        except Exception as exc:  # a model bug must not kill the lead: report it
            log.exception("lead turn failed")
            outcome = TurnOutcome(failure_reason=f"{type(exc).__name__}: {exc}")
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
        if not text or not (self.options.interactive or self.options.verbose):
            return
        stream = sys.stdout if self.options.interactive else sys.stderr
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
            }
            for t in tasks
        ]

    # ------------------------------------------------------------ when to stop

    def settled(self) -> bool:
        """Nothing left that could give the lead another turn."""
        if self.typed or self.ctx.mailbox.has_unread() or self.ctx.background or subagents.running(self.ctx):
            return False
        self.events_pending += self._new_events()
        if self.events_pending:  # for the next turn
            return False
        try:
            status = self.ctx.control().call(control.Status(id=control.new_id()), timeout=10)
        except NotRunning:
            return True
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
        deadline = None if self.options.timeout is None else started + self.options.timeout
        self.channel.hello(LEAD_NAME, os.getpid())
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
                if self.options.interactive:
                    if self.input_ended:
                        break
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
                        f"stopped after {self.options.timeout:g}s with the team's work unfinished"
                    )
                    break
                wait = QUIET if quiet_since is not None else DEFAULT_FALLBACK_POLL
                self.channel.wait(wait if remaining is None else min(wait, remaining))
                self._read_terminal()
        except KeyboardInterrupt:
            self.result.stopped_by = "interrupted"
            self.result.error = "interrupted"
        self.result.seconds = round(time.monotonic() - started, 3)
        return self.result


# ---------------------------------------------------------------- the process


def lead_spec(root: str, team: str, model: str) -> LaunchSpec:
    paths = TeamPaths(root, team)
    config = TeamConfigStore(root, paths.team).read()
    lead = config.member(LEAD_NAME)
    return LaunchSpec(
        agent_id=agent_id(LEAD_NAME, paths.team),
        agent_name=LEAD_NAME,
        team_name=paths.team,
        agent_color="",
        parent_session_id=config.lead_session_id,
        model=model,
        root=str(paths.root),
        cwd=lead.cwd if lead is not None and lead.cwd else os.getcwd(),
        role="lead",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentproc.lead", description=__doc__)
    parser.add_argument("--root", required=True)
    parser.add_argument("--team", required=True)
    parser.add_argument("--model", default="offline")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--interactive", action="store_true")
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--result-file", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="lead: %(message)s", stream=sys.stderr)
    options = LeadOptions(args.prompt, args.interactive, args.timeout, args.verbose)
    channel: LeadChannel | None = None
    try:
        spec = lead_spec(args.root, args.team, args.model)
        channel = LeadChannel(spec, terminal=args.interactive)
        result = LeadLoop(spec, channel, options).run()
    except AgentTeamsError as exc:
        result = LeadResult(
            team=args.team, answer="", stopped_by="error", turns=0, seconds=0.0, error=exc.message
        )
    finally:
        if channel is not None:
            channel.close()
    atomic_write(Path(args.result_file), msgspec.json.encode(result))
    return 0 if result.stopped_by == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
