"""The supervisor daemon: one per team. It forks teammates from the zygote, routes wakes,
answers the control socket, consumes the lead's inbox, and reaps, restarts and stops.

Single-threaded: one zmq.Poller over the control ROUTER, every teammate's PAIR and a
signal wake-up fd. SIGCHLD lands on that fd, so a death is seen at once, not on a scan.
Requests are handled in arrival order; a long one (spawn, shutdown, down) is answered
later, when done, so commands queue rather than being refused.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import heapq
import itertools
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from ipc import control, storage, wake
from ipc.clock import now_iso, now_ms
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, InvalidInput, LockTimeout, NotFound
from ipc.mailbox import Mailbox
from ipc.messaging import send_body, send_shutdown_request
from ipc.osproc import kill_session, set_child_subreaper, set_process_name
from ipc.paths import TeamPaths
from ipc.schemas import (
    LEAD_NAME,
    IdleNotification,
    Member,
    PlanApprovalRequest,
    ShutdownApproved,
    ShutdownRejected,
    TeammateTerminated,
    parse_body,
)
from ipc.storage import append_line
from ipc.tasks import TaskList
from supervisor import approvals
from supervisor.policy import RestartPolicy
from supervisor.states import SpawnSpec, Teammate, TeammateState
from supervisor.zygote import SpawnOrder, Zygote

log = logging.getLogger("agentteams.supervisor")
S = TeammateState
READY_TIMEOUT = 30.0
STOP_GRACE = 3.0  # SIGTERM → SIGKILL
SUPERVISOR_LOCK_TIMEOUT = 1.0
RETRY_AFTER = 0.5


@dataclass(order=True)
class _Timer:
    when: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


@dataclass
class _Waiter:
    """A control request answered later."""

    identity: bytes
    request_id: str
    timer: _Timer | None = None


def _teammate_argv(spec: SpawnSpec, team: str, session: str) -> list[str]:
    argv = [
        "--agent-id", spec.agent_id, "--agent-name", spec.name, "--team-name", team,
        "--agent-color", spec.color, "--parent-session-id", session,
        "--agent-type", spec.agent_type, "--model", spec.model,
    ]
    if spec.plan_mode_required:
        argv.append("--plan-mode-required")
    if spec.permission_mode:
        argv += ["--permission-mode", spec.permission_mode]
    return argv


class Supervisor:
    def __init__(
        self,
        root: Path,
        team: str,
        *,
        wake_mode: wake.WakeMode = "zmq",
        fallback_poll: float = wake.DEFAULT_FALLBACK_POLL,
        policy: RestartPolicy | None = None,
        spawn_method: str = "zygote",
        plan_approval: str = "auto",
        lead_permission_mode: str = "acceptEdits",
    ) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.root = self.paths.root
        self.wake_mode = wake_mode
        self.fallback_poll = fallback_poll
        self.policy = policy or RestartPolicy()
        self.spawn_method = spawn_method
        self.plan_approval = plan_approval
        self.lead_permission_mode = lead_permission_mode
        self.config = TeamConfigStore(self.root, self.team)
        self.tasks = TaskList(self.root, self.team)
        self.lead_inbox = Mailbox(self.root, self.team, LEAD_NAME)
        self.runtime = self.paths.runtime_dir()
        self.teammates: dict[str, Teammate] = {}
        self.by_pid: dict[int, Teammate] = {}
        self.ends: dict[str, wake.SupervisorEnd] = {}
        self.ready_waiters: dict[str, list[_Waiter]] = {}
        self.stop_waiters: dict[str, list[_Waiter]] = {}
        self.down_waiter: _Waiter | None = None
        self.timers: list[_Timer] = []
        self._seq = itertools.count()
        self.done = False
        self.terminate = False
        self.started = time.time()
        self._next_lead_check = 0.0

    # ------------------------------------------------------------ start-up

    def start(self) -> None:
        storage.set_default_lock_timeout(SUPERVISOR_LOCK_TIMEOUT)
        session = self.config.read().lead_session_id  # fails early on an unknown team
        self.session = session
        self.pid = os.getpid()
        # The zygote first: it must be forked before any ZeroMQ context exists.
        self.zygote = Zygote.start(self.pid) if self.spawn_method == "zygote" else None
        set_child_subreaper()
        set_process_name("at-supervisor")
        self._lock_fd = self._take_pid_lock()
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
        self.router = control.bind_router(self.ctx, self.runtime)
        self.poller = zmq.Poller()
        self.poller.register(self.router, zmq.POLLIN)
        self.sig_r, sig_w = socket.socketpair()
        self.sig_r.setblocking(False)
        sig_w.setblocking(False)
        self._sig_w = sig_w  # kept referenced: the wake-up fd must stay open for the daemon's life
        signal.set_wakeup_fd(sig_w.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._on_terminate)
        signal.signal(signal.SIGINT, self._on_terminate)
        self.poller.register(self.sig_r.fileno(), zmq.POLLIN)
        self._resume_members()

    def _take_pid_lock(self) -> int:
        fd = os.open(self.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AgentTeamsError(f"a supervisor for team {self.team!r} is already running") from None
        (self.runtime / "supervisor.pid").write_text(f"{os.getpid()}\n")
        return fd

    def _on_terminate(self, signum: int, frame: object) -> None:
        self.terminate = True

    def _resume_members(self) -> None:
        """Start every teammate the config lists: after a supervisor death, the team resumes."""
        for member in self.config.read().teammates():
            released = self.tasks.release_owner(member.name)
            if released:
                log.info("resume: released %s's tasks %s", member.name, released)
            teammate = Teammate(spec=self._spec(member))
            self.teammates[member.name] = teammate
            self._launch(teammate)

    @staticmethod
    def _spec(member: Member, permission_mode: str = "") -> SpawnSpec:
        return SpawnSpec(
            name=member.name,
            agent_id=member.agent_id,
            color=member.color if isinstance(member.color, str) else "blue",
            model=member.model,
            agent_type=member.agent_type,
            plan_mode_required=member.plan_mode_required is True,
            permission_mode=permission_mode,
            cwd=member.cwd or str(Path.cwd()),
        )

    # ------------------------------------------------------------ timers

    def after(self, delay: float, action: Callable[[], None]) -> _Timer:
        timer = _Timer(time.monotonic() + delay, next(self._seq), action)
        heapq.heappush(self.timers, timer)
        return timer

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self.timers and self.timers[0].when <= now:
            timer = heapq.heappop(self.timers)
            if not timer.cancelled:
                timer.action()

    @property
    def _lead_poll(self) -> float:
        return wake.POLL_INTERVAL if self.wake_mode == "poll" else self.fallback_poll

    def _poll_timeout_ms(self) -> int:
        wait = max(0.0, self._next_lead_check - time.monotonic())
        if self.timers:
            wait = min(wait, max(0.0, self.timers[0].when - time.monotonic()))
        return int(wait * 1000) + (1 if wait > 0 else 0)

    # ------------------------------------------------------------ main loop

    def run(self) -> None:
        while not self.done:
            try:
                self._iterate()
            except Exception:  # the supervisor must outlive any one bad event: log, go on
                log.exception("error in the supervisor loop; continuing")
        self._cleanup()

    def _retry(self, action: Callable[[], None], what: str) -> None:
        """Run ``action``; if a lock is held (a frozen teammate), try again shortly."""
        try:
            action()
        except LockTimeout as exc:
            log.warning("%s: %s; retrying in %.1fs", what, exc.message, RETRY_AFTER)
            self.after(RETRY_AFTER, lambda: self._retry(action, what))

    def _iterate(self) -> None:
        events = dict(self.poller.poll(self._poll_timeout_ms()))
        if self.router in events:
            self._drain_control()
        for name, end in list(self.ends.items()):
            if end.socket in events:
                self._drain_teammate(name, end)
        if self.sig_r.fileno() in events:
            with contextlib.suppress(BlockingIOError):
                self.sig_r.recv(4096)
        self._reap()
        if self.terminate and self.down_waiter is None:
            self._begin_down(None, grace=5.0)
        self._run_timers()
        if time.monotonic() >= self._next_lead_check:
            self._retry(self._check_lead_inbox, "lead inbox")  # the fallback poll, due however busy

    def _cleanup(self) -> None:
        for end in self.ends.values():
            end.close()
        if self.zygote is not None:
            self.zygote.close()
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.zygote.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.zygote.pid, 0)
        self.router.close(0)
        self.ctx.term()
        control.control_path(self.runtime).unlink(missing_ok=True)
        (self.runtime / "supervisor.pid").unlink(missing_ok=True)

    # ------------------------------------------------------------ control socket

    def _drain_control(self) -> None:
        while True:
            try:
                frames = self.router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 2:
                continue  # not from a DEALER speaking our protocol: drop
            identity, data = frames
            try:
                request = control.decode_request(data)
            except InvalidInput as exc:
                self._reply(identity, control.request_id_of(data), error=exc.message)
                continue
            try:
                self._dispatch(identity, request)
            except AgentTeamsError as exc:
                self._reply(identity, request.id, error=exc.message)
            except Exception as exc:  # a bug must not take the team down: answer and log
                log.exception("request %r failed", request)
                self._reply(identity, request.id, error=f"internal error: {type(exc).__name__}: {exc}")

    def _reply(self, identity: bytes, request_id: str, result: Any = None, error: str = "") -> None:
        reply = control.Reply(id=request_id, ok=not error, result=result, error=error)
        with contextlib.suppress(zmq.ZMQError):  # the client went away
            self.router.send_multipart([identity, control.encode(reply)], zmq.NOBLOCK)

    def _answer(self, waiter: _Waiter, result: Any = None, error: str = "") -> None:
        if waiter.timer is not None:
            waiter.timer.cancelled = True
        self._reply(waiter.identity, waiter.request_id, result, error)

    def _dispatch(self, identity: bytes, request: control.Request) -> None:
        if isinstance(request, control.Status):
            self._reply(identity, request.id, self.status())
        elif isinstance(request, control.WakeAgent):
            self._reply(identity, request.id, {"woken": self.ring(request.name, sender="")})
        elif isinstance(request, control.Push):
            teammate = self._require(request.name)
            end = self.ends.get(teammate.name)
            if end is None or not end.send(wake.UserMessage(text=request.text)):
                raise InvalidInput(f"{teammate.name} is not connected; send through its inbox instead")
            self._reply(identity, request.id, {"pushed": True})
        elif isinstance(request, control.Spawn):
            self._spawn(identity, request)
        elif isinstance(request, control.Restart):
            self._restart_command(identity, request)
        elif isinstance(request, control.Shutdown):
            self._shutdown(identity, request)
        elif isinstance(request, control.Down):
            self._begin_down(_Waiter(identity, request.id), grace=request.grace)

    def _require(self, name: str) -> Teammate:
        teammate = self.teammates.get(name)
        if teammate is None:
            known = ", ".join(self.teammates) or "none"
            raise NotFound(f"{name!r} is not a teammate of {self.team!r}; teammates: {known}")
        return teammate

    def status(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "supervisor": self.pid,
            "zygote": self.zygote.pid if self.zygote else None,
            "wake": self.wake_mode,
            "started": self.started,
            "runtime": str(self.runtime),
            "teammates": [
                {
                    "name": t.name,
                    "pid": t.pid,
                    "state": str(t.state),
                    "task": t.current_task,
                    "restarts": len(t.restarts),
                    "incarnation": t.incarnation_ms,
                    "color": t.spec.color,
                    "lastExit": t.last_exit,
                }
                for t in self.teammates.values()
            ],
        }

    # ------------------------------------------------------------ spawning

    def _spawn(self, identity: bytes, request: control.Spawn) -> None:
        if self.down_waiter is not None:
            raise InvalidInput("the team is shutting down; no new teammates")
        lead = self.config.read().member(LEAD_NAME)
        member = self.config.add_member(
            request.name,
            agent_type=request.agent_type,
            model=request.model,
            prompt=request.prompt,
            plan_mode_required=request.plan_mode_required,
            cwd=request.cwd or (lead.cwd if lead else None),  # teammates work in the lead's project
        )
        if request.prompt:
            # The first inbox message is the prompt, from the lead, with no summary or color.
            Mailbox(self.root, self.team, member.name).append(sender=LEAD_NAME, text=request.prompt)
        else:
            Mailbox(self.root, self.team, member.name).create()
        teammate = Teammate(spec=self._spec(member, request.permission_mode))
        self.teammates[member.name] = teammate
        self._launch(teammate)
        self._await_ready(teammate, _Waiter(identity, request.id))

    def _restart_command(self, identity: bytes, request: control.Restart) -> None:
        teammate = self._require(request.name)
        if teammate.alive:
            raise InvalidInput(f"{teammate.name} is {teammate.state}; only an exited or failed teammate can be restarted")
        if teammate.restart_timer is not None:
            teammate.restart_timer.cancelled = True
        teammate.restarts.clear()
        self._launch(teammate)
        self._await_ready(teammate, _Waiter(identity, request.id))

    def _await_ready(self, teammate: Teammate, waiter: _Waiter) -> None:
        if self.wake_mode == "poll" or teammate.state != S.STARTING:
            self._answer(waiter, self._spawn_result(teammate))
            return
        waiter.timer = self.after(READY_TIMEOUT, lambda: self._ready_timeout(teammate.name, waiter))
        self.ready_waiters.setdefault(teammate.name, []).append(waiter)

    def _spawn_result(self, teammate: Teammate) -> dict[str, Any]:
        return {"name": teammate.name, "pid": teammate.pid, "color": teammate.spec.color, "state": str(teammate.state)}

    def _ready_timeout(self, name: str, waiter: _Waiter) -> None:
        with contextlib.suppress(ValueError):
            self.ready_waiters.get(name, []).remove(waiter)
        self._reply(waiter.identity, waiter.request_id, error=f"{name} did not become ready within {READY_TIMEOUT:g}s")

    def _launch(self, teammate: Teammate) -> None:
        spec = teammate.spec
        if self.wake_mode == "zmq" and spec.name not in self.ends:
            end = wake.SupervisorEnd(self.ctx, self.runtime, spec.name)
            self.ends[spec.name] = end
            self.poller.register(end.socket, zmq.POLLIN)
        teammate.incarnation_ms = now_ms()
        env = {
            **os.environ,  # the user's settings (ANTHROPIC_*, AGENTTEAMS_* knobs) reach teammates
            "AGENTTEAMS_ROOT": str(self.root),
            "AGENTTEAMS_CWD": spec.cwd,
            "AGENTTEAMS_WAKE": self.wake_mode,
            "AGENTTEAMS_WAKE_ENDPOINT": wake.endpoint(self.runtime, spec.name) if self.wake_mode == "zmq" else "",
            "AGENTTEAMS_FALLBACK_POLL": str(self.fallback_poll),
            "AGENTTEAMS_INCARNATION_MS": str(teammate.incarnation_ms),
            "AGENTTEAMS_SUPERVISOR_PID": str(self.pid),
        }
        argv = _teammate_argv(spec, self.team, self.session)
        cwd = spec.cwd if os.path.isdir(spec.cwd) else str(self.root)
        if self.zygote is not None:
            pid = self.zygote.spawn(SpawnOrder(argv=argv, env=env, cwd=cwd))
        else:
            import subprocess

            pid = subprocess.Popen(
                [sys.executable, "-m", "agentproc", *argv], env=env, cwd=cwd,
                stdin=subprocess.DEVNULL, start_new_session=True,
            ).pid
        teammate.pid = pid
        teammate.started_at = time.monotonic()
        teammate.to(S.STARTING)
        self.by_pid[pid] = teammate
        self.config.update_member(spec.name, tmux_pane_id=f"process:{pid}", is_active=True)
        log.info("started %s pid %d (%s)", spec.name, pid, self.spawn_method)

    # ------------------------------------------------------------ wake routing

    def ring(self, recipient: str, sender: str) -> list[str]:
        """Wake ``recipient`` (``*``: every teammate but the sender; team-lead: read its inbox)."""
        if recipient == LEAD_NAME:
            self._retry(self._check_lead_inbox, "lead inbox")
            return [LEAD_NAME]
        names = [n for n in self.teammates if n != sender] if recipient == "*" else [recipient]
        woken = []
        for name in names:
            end = self.ends.get(name)
            if end is not None and end.send(wake.Wake()):
                woken.append(name)
        return woken

    def _drain_teammate(self, name: str, end: wake.SupervisorEnd) -> None:
        while True:
            try:
                data = end.socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                frame = wake.decode(data)
            except InvalidInput as exc:
                log.warning("%s: %s; dropped", name, exc.message)
                continue
            teammate = self.teammates.get(name)
            if isinstance(frame, wake.Ring):
                self.ring(frame.recipient, sender=name)
            elif teammate is None:
                continue
            elif isinstance(frame, wake.Hello):
                self._on_ready(teammate)
            elif isinstance(frame, wake.State) and teammate.state in (S.STARTING, S.RUNNING, S.IDLE):
                teammate.to(S.RUNNING if frame.state == "running" else S.IDLE)
                teammate.current_task = frame.task if frame.state == "running" else ""

    def _on_ready(self, teammate: Teammate) -> None:
        if teammate.state == S.STARTING:
            teammate.to(S.RUNNING)
        for waiter in self.ready_waiters.pop(teammate.name, []):
            self._answer(waiter, self._spawn_result(teammate))

    # ------------------------------------------------------------ the lead's inbox

    def _check_lead_inbox(self) -> None:
        """Handle the protocol messages addressed to the lead; plain text stays for the person."""
        self._next_lead_check = time.monotonic() + self._lead_poll
        handled: tuple[type, ...] = (IdleNotification, ShutdownApproved, ShutdownRejected)
        if self.plan_approval != "human":
            handled = (*handled, PlanApprovalRequest)
        if not any(isinstance(parse_body(m.text), handled) for m in self.lead_inbox.unread()):
            return
        taken = self.lead_inbox.mark_read_where(lambda m: isinstance(parse_body(m.text), handled))
        for message in taken:
            body = parse_body(message.text)
            teammate = self.teammates.get(message.from_)
            if teammate is None:
                continue
            if isinstance(body, IdleNotification):
                self._set_active(teammate.name, False)
                # In poll mode there is no PAIR to report states: the notification is the news.
                if teammate.state in (S.STARTING, S.RUNNING):
                    teammate.to(S.IDLE)
                    teammate.current_task = ""
            elif isinstance(body, ShutdownApproved) and teammate.alive and teammate.state != S.STOPPING:
                if body.request_id.startswith("shutdown-") and body.request_id == teammate.shutdown_request_id:
                    teammate.to(S.STOPPING)
                    self._escalate_later(teammate, STOP_GRACE)
            elif isinstance(body, PlanApprovalRequest):
                self._answer_plan(teammate, body)
            elif isinstance(body, ShutdownRejected) and body.request_id == teammate.shutdown_request_id:
                teammate.shutdown_request_id = ""
                for waiter in self.stop_waiters.pop(teammate.name, []):
                    self._answer(waiter, error=f"{teammate.name} rejected the shutdown: {body.reason}")

    def _answer_plan(self, teammate: Teammate, request: PlanApprovalRequest) -> None:
        """The auto policy approves at once with the lead's permission mode, as Claude Code
        does; the lead policy reviews the plan (offline: at least two concrete steps)."""
        if self.plan_approval == "lead":
            approved, feedback = approvals.review_plan(request.plan_content)
        else:
            approved, feedback = True, ""
        response = approvals.plan_response(request, approved, permission_mode=self.lead_permission_mode, feedback=feedback)
        send_body(self.root, self.team, LEAD_NAME, teammate.name, response)
        self.ring(teammate.name, sender="")

    def _set_active(self, name: str, active: bool) -> None:
        with contextlib.suppress(NotFound):
            if self.config.require_member(name).is_active is not active:
                self.config.update_member(name, is_active=active)

    # ------------------------------------------------------------ stopping

    def _shutdown(self, identity: bytes, request: control.Shutdown) -> None:
        teammate = self._require(request.name)
        waiter = _Waiter(identity, request.id)
        if not teammate.alive:
            self._forget(teammate, status="completed", detail="stopped while not running")
            self._answer(waiter, {"name": teammate.name, "stopped": True})
            return
        try:
            self._request_shutdown(teammate, request.reason)
        except LockTimeout:
            if not request.force:
                raise
            log.warning("%s: could not deliver a shutdown request (lock held); stopping it by signal", teammate.name)
            self.stop_waiters.setdefault(teammate.name, []).append(waiter)
            self._force_stop(teammate)
            return
        self.stop_waiters.setdefault(teammate.name, []).append(waiter)

        def on_grace() -> None:
            if not teammate.alive or teammate.pid is None:
                return
            if request.force:
                self._force_stop(teammate)
            else:
                for w in self.stop_waiters.pop(teammate.name, []):
                    self._answer(w, error=f"{teammate.name} did not answer the shutdown request within {request.grace:g}s; use --force")

        waiter.timer = self.after(request.grace, on_grace)

    def _request_shutdown(self, teammate: Teammate, reason: str) -> None:
        response = send_shutdown_request(self.root, self.team, LEAD_NAME, teammate.name, reason)
        teammate.shutdown_request_id = response["request_id"]
        self.ring(teammate.name, sender="")

    def _force_stop(self, teammate: Teammate) -> None:
        if teammate.pid is None:
            return
        if teammate.state != S.STOPPING:
            teammate.to(S.STOPPING)
        with contextlib.suppress(ProcessLookupError):
            os.kill(teammate.pid, signal.SIGTERM)
        self._escalate_later(teammate, STOP_GRACE)

    def _escalate_later(self, teammate: Teammate, delay: float) -> None:
        pid = teammate.pid

        def kill() -> None:
            if teammate.pid == pid and pid is not None:
                log.warning("%s ignored SIGTERM for %.0fs; SIGKILL", teammate.name, delay)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)

        def term() -> None:
            if teammate.pid == pid and pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                self.after(delay, kill)

        self.after(delay, term)

    def _begin_down(self, waiter: _Waiter | None, grace: float) -> None:
        if self.down_waiter is not None and waiter is not None:
            self._answer(waiter, error="the team is already shutting down")
            return
        self.down_waiter = waiter or _Waiter(b"", "")
        for teammate in self.teammates.values():
            if teammate.restart_timer is not None:
                teammate.restart_timer.cancelled = True
            if teammate.alive:
                try:
                    self._request_shutdown(teammate, "The team is shutting down.")
                except LockTimeout:
                    self._force_stop(teammate)
                    continue
                self.after(grace, lambda t=teammate: self._force_stop(t) if t.alive else None)  # type: ignore[misc]
        self._maybe_finish_down()

    def _maybe_finish_down(self) -> None:
        if self.down_waiter is None or any(t.alive for t in self.teammates.values()):
            return
        if self.down_waiter.identity:
            self._answer(self.down_waiter, {"stopped": True})
        self.done = True

    # ------------------------------------------------------------ reaping

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            teammate = self.by_pid.pop(pid, None)
            if teammate is not None:
                self._retry(lambda t=teammate, p=pid, s=status: self._on_exit(t, p, s), f"exit of pid {pid}")  # type: ignore[misc]
            elif self.zygote is not None and pid == self.zygote.pid:
                log.error("zygote died; restarting it is not possible after ZeroMQ started: falling back to exec")
                self.zygote.close()
                self.zygote = None
                self.spawn_method = "exec"

    def _on_exit(self, teammate: Teammate, pid: int, status: int) -> None:
        """Handle a reaped teammate; safe to run again if a lock made it give up halfway."""
        if pid > 0:
            kill_session(pid)  # tools the teammate left behind die with it
        teammate.pid = None
        code = os.waitstatus_to_exitcode(status)
        teammate.last_exit = f"signal {-code}" if code < 0 else f"exit {code}"
        expected = teammate.state == S.STOPPING
        log.info("%s pid %d exited (%s)%s", teammate.name, pid, teammate.last_exit, "" if expected else " unexpectedly")
        for waiter in self.ready_waiters.pop(teammate.name, []):
            self._answer(waiter, error=f"{teammate.name} exited during start-up ({teammate.last_exit}); see the supervisor log")
        if expected or code == 0:
            teammate.to(S.EXITED)
            self._forget(teammate, status="completed" if code == 0 else "killed", exit_code=code)
        else:
            self._on_crash(teammate, code)
        self.ring("*", sender=teammate.name)  # released tasks may be claimable
        self._maybe_finish_down()

    def _forget(
        self, teammate: Teammate, *, status: str, exit_code: int | None = None, detail: str = "",
        released: list[str] | None = None,
    ) -> None:
        """A teammate that has terminated leaves the team: member removed, lead told."""
        released = (released or []) + self.tasks.release_owner(teammate.name)
        self.config.remove_member(teammate.name)
        end = self.ends.pop(teammate.name, None)
        if end is not None:
            self.poller.unregister(end.socket)
            end.close()
        self.teammates.pop(teammate.name, None)
        self._event(teammate, status, exit_code, released, restarting=False, detail=detail)
        self._answer_stopped(teammate)

    def _answer_stopped(self, teammate: Teammate) -> None:
        """Answer every shutdown command waiting on ``teammate``: it is gone."""
        for waiter in self.stop_waiters.pop(teammate.name, []):
            self._answer(waiter, {"name": teammate.name, "stopped": True, "exit": teammate.last_exit})

    def _on_crash(self, teammate: Teammate, code: int) -> None:
        released = self.tasks.release_owner(teammate.name)
        delay = None if self.down_waiter else self.policy.next_delay(teammate.restarts, time.monotonic())
        status = "killed" if code < 0 else "failed"
        if delay is None and self.policy.mode == "never":
            teammate.to(S.EXITED)
            self._forget(teammate, status=status, exit_code=code, detail="restart policy: never", released=released)
            return
        self._event(teammate, status, code, released, restarting=delay is not None)
        self._answer_stopped(teammate)
        if delay is None:
            teammate.to(S.FAILED)
            self._set_active(teammate.name, False)
            log.error("%s crashed %d times within %gs: failed", teammate.name, self.policy.intensity, self.policy.period)
            return
        teammate.to(S.EXITED)
        teammate.restart_timer = self.after(delay, lambda: self._restart(teammate))

    def _restart(self, teammate: Teammate) -> None:
        teammate.restart_timer = None
        if self.down_waiter is not None or teammate.name not in self.teammates or teammate.alive:
            return
        try:
            self._launch(teammate)
        except (AgentTeamsError, OSError) as exc:
            log.error("restart of %s failed: %s", teammate.name, exc)
            teammate.to(S.FAILED)

    def _event(
        self, teammate: Teammate, status: str, exit_code: int | None, released: list[str], *, restarting: bool, detail: str = ""
    ) -> None:
        event = TeammateTerminated(
            name=teammate.name,
            agent_id=teammate.spec.agent_id,
            timestamp=now_iso(),
            status=status,  # type: ignore[arg-type]
            detail=detail or teammate.last_exit,
            released_tasks=released,
            restarting=restarting,
        )
        if exit_code is not None:
            if exit_code < 0:
                event.signal = -exit_code
            else:
                event.exit_code = exit_code
        import msgspec

        append_line(self.paths.events, msgspec.json.encode(event))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m supervisor.daemon")
    p.add_argument("--root", required=True)
    p.add_argument("--team", required=True)
    p.add_argument("--wake", choices=("zmq", "poll"), default="zmq")
    p.add_argument("--fallback-poll", type=float, default=wake.DEFAULT_FALLBACK_POLL)
    p.add_argument("--restart", choices=("never", "on-failure"), default="on-failure")
    p.add_argument("--intensity", type=int, default=3)
    p.add_argument("--period", type=float, default=30.0)
    p.add_argument("--spawn", choices=("zygote", "exec"), default="zygote")
    p.add_argument("--plan-approval", choices=approvals.PLAN_POLICIES, default="auto")
    p.add_argument("--lead-permission-mode", default="acceptEdits")
    p.add_argument("--ready-fd", type=int, default=-1)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor %(message)s", stream=sys.stderr)
    sup = Supervisor(
        Path(args.root), args.team, wake_mode=args.wake, fallback_poll=args.fallback_poll,
        policy=RestartPolicy(mode=args.restart, intensity=args.intensity, period=args.period),
        spawn_method=args.spawn, plan_approval=args.plan_approval, lead_permission_mode=args.lead_permission_mode,
    )
    try:
        sup.start()
    except AgentTeamsError as exc:
        if args.ready_fd >= 0:
            os.write(args.ready_fd, f"error {exc.message}\n".encode())
        print(f"supervisor: {exc.message}", file=sys.stderr)
        return 1
    if args.ready_fd >= 0:
        os.write(args.ready_fd, f"ok {os.getpid()}\n".encode())
        os.close(args.ready_fd)
    sup.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
