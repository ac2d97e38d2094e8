"""The Python API of SPEC §10: one object per team, usable from any process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from ipc import control, messaging
from ipc.config import TeamConfigStore
from ipc.errors import NotRunning, SupervisorError
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME, Member, TeamConfig, TeammateTerminated
from ipc.storage import read_jsonl
from ipc.tasks import TaskList
from supervisor import launcher

Root = str | os.PathLike[str] | None


class Team:
    def __init__(self, name: str, root: Root = None) -> None:
        self.paths = TeamPaths(root, name)
        self.name = self.paths.team
        self.root = self.paths.root
        self.store = TeamConfigStore(self.root, self.name)
        self.tasks = TaskList(self.root, self.name)
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: control.ControlClient | None = None

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
        """Start the team's supervisor (a separate process); members in the config resume."""
        self.store.read()
        self._proc = launcher.start(self.paths, wake=wake, **options)
        return self._proc.pid

    def is_up(self) -> bool:
        return launcher.supervisor_pid(self.paths) is not None

    def supervisor_pid(self) -> int | None:
        return launcher.supervisor_pid(self.paths)

    def down(self, grace: float = 5.0, timeout: float = 30.0) -> None:
        """Stop every teammate (protocol first, then signals) and the supervisor."""
        pid = launcher.supervisor_pid(self.paths)
        if pid is None:
            self._close_client()
            return
        try:
            self._call(control.Down(id=self._id(), grace=grace), timeout=timeout)
        except SupervisorError:
            if pid > 0:
                os.kill(pid, signal.SIGTERM)
        self._close_client()
        if pid > 0 and not launcher.wait_gone(pid, timeout, self._proc):
            os.kill(pid, signal.SIGKILL)
            launcher.wait_gone(pid, 5, self._proc)
        self._proc = None

    def delete(self, force: bool = False) -> None:
        """Remove the team's state; refused while teammates remain unless ``force``."""
        if force:
            self.down()
            for member in self.store.read().teammates():
                self.store.remove_member(member.name)
        self.store.delete()
        if not self.is_up():  # the sockets, pid file and log of a deleted team go too
            shutil.rmtree(self.paths.runtime_dir(), ignore_errors=True)

    # ------------------------------------------------------------ control

    def _id(self) -> str:
        return f"{os.getpid()}-{time.monotonic_ns()}"

    def _call(self, request: control.Request, timeout: float = 30.0) -> Any:
        if self._client is None:
            self._client = control.ControlClient(self.paths.runtime_dir())
        try:
            return self._client.call(request, timeout=timeout)
        except SupervisorError:
            if launcher.supervisor_pid(self.paths) is None:
                self._close_client()
                raise NotRunning(f"team {self.name!r} is not up; start it with 'agentteams up {self.name}'") from None
            raise

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def spawn(
        self,
        name: str,
        prompt: str = "",
        model: str = "offline",
        agent_type: str = "general-purpose",
        plan_mode_required: bool = False,
        permission_mode: str = "",
        cwd: str | None = None,
        timeout: float = 30.0,
    ) -> str:
        """Start a teammate; returns its name (``-2``, ``-3``… if the name was taken)."""
        launcher.require_running(self.paths)
        result = self._call(
            control.Spawn(
                id=self._id(), name=name, prompt=prompt, model=model, agent_type=agent_type,
                plan_mode_required=plan_mode_required, permission_mode=permission_mode, cwd=cwd or "",
            ),
            timeout=timeout,
        )
        return str(result["name"])

    def restart(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        result: dict[str, Any] = self._call(control.Restart(id=self._id(), name=name), timeout=timeout)
        return result

    def status(self) -> dict[str, Any]:
        launcher.require_running(self.paths)
        result: dict[str, Any] = self._call(control.Status(id=self._id()), timeout=10)
        return result

    def wake(self, name: str) -> None:
        """Ring a member's doorbell, without waiting for an answer. Nothing is lost if the team
        is down or the ring is dropped: the fallback poll or the next start-up reads the inbox.
        It is on the hot path of every send, so it neither probes the pid lock nor blocks."""
        if self._client is None:
            try:
                self._client = control.ControlClient(self.paths.runtime_dir())
            except NotRunning:
                return
        self._client.notify(control.WakeAgent(id=self._id(), name=name))

    def shutdown(self, name: str, force: bool = False, grace: float = 10.0, reason: str = "") -> dict[str, Any]:
        """Ask a teammate to shut down; with ``force``, stop it regardless after ``grace``."""
        launcher.require_running(self.paths)
        request = control.Shutdown(id=self._id(), name=name, force=force, grace=grace)
        if reason:
            request.reason = reason
        result: dict[str, Any] = self._call(request, timeout=grace + 15)
        return result

    # ------------------------------------------------------------ approvals

    def pending_requests(self) -> list[Any]:
        """Plan approval and permission requests waiting for the lead."""
        from supervisor import approvals

        return [body for _, body in approvals.pending(self.paths)]

    def approve(self, request_id: str, feedback: str = "", updated_input: dict[str, Any] | None = None,
                permission_mode: str = "acceptEdits") -> dict[str, Any]:
        from supervisor import approvals

        result = approvals.answer(self.paths, request_id, approve=True, feedback=feedback,
                                  updated_input=updated_input, permission_mode=permission_mode)
        self.wake(result["agent"])
        return result

    def deny(self, request_id: str, feedback: str = "") -> dict[str, Any]:
        from supervisor import approvals

        result = approvals.answer(self.paths, request_id, approve=False, feedback=feedback)
        self.wake(result["agent"])
        return result

    # ------------------------------------------------------------ messages

    def send(self, recipient: str, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        if recipient == "*":
            return self.broadcast(text, summary, sender)
        color = self._color_of(sender)
        response = messaging.send_message(self.root, self.name, sender, recipient, text, summary, color=color)
        self.wake(response["routing"]["target"][1:])
        return response

    def broadcast(self, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        response = messaging.broadcast(self.root, self.name, sender, text, summary, color=self._color_of(sender))
        self.wake("*")
        if sender != LEAD_NAME:
            self.wake(LEAD_NAME)
        return response

    def _color_of(self, sender: str) -> str | None:
        if sender == LEAD_NAME:
            return None
        color = self.store.require_member(sender).color
        return color if isinstance(color, str) else None

    def inbox(self, name: str) -> Mailbox:
        mailbox = Mailbox(self.root, self.name, name)
        if name != LEAD_NAME and not mailbox.exists():
            self.store.require_member(name)
        return mailbox

    def events(self) -> list[TeammateTerminated]:
        """Events for the lead (``teammate_terminated``), oldest first."""
        return read_jsonl(self.paths.events, TeammateTerminated)

    # ------------------------------------------------------------ observing

    def wait_until(self, predicate: Callable[[Team], bool], timeout: float = 60.0, interval: float = 0.05) -> bool:
        """Poll ``predicate(self)`` until true; raises TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self):
                return True
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout:g}s")
            time.sleep(interval)

    def ps(self) -> dict[str, Any]:
        from supervisor.ps import team_tree

        return team_tree(self)

    def member(self, name: str) -> Member | None:
        """The member called ``name``, or None."""
        return self.store.config_member(name)

    def __repr__(self) -> str:
        return f"Team({self.name!r}, root={str(self.root)!r})"

