"""One team as the client side holds it: its state on disk (:class:`~ipc.team_state.TeamState`)
and, while it is up, its supervisor over the control socket. Every operation of the table
(:mod:`supervisor.client.operations`) and the ``Team`` API act through one of these.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from typing import Any

import msgspec

from ipc import agent_side, answers, control
from ipc.bell import Bell
from ipc.cc_peer import SupervisorRoute
from ipc.engine import marker
from ipc.errors import AgentTeamsError, Conflict, InvalidInput, NotRunning, Timeout
from ipc.launch import SupervisorOptions, agents_json
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.replies import TeamStatus
from ipc.schemas import LEAD_NAME, InboxMessage, Member, TeamConfig, TeammateTerminated
from ipc.team_state import TeamState
from ipc.wake import LazyWaker, on_call
from supervisor.client import launcher

Root = str | os.PathLike[str] | None
log = logging.getLogger("agentteams.client")


class TeamHandle:
    def __init__(self, name: str, root: Root = None) -> None:
        self.paths = TeamPaths(root, name)
        self.name = self.paths.team
        self.root = self.paths.root
        self._doorbell = LazyWaker(self.paths.existing_runtime_dir)
        self.state = self._new_state()
        self.store = self.state.config
        self.tasks = self.state.tasks
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: control.ControlClient | None = None
        # What wakes a wait for an inbox, by agent: a door that is a member installs the one
        # on its own doorbell; others are made on first use (see bell()).
        self.bells: dict[str, Bell] = {}
        self._own_bells: list[Bell] = []
        self._bells_lock = threading.Lock()

    def _new_state(self) -> TeamState:
        state = TeamState(self.paths, doorbell=self._doorbell, on_ready=self._tasks_ready)
        if state.engine is None:
            # A create of one claimable task rings the on-call teammate while it holds the
            # list's lock, before the file is written: the wake-up overlaps the write, and
            # the teammate's claim waits on that lock (ipc.tasks.TaskList.claim_next).
            state.tasks.ring_ahead = self._ring_on_call
            state.tasks.prime_ring = self._prime_on_call
        state.messenger.sessions = SupervisorRoute(self.paths)  # the lead's answers to Claude Code
        state.messenger.as_person = True  # what it cannot sign in a member's name is marked a person's
        return state

    @property
    def messenger(self) -> Messenger:
        return self.state.messenger

    def config(self) -> TeamConfig:
        return self.store.read()

    def member(self, name: str) -> Member | None:
        """The member called ``name``, or None."""
        return self.store.config_member(name)

    def inbox(self, name: str) -> Mailbox:
        """A member's inbox (NotFound for a name that is neither a member nor has one)."""
        mailbox = self.state.mailbox(name)
        if name != LEAD_NAME and not mailbox.exists():
            self.store.require_member(name)
        return mailbox

    def events(self) -> list[TeammateTerminated]:
        """Events for the lead (``teammate_terminated``), oldest first."""
        return self.state.events()

    # ------------------------------------------------------------ the supervisor

    def up(self, wake: str = "zmq", host_name: str = "", **options: Any) -> int:
        """Start the team's supervisor (a separate process); members in the config resume.
        ``options`` are :class:`~ipc.launch.SupervisorOptions` fields. In a team on the
        engine, this root joins it as host ``host_name`` (default: the one it remembers, else
        this machine's name) and the supervisor runs that host's teammates. ``agents``: agent
        definitions as Claude Code's ``--agents`` takes them, JSON text or its dict."""
        self.store.read()
        self.check_host_name(host_name)
        if self.state.link is not None:
            self.join(host_name)
        if "agents" in options:  # Claude Code's --agents JSON, or the dict it stands for
            options["agents"] = agents_json(options["agents"])
        checked = SupervisorOptions(wake=wake, **options).checked()  # type: ignore[arg-type]
        self._proc = launcher.start(self.paths, checked)
        return self._proc.pid

    def check_host_name(self, host_name: str) -> None:
        """A host name for ``up``: refused on a team of files (it would be ignored, as
        ``spawn --host`` refuses), and one not already usable as it is."""
        if not host_name:
            return
        if self.state.link is None:
            raise InvalidInput(
                f"team {self.name!r} is not on an engine, so it has no host name {host_name!r}; leave out --host-name"
            )
        marker.host_name(host_name)

    def join(self, host_name: str = "") -> None:
        """Remember, in this root, that the team lives on the engine, and this host's name."""
        link = self.state.link
        if link is None:
            raise InvalidInput(f"team {self.name!r} is a team of files here; it has no engine to join")
        host = marker.host_name(host_name) if host_name else link.host
        if not link.remembered or host != link.host:
            marker.remember(self.paths, link.url, host)
            self.state = self._new_state()
            self.store, self.tasks = self.state.config, self.state.tasks

    @property
    def host(self) -> str:
        """This host's name in a team on the engine ("" for a team of files)."""
        return self.state.host

    def is_up(self) -> bool:
        return launcher.supervisor_pid(self.paths) is not None

    def stopped_here(self) -> frozenset[str]:
        """Members known not to run now: while no supervisor runs here, every teammate this
        host runs (ours stop with their supervisor); none while one does."""
        if self.is_up():
            return frozenset()
        placed = (
            m for m in self.store.read().teammates() if self.state.engine is None or m.host_name == self.host
        )
        return frozenset(m.name for m in placed)

    def requests_waiting(self) -> list[tuple[InboxMessage, answers.Request]]:
        """Plan and permission requests in the lead's inbox someone waits to be answered."""
        return answers.pending(self.state.mailbox(LEAD_NAME), self.store, self.stopped_here())

    def supervisor_pid(self) -> int | None:
        return launcher.supervisor_pid(self.paths)

    def require_up(self) -> None:
        launcher.require_running(self.paths)

    def require_no_lead_agent(self, then: str) -> None:
        """Conflict while a lead agent runs: ``team-lead``'s inbox and turns are its own."""
        lead = self.status().lead_pid if self.is_up() else None
        if lead is not None:
            raise Conflict(f"team {self.name!r} already has a lead agent running (pid {lead}); {then}")

    def down(self, grace: float = 5.0, timeout: float = 30.0) -> None:
        """Stop every teammate (protocol first, then signals) and the supervisor. Members
        stay in the team: ``up`` brings them back. The lead's to do: never an agent's tool."""
        agent_side.refuse_lead("down", self.supervisor_pid())
        try:
            launcher.stop(self.paths, grace, timeout, self._proc)
        finally:
            self.close()
        self._proc = None

    def status(self) -> TeamStatus:
        """The running supervisor's view of the team."""
        self.require_up()
        status: TeamStatus = self.call(control.Status(id=control.new_id()), timeout=10)
        return status

    def _connect(self) -> control.ControlClient:
        """A client of the running supervisor; one that is still starting gets a moment."""
        deadline = time.monotonic() + 5.0
        while True:
            try:
                runtime = self.paths.existing_runtime_dir()
                if runtime is None:
                    raise NotRunning(f"team {self.name!r} is not up")
                return control.ControlClient(runtime)
            except NotRunning:
                if launcher.supervisor_pid(self.paths) is None or time.monotonic() > deadline:
                    raise NotRunning(
                        f"team {self.name!r} is not up; start it with 'agentteams up {self.name}'"
                    ) from None
                time.sleep(0.01)

    def call(self, request: Any, timeout: float = 30.0) -> Any:
        """One request to the supervisor; its reply. In a team on the engine, a request
        about a teammate on another host goes to that host's supervisor."""
        host = self._host_of(request)
        if host and self.state.engine is not None and host != self.state.host:
            from ipc.engine import remote

            return remote.call(self.state.engine, host, request, timeout)
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

    def _host_of(self, request: Any) -> str:
        if self.state.engine is None:
            return ""
        if isinstance(request, control.Spawn):
            return request.options.host and marker.host_name(request.options.host)
        if isinstance(request, (control.Shutdown, control.Restart, control.Push)):
            return self.member_host(request.name)
        return ""

    def member_host(self, name: str) -> str:
        """The host a member runs on ("" for a team of files, or not known)."""
        member = self.store.config_member(name) if self.state.engine is not None else None
        return member.host_name if member is not None else ""

    def require_up_for(self, host: str) -> None:
        """Up here, or (another host of an engine team) up there: its supervisor answers."""
        if host and self.state.engine is None:  # it would be ignored: said instead
            raise InvalidInput(
                f"team {self.name!r} is not on an engine, so it has no host {host!r}; leave out the host"
            )
        if not host or self.state.engine is None or host == self.state.host:
            self.require_up()

    # ------------------------------------------------------------ wakes

    def wake(self, name: str) -> None:
        """Wake a member through its doorbell (``*``: every teammate). Nothing is lost if the
        team is down: the next start reads the inbox. Messages, assignments and new tasks
        wake whom they are for by themselves."""
        names = [m.name for m in self.store.read().teammates()] if name == "*" else [name]
        for each in names:
            self._doorbell.wake(each)

    def bell(self, name: str) -> Bell:
        """What wakes a wait for ``name``'s inbox: the bell a door installed in
        :attr:`bells` (on the member's own doorbell), else a watch on the inbox file, made
        on first use (it takes no doorbell over, so it is safe for any name)."""
        key = normalise_agent_name(name)
        with self._bells_lock:
            bell = self.bells.get(key)
            if bell is None:
                bell = self.bells[key] = Bell(self.paths, key, doorbell=False)
                self._own_bells.append(bell)
            return bell

    def _prime_on_call(self) -> None:
        """Before this process's first create: its ring to the on-call teammate goes out
        under the task list's lock, and the doorbell's first socket is dear to make (see
        :meth:`LazyWaker.prime`), so it is made before the lock is taken."""
        waker = self._doorbell.waker
        if waker is not None and waker.ctx is not None:
            return  # ZeroMQ is started: a socket to a new name is cheap beside it
        try:
            name = self._on_call()
            if name:
                self._doorbell.prime(name)
        except Exception:  # only a head start: the ring itself still tries, and may say why
            log.debug("could not prepare the on-call teammate's doorbell", exc_info=True)

    def _on_call(self) -> str:
        """The on-call teammate's name, or "" (no one idle, or the team is not up)."""
        runtime = self.paths.existing_runtime_dir()
        return on_call(runtime) if runtime is not None else ""

    def _ring_on_call(self, task_id: str) -> str:
        """Ring the on-call teammate, the ring naming ``task_id`` (it tries that one before
        looking through the list); whom it rang, or "". Only a hint: it never fails what
        made the task (the supervisor, told of it, wakes someone)."""
        try:
            name = self._on_call()
            return name if name and self._doorbell.wake(name, task_id.encode()) else ""
        except Exception:  # out of files for a socket, say
            log.warning("could not ring the on-call teammate for task %s", task_id, exc_info=True)
            return ""

    def _tasks_ready(self, ids: list[str], rung: str = "") -> None:
        """Tell the supervisor which tasks can be claimed now: it wakes one idle teammate
        for each. Waits for its answer, so the wake is never lost to an exiting process.
        ``rung``: the on-call teammate the create rang already, for the first."""
        if ids and self.state.engine is not None:
            # Every host's supervisor hears of it and wakes one idle teammate of its own.
            from ipc.engine.team import EngineTeam

            engine: EngineTeam = self.state.engine
            engine.signal(engine.ready_subject, msgspec.json.encode({"host": "", "ids": ids}))
            return
        if not ids:
            return
        # The on-call teammate is rung first, straight from here (one hop), if the create did
        # not ring it already; the supervisor hears of it and wakes others for the rest.
        ahead = bool(rung)
        if not ahead:
            rung = self._ring_on_call(ids[0])
        if launcher.supervisor_pid(self.paths) is None:
            return
        try:
            self.call(control.TasksReady(id=control.new_id(), ids=ids, rung=rung, ahead=ahead), timeout=5)
        except AgentTeamsError:
            pass  # the teammates' fallback poll finds the task

    def close(self) -> None:
        """Let go of sockets (wakes still in flight are delivered first)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        self._doorbell.close()
        with self._bells_lock:
            for bell in self._own_bells:
                bell.close()
                if self.bells.get(bell.name) is bell:
                    del self.bells[bell.name]
            self._own_bells.clear()
        self.state.close()

    def __enter__(self) -> TeamHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, root={str(self.root)!r})"
