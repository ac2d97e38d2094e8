"""The supervisor daemon: one per team (``python -m supervisor.daemon``). It wires its parts
together, answers the control socket, and owns what no part does: starting teammates and
subagents (their config entry, first message and result file) and bringing the team down.

- :mod:`.reactor`: one thread: readers, timers, signals (SIGCHLD: deaths seen at once);
- :mod:`.children`: each agent's lifecycle, through :mod:`.processes` (the fork server,
  reaping) and :mod:`.team_files` (config, tasks, events); :mod:`.router`: the links and the
  doorbell, ready tasks; :mod:`.specs`: who is started and how, checked before anything is written;
- :class:`ipc.control.ControlServer`: requests from the CLI, the API and agents, answered in
  arrival order, some later (a spawn when the teammate is ready), so commands queue;
- :mod:`.lead_desk`: the lead's inbox, and a lead agent that may run; :mod:`.resident`: the
  resident door's socket, its program started on demand; :mod:`.owner`: the command it went
  down with. It is on the control path only: messages go from sender to recipient directly.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ipc import control, lock_settings, memtrace, subagents, worktrees
from ipc.cc_peer import ClaudePeer
from ipc.cc_registry import mode_class
from ipc.errors import AgentTeamsError, Conflict, InvalidInput, NotFound
from ipc.launch import LaunchSpec, SupervisorOptions
from ipc.model_specs import uses_api
from ipc.options import SubagentOptions, TeammateOptions
from ipc.osproc import fix_malloc_mmap_threshold, set_child_subreaper, set_process_name
from ipc.paths import TeamPaths
from ipc.poller import close_context, context
from ipc.replies import SpawnReply, SubagentReply, SubagentResult, TeamStatus
from ipc.schemas import LEAD_NAME, Member
from ipc.team_state import TeamState
from ipc.wake import WakeListener, Waker
from supervisor.daemon.capacity import FILES_PER_AGENT, Capacity
from supervisor.daemon.child import Child, Done
from supervisor.daemon.children import Children
from supervisor.daemon.inbox_watch import InboxWatch
from supervisor.daemon.inprocess import InProcess
from supervisor.daemon.lead_desk import LeadDesk
from supervisor.daemon.outsiders import BACKEND as OUTSIDE
from supervisor.daemon.outsiders import Outsiders
from supervisor.daemon.owner import watch_owner
from supervisor.daemon.panes import Backends, Panes
from supervisor.daemon.policy import RestartPolicy
from supervisor.daemon.processes import Processes
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.resident import ResidentDoor
from supervisor.daemon.router import Router
from supervisor.daemon.specs import TeamContext, check_spawn, subagent_spec, teammate_spec
from supervisor.daemon.team_files import TeamFiles

if TYPE_CHECKING:
    from supervisor.daemon.engine_host import EngineHost

log = logging.getLogger("agentteams.supervisor")
SUPERVISOR_LOCK_TIMEOUT = 1.0  # a frozen teammate holding a lock costs a retry, not the loop


class Supervisor:
    def __init__(self, root: Path, team: str, options: SupervisorOptions | None = None) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.options = options or SupervisorOptions()
        self.runtime = self.paths.runtime_dir()
        self.down_callers: list[control.Caller] = []
        self.started = time.time()

    @property
    def zmq(self) -> bool:
        return self.options.wake == "zmq"

    # ------------------------------------------------------------ start-up

    def start(self) -> None:
        lock_settings.set_default_lock_timeout(SUPERVISOR_LOCK_TIMEOUT)
        # Sized for every agent the open-file limit could hold; each is admitted on arrival.
        self.capacity = Capacity(per_agent_files=FILES_PER_AGENT if self.zmq else 1)
        self.ctx = context(self.capacity.max_sockets)
        self.waker = Waker(self.runtime, linger_ms=0, ctx=self.ctx, kept=None)
        self.state = TeamState(self.paths, doorbell=self.waker)
        session = self.state.config.read().lead_session_id  # fails early on an unknown team
        self.pid = os.getpid()
        self.context = TeamContext(
            self.team, self.paths.root, session, self.options, self.pid, self.capacity.agent_nofile
        )
        set_child_subreaper()
        set_process_name("at-supervisor")
        fix_malloc_mmap_threshold()  # it runs for hours: its RSS must not climb in steps
        self._lock_fd = self._take_pid_lock()
        self.reactor = Reactor()
        self.control = control.ControlServer(self.ctx, self.runtime)
        self.reactor.add_reader(self.control, self._on_control)
        self.door = ResidentDoor(self.reactor, self.runtime, self.paths.root, self.team)
        self.router = Router(self.reactor, self.ctx, self.runtime, self.waker)
        self.processes = Processes(self.runtime, method=self.options.spawn)
        self.panes = Panes(self.reactor, self.team, self.runtime, self.options, self.processes.log_path)
        self.panes.on_exit = lambda pid, status: self.children.on_exit(pid, status)
        self.panes.runs_again = self._runs_again
        self.threads = InProcess(self.reactor, self.paths)
        self.threads.on_exit = self.panes.on_exit
        seam = Backends(self.processes, self.panes, self.threads)
        self.files = TeamFiles(self.state, self.router, seam.handle, self.reactor.call_later)
        self.panes.closed = self.files.pane_closed
        seam.issue_key = self.files.issue_key
        self._ensure_lead_key()
        policy = RestartPolicy(
            mode=self.options.restart, intensity=self.options.intensity, period=self.options.period
        )
        self.children = Children(seam, self.files, self.reactor, policy, wait_for_hello=self.zmq)
        self.router.attach(self.children, self.state.tasks, hand_out=self.zmq and self.state.engine is None)
        self.outsiders = Outsiders(self.reactor, self.files)
        doorbell = WakeListener(self.ctx, self.runtime, LEAD_NAME) if self.zmq else None
        self.lead = LeadDesk(
            self.reactor, self.state, self.options, self.children, self.files, self.router, doorbell
        )
        self.inbox_watch = InboxWatch(self.reactor, self.paths, self.children, self.router, self.lead.check)
        self.lead_peer = self._expose_lead() if self.options.claude_peers else None
        self.engine_host: EngineHost | None = None
        if self.state.engine is not None:
            from supervisor.daemon.engine_host import EngineHost

            self.engine_host = EngineHost(
                self.reactor,
                self.state,
                lambda ids: self.router.route_tasks(ids, relay=False),
                self.lead.woken,
                lambda: [c.pid for c in self.children.by_name.values() if c.alive and c.pid],
            )
            self.router.relay = self.engine_host.publish_ready
        self.reactor.on_signal(signal.SIGCHLD, self._reap)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.reactor.on_signal(sig, self._on_terminate, at_once=self._impatient)
        watch_owner(self.reactor, self.options.owner_pid, self._on_terminate)
        self._resume_members()

    def _ensure_lead_key(self) -> None:
        """A team made before keys existed gets its lead's key pair now (ipc.trust)."""
        try:
            # On the engine each host's supervisor signs for the lead with a key of its own.
            self.state.config.ensure_lead_key(replace_lost=self.state.engine is None)
        except AgentTeamsError as exc:
            log.error("no lead key for this team: %s", exc.message)

    def _expose_lead(self) -> ClaudePeer:
        """The lead's side, listed to the sessions of ``--claude-peers``: what they send lands
        in the lead's inbox; the lead's answers go out from here."""
        lead = self.state.config.read().member(LEAD_NAME)
        mode = mode_class(self.options.lead_permission_mode)
        return ClaudePeer(
            self.paths,
            LEAD_NAME,
            Path(self.options.claude_peers).expanduser(),
            cwd=lead.cwd if lead is not None and lead.cwd else os.getcwd(),
            mode=lambda: mode,
        )

    def _take_pid_lock(self) -> int:
        fd = os.open(self.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AgentTeamsError(f"a supervisor for team {self.team!r} is already running") from None
        (self.runtime / "supervisor.pid").write_text(f"{os.getpid()}\n")
        # No other supervisor runs: a subagent recorded running died with the one before.
        subagents.end_orphans(self.paths, "its supervisor ended before it did")
        return fd

    def _resume_members(self) -> None:
        """Start every teammate the config lists: a stopped or crashed team comes back."""
        members = self.state.config.read().teammates()
        if self.options.teammate_mode == "tmux" or any(m.backend_type == "tmux" for m in members):
            self.panes.sweep()  # what a supervisor killed before us left
        for member in members:
            if member.backend_type == OUTSIDE:
                self.outsiders.resume(member)  # an MCP session: its own process, not ours to start
                continue
            if self.state.engine is not None and member.host_name != self.state.host:
                continue  # another host's teammate: its supervisor resumes it
            if released := self.state.tasks.release_owner(member.name):
                log.info("resume: released %s's tasks %s", member.name, released)
            try:
                self._admit(member.name)
                self._launch(teammate_spec(self.context, member, permission_mode=member.mode_name))
            except AgentTeamsError as exc:
                log.error("cannot resume %s: %s", member.name, exc.message)

    def _admit(self, name: str) -> None:
        """Room for one more agent, or LimitReached naming the limit (before anything is
        written). A restart needs none: the agent keeps its link."""
        self.capacity.admit(name, len(self.router.links) if self.zmq else len(self.children.by_name))

    def _runs_again(self, name: str) -> bool:
        """An exited teammate is to be restarted (its pane is kept for it)."""
        child = self.children.by_name.get(name)
        return child is not None and child.restart_timer is not None

    def _launch(self, spec: LaunchSpec, on_ready: Done | None = None) -> Child:
        if spec.runs_claude:
            self.inbox_watch.claude_teammate_started()
        if self.zmq:  # an offline teammate's turns take this host's CPU; an API's mostly wait
            self.router.open(spec.agent_name, cpu_bound=not uses_api(spec.model))
        return self.children.add(spec, on_ready)

    # ------------------------------------------------------------ the loop

    def run(self) -> None:
        try:
            self.reactor.run()
        finally:
            self._cleanup()

    def _reap(self) -> None:
        for pid, status in self.processes.reap():
            if pid == self.threads.host_pid:
                self.threads.host_exited(status)
            else:
                self.children.on_exit(pid, status)

    def _on_terminate(self) -> None:
        if not self.children.stopping_all:
            log.info("signalled: bringing the team down")
            self._begin_down(grace=5.0)

    def _cleanup(self) -> None:
        if self.lead_peer is not None:
            self.lead_peer.close()
        if self.engine_host is not None:
            self.engine_host.close()
        self.state.close()
        self.router.close()
        self.outsiders.close()
        self.lead.close()
        self.waker.close()
        self.processes.close()
        self.panes.close_all()
        self.threads.close()
        self.door.close()
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
                self.control.fail(caller, exc.message, control.kind_of(exc))
            except Exception as exc:  # a bug must not take the team down: answer and log
                log.exception("request %r failed", request)
                self.control.fail(caller, f"internal error: {type(exc).__name__}: {exc}")

    def _dispatch(self, caller: control.Caller, request: control.Request) -> None:
        if isinstance(request, control.Status):
            self.control.answer(caller, self.status())
        elif isinstance(request, control.TasksReady):
            woken = self.router.route_tasks(request.ids, rung=request.rung, ahead=request.ahead)
            self.control.answer(caller, control.WakeReply(woken=woken))
        elif isinstance(request, control.Push):
            child = self.children.get(request.name)
            if not self.router.push(child.name, request.text):
                raise Conflict(f"{child.name} is not connected; send through its inbox instead")
            self.control.answer(caller)
        elif isinstance(request, control.Spawn):
            self._spawn(caller, request.options)
        elif isinstance(request, control.Restart):
            self.children.restart(request.name, self._replier(caller))
        elif isinstance(request, control.Shutdown):
            r, done = request, self._replier(caller)
            self.children.request_stop(r.name, reason=r.reason, grace=r.grace, force=r.force, done=done)
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
        elif isinstance(request, control.SessionSend):
            if self.lead_peer is None:
                raise Conflict(
                    f"team {self.team!r} is not reachable from Claude Code; start it with "
                    "'agentteams up TEAM --claude-peers DIR'"
                )
            sent = self.lead_peer.send(request.sender, request.to, request.text, request.summary)
            self.control.answer(caller, control.SessionSent(msg_id=sent["msg_id"]))
        elif isinstance(request, control.AttachLead):
            self.lead.attach(request.pid)
            self.control.answer(caller)
        elif isinstance(request, control.WatchMember):
            if self.state.config.require_member(request.name).backend_type != OUTSIDE:
                raise InvalidInput(f"{request.name} is not a member joined through MCP")
            self.outsiders.watch(request.name, request.pid)
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
            door=self.door.pid,
            task_wakes=self.router.task_wakes,
            lead_checks=self.lead.checks,
            lead_check_seconds=self.lead.check_seconds,
            teammates=[self.threads.place(s) for s in self.children.statuses()] + self.outsiders.statuses(),
        )

    def _spawn(self, caller: control.Caller, options: TeammateOptions) -> None:
        """Check everything first: nothing is written for a spawn that cannot start."""
        if self.children.stopping_all:
            raise Conflict("the team is shutting down; no new teammates")
        self._admit(options.name)
        options, cwd = check_spawn(self.context, self.state.config.read(), options)
        color = self.context.definition(options.agent_type, cwd).color or ""  # its definition's
        member = self.files.add_member(options, cwd, color)
        if options.isolation == "worktree":
            member = self._isolate(member.name, cwd)
        mailbox = self.state.mailbox(member.name)
        if options.prompt:  # the first inbox message: the prompt, from the lead, no summary or color
            mailbox.append(sender=LEAD_NAME, text=options.prompt, member_checked=True)
        else:
            mailbox.create()
        renamed = options.name if member.name != options.name else ""
        spec = teammate_spec(self.context, member, permission_mode=options.permission_mode)
        reply = self._replier(caller, renamed_from=renamed)

        def ready(result: msgspec.Struct | None, error: str) -> None:
            self.files.flush()  # its start in the config before the caller hears of it
            reply(result, error)

        self._launch(spec, ready)

    def _isolate(self, name: str, cwd: str) -> Member:
        """The new member's own worktree as its cwd; a member whose worktree cannot be made
        leaves again, so a failed spawn leaves nothing behind."""
        try:
            tree = worktrees.create(self.paths, name, cwd)
        except AgentTeamsError:
            self.state.config.remove_member(name)
            raise
        return self.state.config.update_member(name, cwd=tree.cwd)

    def _spawn_subagent(self, caller: control.Caller, options: SubagentOptions) -> None:
        """A subagent of a running teammate or of the lead agent: its own process, forked
        like a teammate, not a member of the team, stopped with its parent."""
        parent = self.children.by_name.get(options.parent)
        if parent is not None and parent.spec.role != "teammate":
            raise InvalidInput("a subagent cannot start subagents or teammates (the roster is flat)")
        if parent is None and not (options.parent == LEAD_NAME and self.lead.pid is not None):
            raise NotFound(f"{options.parent!r} is not a running agent of this team")
        record = SubagentResult(id="", parent=options.parent)
        if options.resume:  # it goes on from its sidechain, under the same id
            old = self.children.by_name.get(options.resume)
            record = subagents.resumable(self.paths, options, exiting=old is not None and old.alive)
            options = msgspec.structs.replace(options, agent_type=record.agent_type)
        spec = subagent_spec(self.context, self.state.config.read(), options, parent.spec if parent else None)
        self._admit(spec.agent_name)
        subagents.begin(self.paths, record, spec.agent_name, options)
        output = str(self.paths.subagent_result(spec.agent_name))

        def ready(result: msgspec.Struct | None, error: str) -> None:
            if error:
                self.control.fail(caller, error)
            else:
                pid = result.pid if isinstance(result, SpawnReply) else None
                self.control.answer(caller, SubagentReply(id=spec.agent_name, pid=pid, output_file=output))

        self._launch(spec, ready)

    # ------------------------------------------------------------ down

    def _impatient(self) -> None:  # going down (on a signal: also a write the loop is stuck in)
        if self.engine_host is not None:
            self.engine_host.going_down()

    def _begin_down(self, grace: float) -> None:
        self._impatient()
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
