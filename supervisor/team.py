"""The Python API of SPEC §10: one object per team, usable from any process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ipc import control
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, NotRunning, Timeout
from ipc.launch import LeadResult, SpawnReply, StopReply, SupervisorOptions, TeammateOptions, TeamStatus
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.schemas import LEAD_NAME, Member, TeamConfig, TeammateTerminated
from ipc.storage import read_jsonl
from ipc.tasks import TaskList
from ipc.usage import Budget, TeamUsage, check_limit, read_budget, set_budget, team_usage
from ipc.wake import Waker
from supervisor import launcher
from supervisor.lead_runner import LeadProcess

if TYPE_CHECKING:
    from supervisor.ps import TeamTree

Root = str | os.PathLike[str] | None


class Team:
    def __init__(self, name: str, root: Root = None) -> None:
        self.paths = TeamPaths(root, name)
        self.name = self.paths.team
        self.root = self.paths.root
        self.store = TeamConfigStore(self.root, self.name)
        self.tasks = TaskList(self.root, self.name, on_ready=self._tasks_ready)
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: control.ControlClient | None = None
        self._waker: Waker | None = None
        self._messenger: Messenger | None = None

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, name: str, root: Root = None, description: str = "", **kwargs: Any) -> Team:
        team = cls(name, root)
        team.store.create(description, **kwargs)
        return team

    @classmethod
    def open(cls, name: str, root: Root = None) -> Team:
        team = cls(name, root)
        team.store.read()  # NotFound with a clear message
        return team

    def config(self) -> TeamConfig:
        return self.store.read()

    def up(self, wake: str = "zmq", **options: Any) -> int:
        """Start the team's supervisor (a separate process); members in the config resume.
        ``options`` are :class:`~ipc.launch.SupervisorOptions` fields."""
        self.store.read()
        checked = SupervisorOptions(wake=wake, **options).checked()  # type: ignore[arg-type]
        self._proc = launcher.start(self.paths, checked)
        return self._proc.pid

    def is_up(self) -> bool:
        return launcher.supervisor_pid(self.paths) is not None

    def supervisor_pid(self) -> int | None:
        return launcher.supervisor_pid(self.paths)

    def down(self, grace: float = 5.0, timeout: float = 30.0) -> None:
        """Stop every teammate (protocol first, then signals) and the supervisor. Members
        stay in the team: ``up`` brings them back."""
        pid = launcher.supervisor_pid(self.paths)
        if pid is None:
            self.close()
            return
        try:
            self._call(control.Down(id=control.new_id(), grace=grace), timeout=timeout)
        except AgentTeamsError:
            if pid > 0:
                os.kill(pid, signal.SIGTERM)
        self.close()
        if pid > 0 and not launcher.wait_gone(pid, timeout, self._proc):
            os.kill(pid, signal.SIGKILL)
            launcher.wait_gone(pid, 5, self._proc)
        self._proc = None

    def delete(self, force: bool = False) -> None:
        """Remove the team's state; refused while teammates remain unless ``force``. A team
        that is up is brought down first."""
        if not force:
            remaining = [m.name for m in self.store.read().teammates()] if self.store.exists() else []
            if remaining:
                self.store.delete()  # raises Conflict naming them
        self.down()
        self.store.delete(force=force)
        shutil.rmtree(self.paths.runtime_dir(), ignore_errors=True)

    def close(self) -> None:
        """Let go of sockets (wakes still in flight are delivered first)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._waker is not None:
            self._waker.close()
            self._waker = None
            self._messenger = None

    def __enter__(self) -> Team:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ control

    def _connect(self) -> control.ControlClient:
        """A client of the running supervisor; one that is still starting gets a moment."""
        deadline = time.monotonic() + 5.0
        while True:
            try:
                return control.ControlClient(self.paths.runtime_dir())
            except NotRunning:
                if launcher.supervisor_pid(self.paths) is None or time.monotonic() > deadline:
                    raise NotRunning(
                        f"team {self.name!r} is not up; start it with 'agentteams up {self.name}'"
                    ) from None
                time.sleep(0.01)

    def _call(self, request: Any, timeout: float = 30.0) -> Any:
        if self._client is None:
            self._client = self._connect()
        try:
            return self._client.call(request, timeout=timeout)
        except Timeout:
            if launcher.supervisor_pid(self.paths) is None:
                self.close()
                raise NotRunning(
                    f"team {self.name!r} is not up; start it with 'agentteams up {self.name}'"
                ) from None
            raise

    def _require_up(self) -> None:
        launcher.require_running(self.paths)

    def start_teammate(self, options: TeammateOptions, timeout: float = 30.0) -> SpawnReply:
        """Start a teammate; the reply says its name (``-2``… if the name was taken:
        ``renamed_from`` is then the name asked for), pid and color."""
        options = options.checked()
        self._require_up()
        reply: SpawnReply = self._call(control.Spawn(id=control.new_id(), options=options), timeout=timeout)
        return reply

    def spawn(
        self,
        name: str,
        prompt: str = "",
        model: str = "offline",
        agent_type: str = "general-purpose",
        plan_mode_required: bool = False,
        permission_mode: str = "",
        cwd: str | None = None,
        backend: str = "process",
        timeout: float = 30.0,
    ) -> str:
        """Start a teammate; returns its name (``-2``, ``-3``… if the name was taken)."""
        options = TeammateOptions(
            name=name,
            prompt=prompt,
            model=model,
            agent_type=agent_type,
            plan_mode_required=plan_mode_required,
            permission_mode=permission_mode,
            cwd=cwd or "",
            backend=backend,  # type: ignore[arg-type]
        )
        return self.start_teammate(options, timeout=timeout).name

    def restart(self, name: str, timeout: float = 30.0) -> SpawnReply:
        self._require_up()
        reply: SpawnReply = self._call(control.Restart(id=control.new_id(), name=name), timeout=timeout)
        return reply

    def usage(self) -> TeamUsage:
        """Tokens and cost of every model call the team's agents made, per agent and model."""
        self.store.read()  # NotFound for a team that does not exist
        return team_usage(self.paths)

    def budget(self) -> Budget:
        self.store.read()
        return read_budget(self.paths)

    def set_budget(
        self, tokens: int | None = None, usd: float | None = None, teammate: str | None = None
    ) -> None:
        """Cap the team (or one teammate) in tokens and/or dollars; agents check before each
        request, and stop taking turns at the limit."""
        limit = check_limit(tokens, usd)
        if teammate is not None:
            teammate = normalise_agent_name(teammate)
        self.store.read()
        set_budget(self.paths, teammate, limit)

    def status(self) -> TeamStatus:
        self._require_up()
        status: TeamStatus = self._call(control.Status(id=control.new_id()), timeout=10)
        return status

    def push(self, name: str, text: str) -> None:
        """An in-memory message to a running teammate: the first thing its loop takes next
        (nothing on disk; use :meth:`send` for a message that must survive a restart)."""
        self._require_up()
        self._call(control.Push(id=control.new_id(), name=name, text=text), timeout=10)

    def shutdown(self, name: str, force: bool = False, grace: float = 10.0, reason: str = "") -> StopReply:
        """Ask a teammate to shut down; with ``force``, stop it regardless after ``grace``.
        It leaves the team."""
        self._require_up()
        request = control.Shutdown(id=control.new_id(), name=name, force=force, grace=grace)
        if reason:
            request.reason = reason
        reply: StopReply = self._call(request, timeout=grace + 15)
        return reply

    # ------------------------------------------------------------ wakes

    @property
    def waker(self) -> Waker:
        if self._waker is None:
            self._waker = Waker(self.paths.runtime_dir())
        return self._waker

    @property
    def messenger(self) -> Messenger:
        if self._messenger is None:
            self._messenger = Messenger(self.root, self.name, waker=self.waker)
        return self._messenger

    def wake(self, name: str) -> None:
        """Wake a member through its doorbell (``*``: every teammate). Nothing is lost if the team is
        down: the next start reads the inbox. For new tasks, the task list wakes an idle
        teammate by itself."""
        names = [m.name for m in self.store.read().teammates()] if name == "*" else [name]
        for each in names:
            self.waker.wake(each)

    def _tasks_ready(self, ids: list[str]) -> None:
        """Tell the supervisor which tasks can be claimed now: it wakes one idle teammate
        for each. Waits for its answer, so the wake is never lost to an exiting process."""
        if not ids or launcher.supervisor_pid(self.paths) is None:
            return
        try:
            self._call(control.TasksReady(id=control.new_id(), ids=ids), timeout=5)
        except AgentTeamsError:
            pass  # the teammates' fallback poll finds the task

    # ------------------------------------------------------------ approvals

    def pending_requests(self) -> list[Any]:
        """Plan approval and permission requests waiting for the lead."""
        from supervisor import approvals

        return [body for _, body in approvals.pending(self.paths)]

    def approve(
        self,
        request_id: str,
        feedback: str = "",
        updated_input: dict[str, Any] | None = None,
        permission_mode: str = "acceptEdits",
    ) -> dict[str, Any]:
        from supervisor import approvals

        return approvals.answer(
            self.paths,
            self.messenger,
            request_id,
            approve=True,
            feedback=feedback,
            updated_input=updated_input,
            permission_mode=permission_mode,
        )

    def deny(self, request_id: str, feedback: str = "") -> dict[str, Any]:
        from supervisor import approvals

        return approvals.answer(self.paths, self.messenger, request_id, approve=False, feedback=feedback)

    # ------------------------------------------------------------ messages

    def send(self, recipient: str, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        if recipient == "*":
            return self.broadcast(text, summary, sender)
        return self.messenger.send_message(sender, recipient, text, summary, color=self._color_of(sender))

    def broadcast(self, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        return self.messenger.broadcast(sender, text, summary, color=self._color_of(sender))

    def _color_of(self, sender: str) -> str | None:
        if sender == LEAD_NAME:
            return None
        return self.store.require_member(sender).color_name or None

    def inbox(self, name: str) -> Mailbox:
        mailbox = Mailbox(self.root, self.name, name)
        if name != LEAD_NAME and not mailbox.exists():
            self.store.require_member(name)
        return mailbox

    def events(self) -> list[TeammateTerminated]:
        """Events for the lead (``teammate_terminated``), oldest first."""
        return read_jsonl(self.paths.events, TeammateTerminated)

    # ------------------------------------------------------------ observing

    def wait_until(
        self, predicate: Callable[[Team], bool], timeout: float = 60.0, interval: float = 0.05
    ) -> bool:
        """Poll ``predicate(self)`` until true; raises Timeout (a TimeoutError) after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self):
                return True
            if time.monotonic() >= deadline:
                raise Timeout(f"condition not met within {timeout:g}s")
            time.sleep(interval)

    # ------------------------------------------------------------ a lead agent

    def lead(
        self, prompt: str, *, model: str = "offline", timeout: float | None = None, verbose: bool = False
    ) -> LeadResult:
        """Hand the team a goal: a lead agent (its own process) runs until the team's work is
        done, the lead deletes the team, or ``timeout`` s (SPEC §11). A supervisor this
        starts is brought down again at the end."""
        return LeadProcess(
            self, prompt, model=model, timeout=timeout, interactive=False, verbose=verbose
        ).wait()

    def ps(self) -> TeamTree:
        from supervisor.ps import team_tree

        return team_tree(self)

    def member(self, name: str) -> Member | None:
        """The member called ``name``, or None."""
        return self.store.config_member(name)

    def __repr__(self) -> str:
        return f"Team({self.name!r}, root={str(self.root)!r})"
