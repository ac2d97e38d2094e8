"""What an agent's loop, model and tools share during one process lifetime."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentproc.trust_gate import Gate
from ipc.cc_peer import SupervisorRoute
from ipc.cc_registry import mode_class
from ipc.control import ControlClient
from ipc.launch import LaunchSpec
from ipc.permission_rules import Rule, RuleSet
from ipc.team_state import TeamState

if TYPE_CHECKING:
    from agentproc.channel import Channel
    from agentproc.checkins import CheckIn
    from agentproc.tool_sessions import ToolSessions
    from agentproc.transcript import Transcript


@dataclass
class AgentContext:
    spec: LaunchSpec
    channel: Channel
    # Set by tools during a turn; read by the loop when it goes idle.
    last_dm: tuple[str, str] | None = None  # (peer, summary) of the last DM to a peer
    completed: tuple[str, str] | None = None  # (task id, status) of a task finished this turn
    exit_requested: bool = False
    # Set from another thread (an in-process teammate's host): the exit code to stop with.
    # Its turn ends at the next tool call (agentproc.tools.base.ToolBox), its loop at once.
    halt: int = 0
    current_task: str = ""
    tool_groups: set[int] = field(default_factory=set)  # process groups of running tools
    # An in-process teammate's: the sessions its tools run in (set by its host).
    tool_sessions: ToolSessions | None = None
    # Permission state: the mode can change when a plan is approved.
    permission_mode: str = "acceptEdits"
    plan_mode: bool = False
    rules: RuleSet = field(default_factory=RuleSet)  # settings files', then the session's
    scopes: tuple[Rule, ...] = ()  # the agent definition's Tool(specifier) entries
    directories: list[Path] = field(default_factory=list)  # working directories beside cwd
    hooks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # event -> matcher groups
    tool_use_id: str = ""  # the call a tool is running for (the Agent tool records it)
    tool_uses: int = 0  # tool calls run, this process
    shells: dict[str, Any] = field(default_factory=dict)  # background Bash (tools.bash.Shell) by id
    frames: deque[Any] = field(default_factory=deque)  # link frames that arrived mid-turn
    transcript: Transcript | None = None
    background: set[str] = field(default_factory=set)  # background subagents not yet reported
    subagents_settled: set[str] = field(default_factory=set)  # ids never to look at again
    show: Callable[[str, str], None] | None = None  # (text, mark): a line for a person (a tmux pane)
    bubbled: set[str] = field(default_factory=set)  # its subagents' requests put to its model
    tool_named: Callable[[str], Any] | None = None  # its own tool of a name (agentproc.tools.Tool), or None
    model_spec: str = ""  # the model it runs (what a fork of it runs)
    # (system prompt, tool definitions) its model's requests begin with now: what a fork is sent
    request_base: Callable[[], tuple[str, list[dict[str, Any]]]] | None = None
    # Its model's answer at a check-in on a synchronous subagent (True: to the background);
    # None: no check-ins (off, or a model that cannot be asked). See agentproc.checkins.
    check_in: Callable[[CheckIn], bool] | None = None
    check_in_every: float = 0.0  # seconds between check-ins

    def __post_init__(self) -> None:
        self.root = Path(self.spec.root)
        self.cwd = Path(self.spec.cwd)
        self.paths = self.spec.team_paths()
        self.team = self.paths.team
        self.state = TeamState(self.paths, doorbell=self.channel.waker(), on_ready=self.channel.tasks_ready)
        self.messenger = self.state.messenger
        self.mailbox = self.state.mailbox(self.spec.agent_name)
        self.tasks = self.state.tasks
        self._control: ControlClient | None = None
        self.waiting = False  # its turn waits on another process now (see off_cpu)
        self.team_deleted = False  # the lead deleted its team: nothing left to lead
        self.team_ours = False  # the lead may delete its team: it was made for this run
        self.keep_reason = ""  # why it may not, when whoever started the lead said
        self.gate = Gate(
            self.paths, self.name, self.mailbox, self.messenger
        )  # every entry taken is verified before it is acted on
        # What this agent attests to a Claude Code teammate, and how the lead answers a
        # Claude Code session (a teammate exposed to them answers from its own process).
        self.messenger.attest = lambda: mode_class(self.permission_mode)
        if self.spec.role == "lead":
            self.messenger.sessions = SupervisorRoute(self.paths, client=self.control)

    @property
    def name(self) -> str:
        return self.spec.agent_name

    @property
    def in_plan_mode(self) -> bool:
        """Read-only until a plan is approved: plan mode required or entered, or the
        permission mode ``plan`` (set at spawn or by ``agentteams mode``)."""
        return self.plan_mode or self.permission_mode == "plan"

    @property
    def color(self) -> str:
        return self.spec.agent_color

    @property
    def pane_id(self) -> str:
        return f"process:{os.getpid()}"

    def control(self) -> ControlClient:
        """A client of the team's supervisor (for spawning, stopping, telling it of tasks)."""
        if self._control is None:
            self._control = ControlClient(self.paths.runtime_dir())
        return self._control

    @contextmanager
    def off_cpu(self) -> Iterator[None]:
        """While the turn waits on another process (a command, a subagent, an answer): the
        supervisor caps the turns that compute at once, and may start another meanwhile."""
        if self.waiting:
            yield  # within a wait already
            return
        try:
            self.waiting = True
            self.channel.waiting(True)
            yield
        finally:
            self.waiting = False
            self.channel.waiting(False)

    def close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None

    def resolve(self, path: str) -> Path:
        """A tool path: absolute as given, relative to the agent's cwd otherwise."""
        p = Path(path).expanduser()
        return (p if p.is_absolute() else self.cwd / p).resolve()
