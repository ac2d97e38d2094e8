"""The Python API: one object per team, usable from any process. Its methods are views of
the table of operations (:mod:`supervisor.client.operations`) over the team's handle, plus
the lifecycle (create, up, down, delete) and a lead agent."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from ipc import agent_side, answers, worktrees
from ipc import operations as io
from ipc.engine import hosts, marker
from ipc.errors import Conflict, Timeout
from ipc.launch import agents_json
from ipc.options import Isolation, SpawnBackend, TeammateOptions
from ipc.paths import normalise_agent_name
from ipc.replies import LeadResult, SpawnReply, StopReply, SubagentResult
from ipc.schemas import LEAD_NAME
from ipc.usage import Budget, TeamUsage, check_limit, read_budget, set_budget
from ipc.worktrees import WorktreeDiff
from supervisor.client import operations
from supervisor.client.handle import Root, TeamHandle
from supervisor.client.lead_runner import LeadRun
from supervisor.client.ps import TeamTree


class Team(TeamHandle):
    # ------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, name: str, root: Root = None, description: str = "", **kwargs: Any) -> Team:
        team = cls(name, root)
        team.store.create(description, **kwargs)
        link = team.state.link
        if link is not None:  # made in the engine: this root remembers it
            marker.remember(team.paths, link.url, link.host)
        return team

    @classmethod
    def open(cls, name: str, root: Root = None) -> Team:
        team = cls(name, root)
        team.store.read()  # NotFound with a clear message
        return team

    def delete(self, force: bool = False) -> None:
        """Remove the team's state; refused while teammates remain unless ``force``, and in a
        team on the engine while another host is up. A team that is up here is brought down
        first. The lead's to do: never an agent's tool."""
        agent_side.refuse_lead("team delete", self.supervisor_pid())
        if self.state.engine is not None:  # also with force: their members would run on, orphaned
            others = hosts.up_elsewhere(self.state.engine, self.host)
            if others:
                raise Conflict(
                    f"team {self.name!r} is still up on host{'s' * (len(others) > 1)} {', '.join(others)}; run 'agentteams down "
                    f"{self.name}' there first (its supervisor and teammates would run on without the team)"
                )
        if not force:
            remaining = [m.name for m in self.store.read().teammates()] if self.store.exists() else []
            if remaining:
                self.store.delete()  # raises Conflict naming them
        self.down()
        self.store.delete(force=force)
        for tree in worktrees.all_of(self.paths):  # members that were parked: clean ones go
            worktrees.finish(self.paths, tree.name)
        if self.state.link is not None:  # this root's copy and its memory of the team go too
            shutil.rmtree(self.paths.team_dir, ignore_errors=True)
        shutil.rmtree(self.paths.runtime_path(), ignore_errors=True)

    def __enter__(self) -> Team:
        return self

    # ------------------------------------------------------------ teammates

    def start_teammate(self, options: TeammateOptions, timeout: float = 30.0) -> SpawnReply:
        """Start a teammate; the reply says its name (with ``options.rename``, ``-2``… if the
        name was taken: ``renamed_from`` is then the name asked for), pid and color."""
        return operations.spawn_teammate(self, options)

    def spawn(
        self,
        name: str,
        prompt: str = "",
        model: str = "offline",
        agent_type: str = "general-purpose",
        plan_mode_required: bool = False,
        permission_mode: str = "",
        cwd: str | None = None,
        backend: SpawnBackend = "",
        timeout: float = 30.0,
        host: str = "",
        rename: bool = False,
        isolation: Isolation = "none",
        allowed_tools: str = "",
        disallowed_tools: str = "",
        effort: str = "",
    ) -> str:
        """Start a teammate; returns its name. A taken name is refused (Conflict), or with
        ``rename`` becomes ``-2``, ``-3``… ``host``: the host it runs on, in a team on the
        engine (default: this one). ``isolation="worktree"``: its own git worktree of the
        team's cwd as its cwd (see :meth:`diff`). ``allowed_tools`` / ``disallowed_tools``:
        Claude Code's ``--allowedTools`` / ``--disallowedTools`` (``"Bash(git:*) Edit"``).
        ``effort``: ``low`` … ``max``, the effort its model requests ask for."""
        options = TeammateOptions(
            name=name,
            prompt=prompt,
            model=model,
            agent_type=agent_type,
            plan_mode_required=plan_mode_required,
            permission_mode=permission_mode,
            cwd=cwd or "",
            backend=backend,
            host=host,
            rename=rename,
            isolation=isolation,
            allowed_tools=allowed_tools,
            disallowed_tools=disallowed_tools,
            effort=effort,
        )
        return self.start_teammate(options, timeout=timeout).name

    def diff(self, name: str) -> WorktreeDiff:
        """What a teammate spawned with ``isolation="worktree"`` changed in its worktree
        (also after it left: a worktree with changes is kept)."""
        return operations.diff(self, io.MemberRef(name=name))

    def restart(self, name: str, timeout: float = 30.0) -> SpawnReply:
        """Start a member that failed or exited again."""
        return operations.restart_teammate(self, io.MemberRef(name=name))

    def push(self, name: str, text: str) -> None:
        """An in-memory message to a running teammate: the first thing its loop takes next
        (nothing on disk; use :meth:`send` for a message that must survive a restart)."""
        operations.push(self, io.Push(name=name, text=text))

    def shutdown(self, name: str, force: bool = False, grace: float = 10.0, reason: str = "") -> StopReply:
        """Ask a teammate to shut down; with ``force``, stop it regardless after ``grace``.
        It leaves the team."""
        args = io.ShutdownTeammate(name=name, force=force, grace=grace, reason=reason)
        return operations.shutdown_teammate(self, args)

    # ------------------------------------------------------------ usage and budgets

    def usage(self) -> TeamUsage:
        """Tokens and cost of every model call the team's agents made, per agent and model."""
        return operations.usage(self, io.NoInput())

    def budget(self) -> Budget:
        self.store.read()
        return read_budget(self.paths)

    def set_budget(
        self,
        tokens: int | None = None,
        usd: float | None = None,
        teammate: str | None = None,
        *,
        spawning: bool = False,
    ) -> None:
        """Cap the team (or one teammate) in tokens and/or dollars; agents check before each
        request, and stop taking turns at the limit. A ``teammate`` must be a member (NotFound
        names the members: a misspelt name would cap no one), unless ``spawning``: the name
        a teammate is about to be started under, capped before its first request."""
        limit = check_limit(tokens, usd)
        self.store.read()
        if teammate is not None:
            teammate = normalise_agent_name(teammate)
            if not spawning:
                self.store.require_member(teammate)
        set_budget(self.paths, teammate, limit)

    # ------------------------------------------------------------ requests

    def pending_requests(self) -> list[answers.Request]:
        """Plan approval and permission requests waiting for the lead."""
        return operations.list_requests(self, io.NoInput()).requests

    def approve(
        self,
        request_id: str,
        feedback: str = "",
        updated_input: dict[str, Any] | None = None,
        permission_mode: str = "",  # a plan's: the teammate goes on in it (default acceptEdits)
        always: bool = False,
        permission_updates: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Approve a pending request; returns what was done (``request_id, agent, approved,
        type``). For a permission, ``always`` also applies the request's suggestions and
        ``permission_updates`` gives Claude Code's updates: they hold for the teammate's life."""
        args = io.AnswerRequest(
            request_id=request_id,
            approve=True,
            feedback=feedback,
            updated_input=updated_input,
            permission_mode=permission_mode,
            always=always,
            permission_updates=permission_updates,
        )
        return _plain(operations.answer_request(self, args))

    def background(self, subagent: str) -> SubagentResult:
        """Move a running synchronous subagent to the background: its parent's Agent call
        returns at once and the result reaches the parent later as a notification."""
        return operations.background_subagent(self, io.SubagentRef(subagent=subagent))

    def set_mode(self, name: str, mode: str) -> None:
        """Set a teammate's permission mode: it takes it before its next turn, and keeps it
        when started again."""
        operations.set_mode(self, io.SetMode(name=name, mode=mode))

    def update_permissions(
        self,
        name: str = "*",
        rules: list[str] | None = None,
        behavior: Literal["allow", "deny", "ask"] = "allow",
        directories: list[str] | None = None,
        updates: list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Add permission rules (``"Bash(npm test:*)"``, as ``behavior``) or directories to a
        running teammate (every one for ``*``) for the rest of its session, or send it Claude
        Code's permission ``updates`` (``{"type": "setMode", "mode": "plan", …}``); who it went to."""
        change = io.UpdatePermissions(
            name=name,
            rules=rules or [],
            behavior=behavior,
            directories=directories or [],
            updates=updates or [],
        )
        return operations.update_permissions(self, change).names

    def deny(self, request_id: str, feedback: str = "") -> dict[str, Any]:
        args = io.AnswerRequest(request_id=request_id, approve=False, feedback=feedback)
        return _plain(operations.answer_request(self, args))

    # ------------------------------------------------------------ messages

    def send(self, recipient: str, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        """A message into ``recipient``'s inbox (``*``: everyone but the sender), which wakes
        it; returns Claude Code's SendMessage response."""
        args = io.SendMessage(to=recipient, text=text, summary=summary)
        return _plain(operations.send_message(self, args, sender))

    def broadcast(self, text: str, summary: str, sender: str = LEAD_NAME) -> dict[str, Any]:
        return self.send("*", text, summary, sender)

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

    def ps(self) -> TeamTree:
        return operations.ps(self, io.NoInput())

    def summary(self) -> io.TeamSummary:
        """The team at a glance: members, task counts, waiting requests, whether it is up
        (:meth:`status` asks the running supervisor)."""
        return operations.team_status(self, io.NoInput())

    def members(self) -> list[io.MemberInfo]:
        """The members (the lead first), with what the running supervisor knows of each."""
        return operations.list_members(self, io.NoInput()).members

    def messages(self, limit: int = 200) -> list[io.TeamMessage]:
        """The latest ``limit`` messages of every inbox (0: all), oldest first, read flags untouched."""
        return operations.team_messages(self, io.MessageQuery(limit=limit)).messages

    def wait_for_messages(self, timeout: float = 30.0) -> list[io.Event]:
        """The lead's new messages, the moment one lands (marked read), as readable events;
        none after ``timeout`` s. What a running supervisor acts on stays its own."""
        return operations.wait_for_messages(self, io.WaitForMessages(timeout_s=timeout)).events

    def log(self, name: str = "", lines: int = 200) -> io.Log:
        """The last ``lines`` of the supervisor's log (0: all), or of agent ``name``'s."""
        return operations.read_log(self, io.ReadLog(name=name, lines=lines))

    def transcript(self, name: str, limit: int = 200) -> io.Transcript:
        """An agent's last ``limit`` transcript entries: turns, tool calls and results."""
        return operations.read_transcript(self, io.ReadTranscript(name=name, limit=limit))

    # ------------------------------------------------------------ a lead agent

    def lead(
        self,
        prompt: str,
        *,
        model: str = "offline",
        timeout: float | None = None,
        verbose: bool = False,
        keep: bool = True,
        permission_mode: str = "",
        fork_subagents: bool = False,
        effort: str = "",
        agents: str | dict[str, Any] = "",
    ) -> LeadResult:
        """Hand the team a goal: a lead agent (its own process) runs until the team's work is
        done, or ``timeout`` s of its work (from ``result.started_ns``). A supervisor this starts is brought down again at the end.
        The team stays; ``keep=False`` hands it to the lead, which may then delete it once
        every task completed (``result.kept`` says). ``permission_mode``: the lead's, which
        the teammates it spawns inherit. ``fork_subagents``: the fork gate (an Agent call
        without a type forks the caller), for the lead and, in a supervisor this starts, the team.
        ``effort``: what its requests ask for. ``agents``: agent definitions, as Claude Code's
        ``--agents`` takes them (JSON text or its dict), for a supervisor this starts."""
        run = LeadRun(
            self,
            prompt,
            model=model,
            timeout=timeout,
            interactive=False,
            verbose=verbose,
            owns_team=not keep,
            keep_reason="Team.lead was given keep=True" if keep else "",
            permission_mode=permission_mode,
            fork_subagents=fork_subagents,
            effort=effort,
            agents=agents_json(agents),
        )
        return run.wait()


def _plain(result: msgspec.Struct) -> dict[str, Any]:
    """Plain data, as this API has always returned for messages and answers."""
    plain: dict[str, Any] = msgspec.to_builtins(result)
    return plain
