"""The supervisor's children: each teammate's state machine, the restart policy, the
shutdown escalation, and nothing else. As supervisord keeps process state in one module and
every syscall behind one seam, this module touches no process and no file itself: it starts,
signals and reaps through a :class:`ProcessSeam`, tells the team what happened through a
:class:`TeamPort`, and keeps time through a :class:`~supervisor.reactor.Scheduler`. Unit
tests drive it with fakes of all three, so every fault path runs in microseconds. (Long on
purpose: the transitions read best in one place; the seams are in :mod:`.child`.)
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable

import msgspec

from ipc.clock import now_iso, now_ms
from ipc.errors import AgentTeamsError, Conflict, LockTimeout, NotFound
from ipc.launch import EXIT_GAVE_UP, LaunchSpec
from ipc.replies import StopReply, TeammateStatus
from ipc.schemas import TeammateTerminated
from supervisor.daemon.child import Child, Done, IdleTeammates, ProcessSeam, TeamPort
from supervisor.daemon.policy import RestartPolicy
from supervisor.daemon.reactor import Scheduler
from supervisor.daemon.states import TeammateState

log = logging.getLogger("agentteams.supervisor")
S = TeammateState
READY_TIMEOUT = 30.0
RETRY_AFTER = 0.5
STAYS = "it stays a member, failed: restart it once that is mended, or shut it down"


class Children:
    def __init__(
        self,
        seam: ProcessSeam,
        port: TeamPort,
        clock: Scheduler,
        policy: RestartPolicy | None = None,
        *,
        wait_for_hello: bool = True,
    ) -> None:
        self.seam = seam
        self.port = port
        self.clock = clock
        self.policy = policy or RestartPolicy()
        self.wait_for_hello = wait_for_hello  # False in poll mode: no link to say hello on
        self.by_name: dict[str, Child] = {}
        self.by_pid: dict[int, Child] = {}
        self._idle = IdleTeammates()
        self.stopping_all = False
        self._all_stopped: Callable[[], None] | None = None
        self._down_grace = 0.0

    # ------------------------------------------------------------ queries

    def get(self, name: str) -> Child:
        child = self.by_name.get(name)
        if child is None:
            known = ", ".join(n for n, c in self.by_name.items() if c.spec.role == "teammate") or "none"
            raise NotFound(f"{name!r} is not a teammate of this team; teammates: {known}")
        return child

    def statuses(self) -> list[TeammateStatus]:
        return [c.status() for c in self.by_name.values()]

    def idle(self) -> list[Child]:
        return self._idle.ordered()

    def is_idle(self, name: str) -> bool:
        return name in self._idle

    def _remove(self, child: Child) -> None:
        self.by_name.pop(child.name, None)
        self._idle.forget(child.name)

    # ------------------------------------------------------------ starting

    def add(self, spec: LaunchSpec, on_ready: Done | None = None) -> Child:
        """Start a new child; ``on_ready`` is called once it is ready (or failed to start)."""
        if self.stopping_all:
            raise Conflict("the team is shutting down; no new teammates")
        child = Child(spec=spec, on_change=self._idle.on_change)
        self.by_name[spec.agent_name] = child
        self._launch(child, on_ready)
        return child

    def _launch(self, child: Child, on_ready: Done | None = None) -> None:
        child.spec = msgspec.structs.replace(child.spec, incarnation_ms=now_ms())
        try:
            pid = self.seam.start(child.spec)
        except AgentTeamsError as exc:
            child.to(S.FAILED)
            child.last_exit = f"could not start: {exc.message}"
            if on_ready is not None:  # what is left, and how to go on
                on_ready(None, f"{child.name} could not start: {exc.message} ({STAYS})")
            return
        child.pid = pid
        child.to(S.STARTING)
        self.by_pid[pid] = child
        log.info("started %s pid %d", child.name, pid)
        self.port.started(child.spec, pid)
        if on_ready is None:
            return
        if not self.wait_for_hello:
            on_ready(child.reply(), "")
            return
        child.ready_waiters.append(on_ready)
        self.clock.call_later(READY_TIMEOUT, lambda: self._ready_timeout(child, on_ready))

    def _ready_timeout(self, child: Child, waiter: Done) -> None:
        if waiter in child.ready_waiters:
            child.ready_waiters.remove(waiter)
            waiter(None, f"{child.name} did not become ready within {READY_TIMEOUT:g}s")

    def restart(self, name: str, on_ready: Done) -> None:
        """Start an exited or failed child again, on request."""
        child = self.get(name)
        if child.alive:
            raise Conflict(
                f"{child.name} is {child.state}; only an exited or failed teammate can be restarted"
            )
        if child.restart_timer is not None:
            child.restart_timer.cancel()
            child.restart_timer = None
        child.restarts.clear()
        self._launch(child, on_ready)

    # ------------------------------------------------------------ what the child says

    def on_hello(self, name: str) -> None:
        child = self.by_name.get(name)
        if child is None:
            return
        if child.state == S.STARTING:
            child.to(S.RUNNING)
        waiters, child.ready_waiters = child.ready_waiters, []
        for waiter in waiters:
            waiter(child.reply(), "")

    def on_state(self, name: str, state: str, task: str = "") -> None:
        child = self.by_name.get(name)
        if child is None or child.state not in (S.STARTING, S.RUNNING, S.IDLE):
            return
        child.to(S.RUNNING if state == "running" else S.IDLE)
        child.task = task if state == "running" else ""
        if not child.spec.runs_claude:  # Claude Code marks its own
            self.port.activity(name, state == "running")
        if self.stopping_all and state == "running" and self._stops_by_signal(child):
            self.force_stop(child, self._down_grace)  # it took work instead of the request

    def on_idle_notification(self, name: str) -> None:
        """In poll mode there is no link to report states: the notification is the news."""
        child = self.by_name.get(name)
        if child is not None and child.state in (S.STARTING, S.RUNNING):
            child.to(S.IDLE)
            child.task = ""
            if not child.spec.runs_claude:
                self.port.activity(name, False)

    # ------------------------------------------------------------ stopping

    def request_stop(self, name: str, *, reason: str, grace: float, force: bool, done: Done) -> None:
        """The shutdown protocol: ask; on approval the child exits and ``done`` gets a
        StopReply. Without an answer within ``grace``: with ``force`` it is stopped by
        signal, else ``done`` gets an error. A rejection is an error too."""
        child = self.get(name)
        if not child.alive:
            self._forget(child, status="completed", detail="stopped while not running")
            done(StopReply(name=child.name, stopped=True), "")
            return
        child.stop_waiters.append(done)
        try:
            child.shutdown_request_id = self.port.request_shutdown(child.name, reason)
        except LockTimeout:
            if not force:
                child.stop_waiters.remove(done)
                raise
            log.warning(
                "%s: could not deliver a shutdown request (lock held); stopping it by signal", child.name
            )
            self.force_stop(child, grace)
            return
        pid = child.pid

        def on_grace() -> None:
            if child.pid != pid or done not in child.stop_waiters:
                return
            if force:
                self.force_stop(child, grace)
            else:
                child.stop_waiters.remove(done)
                done(None, f"{child.name} did not answer the shutdown request within {grace:g}s; use --force")

        self.clock.call_later(grace, on_grace)

    def on_shutdown_approved(self, name: str, request_id: str) -> None:
        child = self.by_name.get(name)
        if child is None or not child.alive or child.state == S.STOPPING:
            return
        if request_id == child.shutdown_request_id:  # a stale request never stops a new incarnation
            child.to(S.STOPPING)
            # It exits by itself; one that hangs is stopped by signal. Claude Code takes its time.
            self._stop_later(child, 20.0 if child.spec.runs_claude else 3.0)

    def on_shutdown_rejected(self, name: str, request_id: str, reason: str) -> None:
        child = self.by_name.get(name)
        if child is None or request_id != child.shutdown_request_id:
            return
        child.shutdown_request_id = ""
        waiters, child.stop_waiters = child.stop_waiters, []
        for waiter in waiters:
            waiter(None, f"{child.name} rejected the shutdown: {reason}")

    def force_stop(self, child: Child, grace: float) -> None:
        """SIGTERM now; SIGKILL (the whole session) if it is still there after ``grace``."""
        if child.pid is None:
            return
        if child.state != S.STOPPING:
            child.to(S.STOPPING)
        self.seam.signal(child.pid, signal.SIGTERM)
        self._kill_later(child, grace)

    def _stop_later(self, child: Child, delay: float) -> None:
        pid = child.pid

        def stop() -> None:
            if child.pid == pid and pid is not None:
                log.warning(
                    "%s did not exit within %.1fs of approving its shutdown; stopping it", child.name, delay
                )
                self.force_stop(child, 5.0)

        self.clock.call_later(delay, stop)

    def _kill_later(self, child: Child, delay: float) -> None:
        pid = child.pid

        def kill() -> None:
            if child.pid == pid and pid is not None:  # not reaped yet: the pid is still its
                log.warning("%s did not exit within %.1fs; SIGKILL", child.name, delay)
                self.seam.kill_tree(pid)

        self.clock.call_later(delay, kill)

    def _stops_by_signal(self, child: Child) -> bool:
        """A teammate of ours in the middle of a turn cannot answer a shutdown request until
        the turn ends; SIGTERM is its clean stop (it takes its tools down and exits, and its
        task goes back to pending). Claude Code teammates always get the protocol."""
        return not child.spec.runs_claude and child.state == S.RUNNING

    def stop_all(self, grace: float, done: Callable[[], None]) -> None:
        """Stop every child; ``done`` once all are gone. An idle teammate is asked (the
        protocol), one at work is stopped by signal at once, and whoever has not gone after
        ``grace`` is stopped by signal. The team is stopped, not removed: members stay, to
        come back with ``up``."""
        self.stopping_all = True
        self._all_stopped = done
        self._down_grace = grace
        for child in list(self.by_name.values()):
            if child.restart_timer is not None:
                child.restart_timer.cancel()
            if not child.alive:
                continue
            if child.spec.role != "teammate" or self._stops_by_signal(child):
                self.force_stop(child, grace)
                continue
            try:
                child.shutdown_request_id = self.port.request_shutdown(
                    child.name, "The team is shutting down."
                )
            except AgentTeamsError:
                self.force_stop(child, grace)
                continue
            self.clock.call_later(grace, lambda c=child: self.force_stop(c, grace) if c.alive else None)  # type: ignore[misc]
        self._check_all_stopped()

    def _check_all_stopped(self) -> None:
        if self.stopping_all and not any(c.alive for c in self.by_name.values()):
            done, self._all_stopped = self._all_stopped, None
            if done is not None:
                done()

    # ------------------------------------------------------------ exits

    def on_exit(self, pid: int, status: int) -> None:
        """A child was reaped (its session already killed by the seam)."""
        child = self.by_pid.pop(pid, None)
        if child is None:
            return
        child.pid = None
        self.port.ended(child.name)  # whatever turn it was in is over
        code = os.waitstatus_to_exitcode(status)
        child.last_exit = f"signal {-code}" if code < 0 else f"exit {code}"
        # Asked to shut down and gone with 0: it approved, though the approval may be read
        # after the exit (a lead agent may take it first, or the poll comes later).
        expected = child.state == S.STOPPING or (code == 0 and bool(child.shutdown_request_id))
        # Exit 0 is not unexpected either: a subagent that finished, a teammate that approved
        # a lead's shutdown request (not the supervisor's).
        note = "" if expected or code == 0 else " unexpectedly"
        log.info("%s pid %d exited (%s)%s", child.name, pid, child.last_exit, note)
        if child.ready_waiters:
            reason = self.seam.startup_error(child.spec) or child.last_exit
            waiters, child.ready_waiters = child.ready_waiters, []
            for waiter in waiters:
                waiter(None, f"{child.name} exited during start-up: {reason}")
        for orphan in [c for c in self.by_name.values() if c.spec.parent == child.name and c.alive]:
            self.force_stop(orphan, 0.5)  # a subagent dies with its parent
        self._settle(child, code, expected)

    def _settle(self, child: Child, code: int, expected: bool) -> None:
        """Everything an exit changes; run again later if a lock held it up (every step is
        safe to repeat, the event is written last)."""
        try:
            if child.spec.role != "teammate":
                child.to(S.EXITED)
                self._remove(child)
                self.port.subagent_exited(child.spec, code)
            elif self.stopping_all:
                child.to(S.EXITED)
                self._park(child, code)
            elif expected or code == 0:
                child.to(S.EXITED)
                self._forget(child, status="completed" if code == 0 else "killed", exit_code=code)
            elif code == EXIT_GAVE_UP:
                self._give_up(child, code)
            else:
                self._on_crash(child, code)
        except LockTimeout as exc:
            log.warning("exit of %s: %s; retrying in %.1fs", child.name, exc.message, RETRY_AFTER)
            self.clock.call_later(RETRY_AFTER, lambda: self._settle(child, code, expected))
            return
        self._check_all_stopped()

    def _forget(
        self,
        child: Child,
        *,
        status: str,
        exit_code: int | None = None,
        detail: str = "",
        released: list[str] | None = None,
    ) -> None:
        """A teammate that has terminated leaves the team: tasks released, member removed,
        lead told, stop commands answered."""
        released = (released or []) + self.port.release(child.name)
        self.port.left(child.name)
        self._remove(child)
        self._event(child, status, exit_code, released, restarting=False, detail=detail)
        self._answer_stopped(child)
        if released:
            self.port.tasks_ready(released)

    def _park(self, child: Child, code: int) -> None:
        """The team is going down: the teammate stays a member, inactive, its tasks free."""
        released = self.port.release(child.name)
        self.port.inactive(child.name)
        self._remove(child)
        self._event(
            child,
            "completed" if code == 0 else "killed",
            code,
            released,
            restarting=False,
            detail="the team went down",
        )
        self._answer_stopped(child)

    def _answer_stopped(self, child: Child) -> None:
        waiters, child.stop_waiters = child.stop_waiters, []
        for waiter in waiters:
            waiter(StopReply(name=child.name, stopped=True, exit=child.last_exit), "")

    def _give_up(self, child: Child, code: int) -> None:
        released = self.port.release(child.name)
        child.to(S.FAILED)
        self.port.inactive(child.name)
        self._event(
            child,
            "failed",
            code,
            released,
            restarting=False,
            detail=self.seam.startup_error(child.spec) or "its turns kept failing; it gave up",
        )
        self._answer_stopped(child)
        if released:
            self.port.tasks_ready(released)

    def _on_crash(self, child: Child, code: int) -> None:
        how = f"signal {-code}" if code < 0 else f"exit {code}"
        released = self.port.release(child.name, crash=f"{child.name} ended with {how}")
        delay = None if self.stopping_all else self.policy.next_delay(child.restarts, self.clock.now())
        status = "killed" if code < 0 else "failed"
        if delay is None and self.policy.mode == "never":
            child.to(S.EXITED)
            self._forget(
                child, status=status, exit_code=code, detail="restart policy: never", released=released
            )
            return
        self._event(child, status, code, released, restarting=delay is not None)
        self._answer_stopped(child)
        if released:
            self.port.tasks_ready(released)
        if delay is None:
            child.to(S.FAILED)
            self.port.inactive(child.name)
            crashed = (child.name, self.policy.intensity, self.policy.period)
            log.error("%s crashed %d times within %gs: failed", *crashed)
            return
        child.to(S.EXITED)
        child.restart_timer = self.clock.call_later(delay, lambda: self._restart_after_crash(child))

    def _restart_after_crash(self, child: Child) -> None:
        child.restart_timer = None
        if self.stopping_all or self.by_name.get(child.name) is not child or child.alive:
            return
        self._launch(child)

    def _event(
        self,
        child: Child,
        status: str,
        exit_code: int | None,
        released: list[str],
        *,
        restarting: bool,
        detail: str = "",
    ) -> None:
        event = TeammateTerminated(
            name=child.name,
            agent_id=child.spec.agent_id,
            timestamp=now_iso(),
            status=status,  # type: ignore[arg-type]
            detail=detail or child.last_exit,
            released_tasks=released,
            restarting=restarting,
        )
        if exit_code is not None:
            if exit_code < 0:
                event.signal = -exit_code
            else:
                event.exit_code = exit_code
        self.port.terminated(event)
