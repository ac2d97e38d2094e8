"""The supervisor daemon: one per team. It wires the parts together and owns nothing else.

- :mod:`supervisor.reactor`: one thread, readers, timers and signals (SIGCHLD among them,
  so a death is seen at once);
- :mod:`supervisor.children`: each teammate's lifecycle, through :mod:`supervisor.processes`
  (the fork server, reaping) and :class:`TeamFiles` (config, tasks, events, the lead);
- :class:`ipc.control.ControlServer`: requests from the CLI, the API and agents, answered in
  arrival order, some later (a spawn when the teammate is ready), so commands queue;
- the links (:mod:`ipc.link`): hello, states and ready tasks from each teammate, wakes with a
  task to claim back to one idle teammate per ready task;
- the lead's inbox (:mod:`supervisor.lead_inbox`): scanned from where it was last read.

It is on the control path only: messages go from sender to recipient directly.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ipc import control, link, locks
from ipc.agents import resolve as resolve_agent_type
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, CorruptFile, InvalidInput, NotFound
from ipc.launch import POLL_INTERVAL, LaunchSpec, SupervisorOptions, TeammateOptions, TeamStatus, uses_api
from ipc.mailbox import Cursor, Mailbox
from ipc.messaging import Messenger
from ipc.osproc import pidfd_open, set_child_subreaper, set_process_name
from ipc.paths import TeamPaths
from ipc.poller import close_context, context
from ipc.schemas import LEAD_NAME, Member, TeammateTerminated
from ipc.storage import append_line
from ipc.tasks import TaskList
from ipc.wake import WakeListener, Waker
from supervisor import lead_inbox
from supervisor.children import Child, Children, Done
from supervisor.policy import RestartPolicy
from supervisor.processes import Processes
from supervisor.reactor import Reactor
from supervisor.states import TeammateState

log = logging.getLogger("agentteams.supervisor")
SUPERVISOR_LOCK_TIMEOUT = 1.0  # a frozen teammate holding a lock costs a retry, not the loop
CLAIM_WINDOW = 2.0  # a teammate woken for a task is not woken for another for this long


class TeamFiles:
    """The :class:`~supervisor.children.TeamPort` on the real files. A config.json that does
    not parse (a hand edit, another program) is logged, never allowed to stop a teammate
    from being started, reaped or stopped: the team must stay controllable."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    def _config(self, what: str, change: Callable[[], object]) -> None:
        try:
            change()
        except (CorruptFile, NotFound) as exc:
            log.error("could not record that %s in config.json: %s", what, exc.message)

    def started(self, spec: LaunchSpec, pid: int) -> None:
        if spec.role == "teammate":
            self._config(
                f"{spec.agent_name} started",
                lambda: self.sup.config.update_member(
                    spec.agent_name, tmux_pane_id=f"process:{pid}", is_active=True
                ),
            )

    def release(self, name: str, error: str = "") -> list[str]:
        return self.sup.tasks.release_owner(name, error=error)

    def left(self, name: str) -> None:
        self._config(f"{name} left", lambda: self.sup.config.remove_member(name))
        self.sup.drop_link(name)

    def inactive(self, name: str) -> None:
        def change() -> None:
            if self.sup.config.require_member(name).is_active is not False:
                self.sup.config.update_member(name, is_active=False)

        self._config(f"{name} is inactive", change)

    def terminated(self, event: TeammateTerminated) -> None:
        append_line(self.sup.paths.events, msgspec.json.encode(event))

    def request_shutdown(self, name: str, reason: str) -> str:
        response = self.sup.messenger.send_shutdown_request(LEAD_NAME, name, reason)
        return str(response["request_id"])

    def tasks_ready(self, ids: list[str]) -> None:
        self.sup.route_tasks(ids)


class Supervisor:
    def __init__(self, root: Path, team: str, options: SupervisorOptions | None = None) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.root = self.paths.root
        self.options = options or SupervisorOptions()
        self.config = TeamConfigStore(self.root, self.team)
        self.tasks = TaskList(self.root, self.team)
        self.lead_mailbox = Mailbox(self.root, self.team, LEAD_NAME)
        self.runtime = self.paths.runtime_dir()
        self.links: dict[str, link.SupervisorLink] = {}
        self.claiming: dict[str, float] = {}  # teammate → when it was woken for a task
        self.task_wakes = 0  # wakes sent for ready tasks, ever (the benchmarks count them)
        self.lead_cursor = Cursor()
        self.lead_pid: int | None = None
        self.lead_pidfd: int | None = None
        self.down_callers: list[control.Caller] = []
        self.started = time.time()

    @property
    def zmq(self) -> bool:
        return self.options.wake == "zmq"

    # ------------------------------------------------------------ start-up

    def start(self) -> None:
        locks.set_default_lock_timeout(SUPERVISOR_LOCK_TIMEOUT)
        self.session = self.config.read().lead_session_id  # fails early on an unknown team
        self.pid = os.getpid()
        set_child_subreaper()
        set_process_name("at-supervisor")
        self._lock_fd = self._take_pid_lock()
        self.reactor = Reactor()
        self.ctx = context()
        self.control = control.ControlServer(self.ctx, self.runtime)
        self.reactor.add_reader(self.control, self._on_control)
        self.waker = Waker(self.runtime, linger_ms=0, ctx=self.ctx)
        self.messenger = Messenger(self.root, self.team, waker=self.waker)
        self.lead_wake = WakeListener(self.ctx, self.runtime, LEAD_NAME) if self.zmq else None
        if self.lead_wake is not None:
            self.reactor.add_reader(self.lead_wake, self._on_lead_wake)
        self.processes = Processes(self.runtime, method=self.options.spawn)
        self.children = Children(
            self.processes,
            TeamFiles(self),
            self.reactor,
            RestartPolicy(
                mode=self.options.restart, intensity=self.options.intensity, period=self.options.period
            ),
            wait_for_hello=self.zmq,
        )
        self.reactor.on_signal(signal.SIGCHLD, self._reap)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.reactor.on_signal(sig, self._on_terminate)
        self._schedule_lead_check()
        self._resume_members()

    def _take_pid_lock(self) -> int:
        fd = os.open(self.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AgentTeamsError(f"a supervisor for team {self.team!r} is already running") from None
        (self.runtime / "supervisor.pid").write_text(f"{os.getpid()}\n")
        return fd

    def _resume_members(self) -> None:
        """Start every teammate the config lists: a stopped or crashed team comes back."""
        for member in self.config.read().teammates():
            released = self.tasks.release_owner(member.name)
            if released:
                log.info("resume: released %s's tasks %s", member.name, released)
            try:
                self._launch(self._spec(member, permission_mode=""))
            except AgentTeamsError as exc:
                log.error("cannot resume %s: %s", member.name, exc.message)

    def _spec(self, member: Member, *, permission_mode: str) -> LaunchSpec:
        return LaunchSpec(
            agent_id=member.agent_id,
            agent_name=member.name,
            team_name=self.team,
            agent_color=member.color_name or "blue",
            parent_session_id=self.session,
            agent_type=member.agent_type or "general-purpose",
            model=member.model_name or "offline",
            plan_mode_required=member.plan_mode_required is True,
            permission_mode=permission_mode,
            root=str(self.root),
            cwd=member.cwd or str(Path.cwd()),
            wake=self.options.wake,
            fallback_poll=self.options.fallback_poll,
            supervisor_pid=self.pid,
        )

    def _launch(self, spec: LaunchSpec, on_ready: Done | None = None) -> Child:
        if self.zmq and spec.agent_name not in self.links:
            end = link.SupervisorLink(self.ctx, self.runtime, spec.agent_name)
            self.links[spec.agent_name] = end
            self.reactor.add_reader(end, lambda n=spec.agent_name: self._on_link(n))  # type: ignore[misc]
        return self.children.add(spec, on_ready)

    def drop_link(self, name: str) -> None:
        end = self.links.pop(name, None)
        if end is not None:
            self.reactor.remove_reader(end)
            end.close()
        self.waker.forget(name)
        self.claiming.pop(name, None)

    # ------------------------------------------------------------ the loop

    def run(self) -> None:
        try:
            self.reactor.run()
        finally:
            self._cleanup()

    def _reap(self) -> None:
        for pid, status in self.processes.reap():
            self.children.on_exit(pid, status)

    def _on_terminate(self) -> None:
        if not self.children.stopping_all:
            log.info("signalled: bringing the team down")
            self._begin_down(grace=5.0)

    def _cleanup(self) -> None:
        for end in self.links.values():
            end.close()
        if self.lead_wake is not None:
            self.lead_wake.close()
        self.waker.close()
        self.processes.close()
        self.control.close()
        close_context(self.ctx)
        self.reactor.close()
        (self.runtime / "supervisor.pid").unlink(missing_ok=True)

    # ------------------------------------------------------------ control requests

    def _on_control(self) -> None:
        for caller, request in self.control.receive():
            try:
                self._dispatch(caller, request)
            except AgentTeamsError as exc:
                self.control.fail(caller, exc.message)
            except Exception as exc:  # a bug must not take the team down: answer and log
                log.exception("request %r failed", request)
                self.control.fail(caller, f"internal error: {type(exc).__name__}: {exc}")

    def _dispatch(self, caller: control.Caller, request: control.Request) -> None:
        if isinstance(request, control.Status):
            self.control.answer(caller, self.status())
        elif isinstance(request, control.TasksReady):
            self.control.answer(caller, control.WakeReply(woken=self.route_tasks(request.ids)))
        elif isinstance(request, control.Push):
            child = self.children.get(request.name)
            end = self.links.get(child.name)
            if end is None or not end.send(link.UserMessage(text=request.text)):
                raise InvalidInput(f"{child.name} is not connected; send through its inbox instead")
            self.control.answer(caller)
        elif isinstance(request, control.Spawn):
            self._spawn(caller, request.options)
        elif isinstance(request, control.Restart):
            self.children.restart(request.name, self._replier(caller))
        elif isinstance(request, control.Shutdown):
            self.children.request_stop(
                request.name,
                reason=request.reason,
                grace=request.grace,
                force=request.force,
                done=self._replier(caller),
            )
        elif isinstance(request, control.Down):
            self.down_callers.append(caller)
            if not self.children.stopping_all:
                self._begin_down(request.grace)
        elif isinstance(request, control.AttachLead):
            self._attach_lead(request.pid)
            self.control.answer(caller)

    def _replier(self, caller: control.Caller, **extra: Any) -> Done:
        def done(result: msgspec.Struct | None, error: str) -> None:
            if error:
                self.control.fail(caller, error)
            else:
                self.control.answer(
                    caller,
                    msgspec.structs.replace(result, **extra) if extra and result is not None else result,
                )

        return done

    def status(self) -> TeamStatus:
        return TeamStatus(
            team=self.team,
            supervisor=self.pid,
            forkserver=self.processes.forkserver_pid,
            wake=self.options.wake,
            started=self.started,
            runtime=str(self.runtime),
            lead_pid=self.lead_pid,
            task_wakes=self.task_wakes,
            teammates=self.children.statuses(),
        )

    def _spawn(self, caller: control.Caller, options: TeammateOptions) -> None:
        """Validate everything first (nothing is written for a spawn that cannot start)."""
        options = options.checked()
        if self.children.stopping_all:
            raise InvalidInput("the team is shutting down; no new teammates")
        lead = self.config.read().member(LEAD_NAME)
        cwd = options.cwd or (lead.cwd if lead is not None and lead.cwd else str(Path.cwd()))
        if not os.path.isdir(cwd):
            raise InvalidInput(f"working directory {cwd!r} does not exist; give --cwd an existing directory")
        resolve_agent_type(options.agent_type, Path(cwd))
        if uses_api(options.model) and not (
            os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        ):
            raise InvalidInput(
                f"model {options.model!r} needs ANTHROPIC_API_KEY in the team's environment "
                f"(set it, then 'agentteams down {self.team}' and 'agentteams up {self.team}')"
            )
        member = self.config.add_member(
            options.name,
            agent_type=options.agent_type,
            model=options.model,
            prompt=options.prompt,
            plan_mode_required=options.plan_mode_required,
            cwd=cwd,
            backend_type=options.backend,
        )
        mailbox = Mailbox(self.root, self.team, member.name)
        if options.prompt:
            # The first inbox message is the prompt, from the lead, with no summary or color.
            mailbox.append(sender=LEAD_NAME, text=options.prompt, member_checked=True)
        else:
            mailbox.create()
        renamed = options.name if member.name != options.name else ""
        self._launch(
            self._spec(member, permission_mode=options.permission_mode),
            self._replier(caller, renamed_from=renamed),
        )

    # ------------------------------------------------------------ links and task wakes

    def _on_link(self, name: str) -> None:
        end = self.links.get(name)
        if end is None:
            return
        for frame in end.receive():
            if isinstance(frame, link.Hello):
                self.children.on_hello(name)
            elif isinstance(frame, link.State):
                self.claiming.pop(name, None)
                self.children.on_state(name, frame.state, frame.task)
            elif isinstance(frame, link.TasksReady):
                self.route_tasks(frame.ids)

    def route_tasks(self, ids: list[str]) -> list[str]:
        """Wake one idle teammate, not already woken for a task, per ready task, with the
        task to claim (SPEC §6: not every teammate)."""
        now = time.monotonic()
        woken: list[str] = []
        idle = [
            c for c in self.children.idle() if now - self.claiming.get(c.name, -CLAIM_WINDOW) >= CLAIM_WINDOW
        ]
        for task_id, child in zip(ids, idle, strict=False):
            end = self.links.get(child.name)
            if end is not None and end.send(link.Wake(task=task_id)):
                self.claiming[child.name] = now
                woken.append(child.name)
        self.task_wakes += len(woken)
        return woken

    # ------------------------------------------------------------ the lead's inbox

    def _schedule_lead_check(self) -> None:
        interval = POLL_INTERVAL if not self.zmq else self.options.fallback_poll
        self.reactor.call_later(interval, self._lead_fallback)

    def _lead_fallback(self) -> None:
        self._check_lead_inbox()
        self._schedule_lead_check()

    def _on_lead_wake(self) -> None:
        assert self.lead_wake is not None
        self.lead_wake.drain()
        self._check_lead_inbox()

    def _check_lead_inbox(self) -> None:
        """Act on what arrived since the last look; take what is the supervisor's to take."""
        try:
            new, cursor = self.lead_mailbox.scan(self.lead_cursor)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s", exc.message)
            return
        policy = lead_inbox.Policy(
            plan_approval=self.options.plan_approval,
            lead_permission_mode=self.options.lead_permission_mode,
            lead_attached=self.lead_pid is not None,
        )
        take_positions, take_messages = [], []
        for position, message in new:
            if message.read:
                continue
            verdict = lead_inbox.judge(message, policy)
            for action in verdict.actions:
                self._apply(action)
            if verdict.take:
                take_positions.append(position)
                take_messages.append(message)
        try:
            if take_positions:
                self.lead_mailbox.mark_positions(take_positions, take_messages)
        except AgentTeamsError as exc:
            log.warning("lead inbox: %s; will look again", exc.message)
            return  # the cursor stays: these are seen again next time
        self.lead_cursor = cursor

    def _apply(self, action: lead_inbox.Action) -> None:
        if isinstance(action, lead_inbox.Idle):
            self.children.on_idle_notification(action.name)
            self._set_inactive(action.name)
        elif isinstance(action, lead_inbox.ExitApproved):
            self.children.on_shutdown_approved(action.name, action.request_id)
        elif isinstance(action, lead_inbox.ExitRejected):
            self.children.on_shutdown_rejected(action.name, action.request_id, action.reason)
        elif isinstance(action, lead_inbox.AnswerPlan) and action.name in self.children.by_name:
            self.messenger.send_body(LEAD_NAME, action.name, action.response)

    def _set_inactive(self, name: str) -> None:
        child = self.children.by_name.get(name)
        if child is not None and child.state != TeammateState.STOPPING:
            TeamFiles(self).inactive(name)

    def _attach_lead(self, pid: int) -> None:
        self._detach_lead()
        self.lead_pid = pid
        self.lead_pidfd = pidfd_open(pid)
        if self.lead_pidfd is None:
            self.lead_pid = None
            return
        self.reactor.add_reader(self.lead_pidfd, self._detach_lead)
        log.info("lead agent pid %d attached", pid)

    def _detach_lead(self) -> None:
        if self.lead_pidfd is not None:
            self.reactor.remove_reader(self.lead_pidfd)
            os.close(self.lead_pidfd)
            self.lead_pidfd = None
        if self.lead_pid is not None:
            log.info("lead agent pid %d gone; the supervisor answers for the lead again", self.lead_pid)
            for child in list(self.children.by_name.values()):
                if child.spec.parent == LEAD_NAME and child.alive:
                    self.children.force_stop(child, 0.5)  # the lead's subagents die with it
        self.lead_pid = None
        self.lead_cursor = Cursor()  # look at everything again: it is ours once more

    # ------------------------------------------------------------ down

    def _begin_down(self, grace: float) -> None:
        self.children.stop_all(grace, self._finish_down)

    def _finish_down(self) -> None:
        for caller in self.down_callers:
            self.control.answer(caller)
        self.down_callers.clear()
        self.reactor.stop()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)

    def take(flag: str) -> str:
        i = args.index(flag)
        value = args[i + 1]
        del args[i : i + 2]
        return value

    root, team = take("--root"), take("--team")
    ready_fd = int(take("--ready-fd")) if "--ready-fd" in args else -1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor %(message)s", stream=sys.stderr)
    try:
        sup = Supervisor(Path(root), team, SupervisorOptions.from_argv(args))
        sup.start()
    except AgentTeamsError as exc:
        if ready_fd >= 0:
            os.write(ready_fd, f"error {exc.message}\n".encode())
        print(f"supervisor: {exc.message}", file=sys.stderr)
        return 1
    if ready_fd >= 0:
        os.write(ready_fd, f"ok {os.getpid()}\n".encode())
        os.close(ready_fd)
    sup.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
