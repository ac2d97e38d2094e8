"""The :class:`~supervisor.daemon.child.TeamPort` on the real files: what a teammate's start,
exit or stop changes in config.json, the task list, events.jsonl and subagent results."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

import msgspec

from ipc import subagents, trust, worktrees
from ipc.errors import AgentTeamsError, CorruptFile, NotFound, TransportError
from ipc.launch import LaunchSpec
from ipc.options import TeammateOptions, runs_claude_code
from ipc.schemas import LEAD_NAME, Member, TeammateTerminated
from ipc.storage import append_line
from ipc.team_state import TeamState
from ipc.wake import socket_files
from supervisor.daemon.router import Router

log = logging.getLogger("agentteams.supervisor")

MARK_EVERY = 0.05  # s: isActive marks heard within this are written together
MARKS_PER_WINDOW = 128  # teammates per MARK_EVERY: a larger team's marks wait longer, up to
MARK_EVERY_MAX = 1.0  # this (each write rewrites every member: a thousand of them ~20 ms)


class TeamFiles:
    """A config.json that does not parse (a hand edit, another program) is logged, never
    allowed to stop a teammate from being started, reaped or stopped: the team must stay
    controllable."""

    def __init__(
        self,
        state: TeamState,
        router: Router,
        handle: Callable[[LaunchSpec, int], str],
        later: Callable[[float, Callable[[], None]], object],
    ) -> None:
        self.state = state
        self.config = state.config
        self.router = router
        self.handle = handle  # what tmuxPaneId says of a started teammate
        self.later = later  # the reactor's call_later: marks are written a moment later, together
        self.kept_worktrees: dict[str, str] = {}  # said in the teammate's terminated event
        self._marks: dict[str, dict[str, Any]] = {}  # member changes not yet written, by name
        self._keys: dict[str, bytes] = {}  # private keys of members added with their public one

    def _config(self, what: str, change: Callable[[], object]) -> None:
        try:
            change()
        except AgentTeamsError as exc:  # damaged, gone, or its engine away while we go down
            log.error("could not record that %s in config.json: %s", what, exc.message)

    def add_member(self, options: TeammateOptions, cwd: str, color: str) -> Member:
        """A new teammate's entry, its public key in it (one write, not two): the private
        half waits here for its start (:meth:`issue_key`). A ``claude`` teammate signs
        nothing of ours: no key."""
        key = None if runs_claude_code(options.backend, options.model) else trust.new_key()
        member = self.config.add_member(
            options.name,
            agent_type=options.agent_type,
            model=options.model,
            prompt=options.prompt,
            plan_mode_required=options.plan_mode_required,
            cwd=cwd,
            backend_type=options.backend,
            host=self.state.host,
            rename=options.rename,
            permission_mode=options.permission_mode,
            color=color,
            allowed_tools=options.allowed_tools,
            disallowed_tools=options.disallowed_tools,
            effort=options.effort,
            verify_key=trust.public_text(key) if key is not None else "",
        )
        if key is not None:
            self._keys[member.name] = trust.key_bytes(key)
        return member

    def started(self, spec: LaunchSpec, pid: int) -> None:
        """A teammate starts on its prompt: active until it goes idle and marks itself so. A
        ``claude`` teammate keeps its own ``isActive``, as Claude Code does. Written with
        the next marks (:meth:`flush` before its spawn is answered), but a pane's id at once."""
        if spec.role == "teammate":
            active = {} if spec.runs_claude else {"is_active": True}
            handle = self.handle(spec, pid)
            if handle.startswith("%"):
                self._config(
                    f"{spec.agent_name} started",
                    lambda: self.config.update_member(spec.agent_name, tmux_pane_id=handle, **active),
                )
            else:
                self._mark(spec.agent_name, {"tmux_pane_id": handle, **active})

    def issue_key(self, spec: LaunchSpec) -> bytes | None:
        """A fresh key pair for an agent of ours about to start (each incarnation its own):
        the public key goes in the config, the previous one retired; the private key is
        returned for that process alone (:mod:`ipc.trust`). A ``claude`` teammate signs
        nothing of ours: no key. A new member's is in its entry already (:meth:`add_member`)."""
        if spec.role != "teammate" or spec.runs_claude:
            return None
        prepared = self._keys.pop(spec.agent_name, None)
        if prepared is not None:
            return prepared
        key = trust.new_key()
        try:
            self.config.set_key(spec.agent_name, trust.public_text(key))
        except (CorruptFile, NotFound) as exc:
            log.error("no key for %s: %s", spec.agent_name, exc.message)
            return None
        return trust.key_bytes(key)

    def release(self, name: str, error: str = "", crash: str = "") -> list[str]:
        try:
            return self.state.tasks.release_owner(name, error=error, crash=crash)
        except TransportError as exc:  # the engine away while we go down: the lease releases them
            log.error("could not release %s's tasks: %s", name, exc.message)
            return []

    def ended(self, name: str) -> None:
        self.router.ended(name)
        if name == LEAD_NAME:  # never a child's name; its doorbell is the supervisor's own
            return
        # A process stopped by a signal leaves its socket files behind (a restart binds them
        # again): its doorbell, a claude teammate's courier, reply addresses and claude's own
        # socket. The team's runtime files, the team's to remove.
        for path in socket_files(self.state.paths.runtime_dir(), name):
            path.unlink(missing_ok=True)

    def left(self, name: str) -> None:
        self._marks.pop(name, None)
        self._keys.pop(name, None)
        self._config(f"{name} left", lambda: self.config.remove_member(name))
        self.router.drop(name)
        try:
            kept = worktrees.finish(self.state.paths, name)
        except AgentTeamsError as exc:
            log.error("%s left; its worktree stays where it is: %s", name, exc.message)
            return
        if kept is not None:
            log.info("%s left; its worktree has changes and is kept at %s", name, kept.path)
            self.kept_worktrees[name] = kept.path

    def activity(self, name: str, active: bool) -> None:
        """A teammate began a turn (True) or went idle: ``isActive``, as Claude Code keeps it.
        Written by the supervisor, which hears every state report anyway, and coalesced: a
        burst of turns across many teammates is a few config writes, none on a turn's path."""
        self._mark(name, {"is_active": active})

    def _mark(self, name: str, changes: dict[str, Any]) -> None:
        if not self._marks:
            every = MARK_EVERY * max(1.0, len(self.router.links) / MARKS_PER_WINDOW)
            self.later(min(every, MARK_EVERY_MAX), self.flush)
        self._marks.setdefault(name, {}).update(changes)

    def flush(self) -> None:
        """Write the marks waiting, in one locked write (none if nothing changes)."""
        marks, self._marks = self._marks, {}
        if not marks:
            return
        engine = self.state.engine
        if engine is not None and not engine.conn.online():
            # A write now would hold the supervisor's loop until the engine is back (minutes,
            # with `down` unanswered): the marks wait, and are tried again in a moment.
            self._marks = marks
            self.later(MARK_EVERY_MAX, self.flush)
            return
        try:
            if all(set(m) == {"is_active"} for m in marks.values()):
                self.config.set_active({name: m["is_active"] for name, m in marks.items()})
            else:
                self.config.update_members(marks)
        except AgentTeamsError as exc:  # a mark is news, not state: never worth the supervisor
            log.error("could not record who is active in config.json: %s", exc.message)

    def inactive(self, name: str) -> None:
        self._marks.pop(name, None)  # it has ended: a mark still waiting is out of date

        def change() -> None:
            if self.config.require_member(name).is_active is not False:
                self.config.update_member(name, is_active=False)

        self._config(f"{name} is inactive", change)

    def pane_closed(self, name: str) -> None:
        """A member's tmux pane is gone: never a stale pane id in the config."""

        def change() -> None:
            member = self.config.config_member(name)
            if member is not None and member.tmux_pane_id.startswith("%"):
                self.config.update_member(name, tmux_pane_id="")

        self._config(f"{name}'s pane closed", change)

    def terminated(self, event: TeammateTerminated) -> None:
        if event.name in self.kept_worktrees:
            event.worktree = self.kept_worktrees.pop(event.name)
        append_line(self.state.paths.events, msgspec.json.encode(event))
        self.router.wake(LEAD_NAME)  # a lead agent that runs hears of it as its next turn

    def request_shutdown(self, name: str, reason: str) -> str:
        response = self.state.messenger.send_shutdown_request(LEAD_NAME, name, reason)
        return str(response["request_id"])

    def tasks_ready(self, ids: list[str]) -> None:
        self.router.route_tasks(ids)

    def subagent_exited(self, spec: LaunchSpec, code: int) -> None:
        """A subagent that died without saying how it ended: its parent is told it failed."""
        how = f"signal {-code}" if code < 0 else f"exit {code}"
        killed = code < 0 or code == 128 + signal.SIGTERM  # a teammate exits 128+n on a signal
        try:
            subagents.finish(
                self.state.paths,
                spec.agent_name,
                "killed" if killed else "failed",
                error=f"its process ended ({how})",
            )
        except AgentTeamsError as exc:
            log.error("subagent %s: %s", spec.agent_name, exc.message)
        self.router.drop(spec.agent_name)
        self.router.wake(spec.parent)
