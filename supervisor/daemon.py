"""The supervisor daemon: one per team. It wires the parts together and owns nothing else.

- :mod:`supervisor.reactor`: one thread, readers, timers and signals (SIGCHLD among them,
  so a death is seen at once);
- :mod:`supervisor.children`: each agent's lifecycle, through :mod:`supervisor.processes`
  (the fork server, reaping) and :mod:`supervisor.team_files` (config, tasks, events);
- :mod:`supervisor.specs`: who is started and how, checked before anything is written;
- :class:`ipc.control.ControlServer`: requests from the CLI, the API and agents, answered in
  arrival order, some later (a spawn when the teammate is ready), so commands queue;
- the links (:mod:`ipc.link`): hello, states and ready tasks from each agent, and a wake
  with a task to claim back to one idle teammate per ready task;
- :mod:`supervisor.lead_desk`: the lead's inbox, and a lead agent that may run.

It is on the control path only: messages go from sender to recipient directly.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from ipc import control, link, locks, memtrace, subagents
from ipc.clock import now_ms
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, InvalidInput, NotFound
from ipc.launch import (
    LaunchSpec,
    SpawnReply,
    SubagentOptions,
    SubagentReply,
    SubagentResult,
    SupervisorOptions,
    TeammateOptions,
    TeamStatus,
)
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.osproc import fix_malloc_mmap_threshold, set_child_subreaper, set_process_name
from ipc.paths import TeamPaths
from ipc.poller import close_context, context
from ipc.schemas import LEAD_NAME
from ipc.tasks import TaskList
from ipc.wake import LEAD_AGENT, Waker
from supervisor.child import Child, Done
from supervisor.children import Children
from supervisor.inbox_watch import InboxWatch
from supervisor.lead_desk import LeadDesk
from supervisor.policy import RestartPolicy
from supervisor.processes import Processes
from supervisor.reactor import Reactor
from supervisor.specs import TeamContext, check_spawn, subagent_spec, teammate_spec
from supervisor.team_files import TeamFiles

log = logging.getLogger("agentteams.supervisor")
SUPERVISOR_LOCK_TIMEOUT = 1.0  # a frozen teammate holding a lock costs a retry, not the loop
CLAIM_WINDOW = 2.0  # a teammate woken for a task is not woken for another for this long


class Supervisor:
    def __init__(self, root: Path, team: str, options: SupervisorOptions | None = None) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.root = self.paths.root
        self.options = options or SupervisorOptions()
        self.config = TeamConfigStore(self.root, self.team)
        self.tasks = TaskList(self.root, self.team)
        self.runtime = self.paths.runtime_dir()
        self.links: dict[str, link.SupervisorLink] = {}
        self.claiming: dict[str, float] = {}  # teammate → when it was woken for a task
        self.task_wakes = 0  # wakes sent for ready tasks, ever (the benchmarks count them)
        self.down_callers: list[control.Caller] = []
        self.started = time.time()

    @property
    def zmq(self) -> bool:
        return self.options.wake == "zmq"

    # ------------------------------------------------------------ start-up

    def start(self) -> None:
        locks.set_default_lock_timeout(SUPERVISOR_LOCK_TIMEOUT)
        session = self.config.read().lead_session_id  # fails early on an unknown team
        self.pid = os.getpid()
        self.context = TeamContext(self.team, self.root, session, self.options, self.pid)
        set_child_subreaper()
        set_process_name("at-supervisor")
        fix_malloc_mmap_threshold()  # it runs for hours: its RSS must not climb in steps
        self._lock_fd = self._take_pid_lock()
        self.reactor = Reactor()
        self.ctx = context()
        self.control = control.ControlServer(self.ctx, self.runtime)
        self.reactor.add_reader(self.control, self._on_control)
        self.waker = Waker(self.runtime, linger_ms=0, ctx=self.ctx)
        self.messenger = Messenger(self.root, self.team, waker=self.waker)
        self.processes = Processes(self.runtime, method=self.options.spawn)
        self.files = TeamFiles(self)
        policy = RestartPolicy(
            mode=self.options.restart, intensity=self.options.intensity, period=self.options.period
        )
        self.children = Children(self.processes, self.files, self.reactor, policy, wait_for_hello=self.zmq)
        self.lead = LeadDesk(self)
        self.inbox_watch = InboxWatch(self)
        self.reactor.on_signal(signal.SIGCHLD, self._reap)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.reactor.on_signal(sig, self._on_terminate)
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
                self._launch(teammate_spec(self.context, member, permission_mode=""))
            except AgentTeamsError as exc:
                log.error("cannot resume %s: %s", member.name, exc.message)

    def _launch(self, spec: LaunchSpec, on_ready: Done | None = None) -> Child:
        if spec.backend == "claude-code":
            self.inbox_watch.claude_teammate_started()
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

    def wake_agent(self, name: str) -> None:
        """Wake an agent of this team (the lead agent, when it is the one)."""
        self.waker.wake(LEAD_AGENT if name == LEAD_NAME else name)

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
        self.lead.close()
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
        elif isinstance(request, control.SpawnSubagent):
            self._spawn_subagent(caller, request.options)
        elif isinstance(request, control.StopSubagent):
            sub = self.children.by_name.get(request.subagent)
            if sub is None or sub.spec.role != "subagent":
                raise NotFound(f"no running subagent {request.subagent!r}")
            subagents.finish(self.paths, sub.name, "killed", error="stopped by its parent (TaskStop)")
            self.children.force_stop(sub, 0.5)
            self.control.answer(caller)
        elif isinstance(request, control.AttachLead):
            self.lead.attach(request.pid)
            self.control.answer(caller)

    def _replier(self, caller: control.Caller, **extra: Any) -> Done:
        def done(result: msgspec.Struct | None, error: str) -> None:
            if error:
                self.control.fail(caller, error)
            elif extra and result is not None:
                self.control.answer(caller, msgspec.structs.replace(result, **extra))
            else:
                self.control.answer(caller, result)

        return done

    def status(self) -> TeamStatus:
        return TeamStatus(
            team=self.team,
            supervisor=self.pid,
            forkserver=self.processes.forkserver_pid,
            wake=self.options.wake,
            started=self.started,
            runtime=str(self.runtime),
            lead_pid=self.lead.pid,
            task_wakes=self.task_wakes,
            lead_checks=self.lead.checks,
            lead_check_seconds=self.lead.check_seconds,
            teammates=self.children.statuses(),
        )

    def _spawn(self, caller: control.Caller, options: TeammateOptions) -> None:
        """Check everything first: nothing is written for a spawn that cannot start."""
        if self.children.stopping_all:
            raise InvalidInput("the team is shutting down; no new teammates")
        options, cwd = check_spawn(self.context, self.config.read(), options)
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
        spec = teammate_spec(self.context, member, permission_mode=options.permission_mode)
        self._launch(spec, self._replier(caller, renamed_from=renamed))

    def _spawn_subagent(self, caller: control.Caller, options: SubagentOptions) -> None:
        """A subagent of a running teammate or of the lead agent: its own process, forked
        like a teammate, not a member of the team, stopped with its parent."""
        parent = self.children.by_name.get(options.parent)
        if parent is not None and parent.spec.role != "teammate":
            raise InvalidInput("a subagent cannot start subagents or teammates (the roster is flat)")
        if parent is None and not (options.parent == LEAD_NAME and self.lead.pid is not None):
            raise NotFound(f"{options.parent!r} is not a running agent of this team")
        spec = subagent_spec(self.context, self.config.read(), options, parent.spec if parent else None)
        subagents.write(
            self.paths,
            SubagentResult(
                id=spec.agent_name,
                parent=options.parent,
                description=options.description,
                prompt=options.prompt,
                agent_type=options.agent_type,
                background=options.background,
                started_ms=now_ms(),
            ),
        )
        output = str(self.paths.subagent_result(spec.agent_name))

        def ready(result: msgspec.Struct | None, error: str) -> None:
            if error:
                self.control.fail(caller, error)
            else:
                pid = result.pid if isinstance(result, SpawnReply) else None
                self.control.answer(caller, SubagentReply(id=spec.agent_name, pid=pid, output_file=output))

        self._launch(spec, ready)

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
    memtrace.start("supervisor")
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
