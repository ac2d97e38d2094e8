"""Running a lead agent for a team (``agentteams lead``/``chat``, ``Team.lead``): its own
process, ``python -m agentproc.lead`` started from a :class:`~ipc.launch.LeadLaunch`, with
the team's supervisor up for as long as it runs.

A supervisor this started is brought down again when the lead ends; one that was already up
is left as it was. The team stays unless it was made for this run (``owns_team``): then the
lead may delete it once every task completed, and one left empty (a goal that came to
nothing) is removed here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ipc.agents import parse_json_definitions
from ipc.errors import AgentTeamsError, Conflict, InvalidInput
from ipc.launch import RESULT_DIR_PREFIX, LaunchSpec, LeadLaunch
from ipc.model_specs import check_api_key, check_effort, check_model
from ipc.options import check_permission_mode
from ipc.paths import agent_id
from ipc.replies import LeadResult
from ipc.schemas import LEAD_NAME

if TYPE_CHECKING:
    from supervisor.client.handle import TeamHandle


def check_lead(prompt: str, model: str, timeout: float | None, interactive: bool, agents: str = "") -> None:
    """InvalidInput, before anything is created or started, for a lead that cannot run."""
    check_model(model)
    parse_json_definitions(agents)
    check_api_key(model, "(set it and run the lead again)")
    if not prompt.strip() and not interactive:
        raise InvalidInput("the lead needs a goal: give --prompt TEXT (or '-' to read it from stdin)")
    if timeout is not None and not 0 < timeout < float("inf"):  # NaN too: it meant no limit
        raise InvalidInput(f"--timeout {timeout:g}: give a number of seconds above 0")


def lead_spec(
    team: TeamHandle,
    model: str,
    permission_mode: str = "",
    fork_subagents: bool = False,
    effort: str = "",
    agents: str = "",
) -> LaunchSpec:
    """The lead agent of ``team``: Claude Code's lead has no color; it works in the cwd the
    team was created with (else in ours), in ``permission_mode``, which the teammates it
    spawns inherit, its requests asking for ``effort``."""
    config = team.config()
    lead = config.member(LEAD_NAME)
    return LaunchSpec(
        agent_id=agent_id(LEAD_NAME, team.name),
        agent_name=LEAD_NAME,
        team_name=team.name,
        agent_color="",
        parent_session_id=config.lead_session_id,
        model=model,
        permission_mode=check_permission_mode(permission_mode),
        fork_subagents=fork_subagents,
        effort=check_effort(effort),
        agents=agents,
        root=str(team.root),
        cwd=lead.cwd if lead is not None and lead.cwd else os.getcwd(),
        role="lead",
    )


class LeadRun:
    """A lead agent that runs; ``wait`` gives its result."""

    def __init__(
        self,
        team: TeamHandle,
        prompt: str,
        *,
        model: str,
        timeout: float | None,
        interactive: bool,
        verbose: bool,
        owns_team: bool = False,
        keep_reason: str = "",
        permission_mode: str = "",
        fork_subagents: bool = False,
        effort: str = "",
        agents: str = "",
    ) -> None:
        check_lead(prompt, model, timeout, interactive, agents)
        check_permission_mode(permission_mode)
        check_effort(effort)
        self.team = team
        self.owns_team = owns_team
        self.started_supervisor = not team.is_up()
        if self.started_supervisor:
            # An approved plan hands a teammate the lead's mode (a planning or delegating
            # lead's: default, as Claude Code maps them).
            planning = permission_mode in ("plan", "delegate")
            handed = "default" if planning else permission_mode or "acceptEdits"
            # Down with this process, however it ends (a kill -9 runs no clean-up of ours).
            team.up(
                lead_permission_mode=handed,
                fork_subagents=fork_subagents,
                agents=agents,
                owner_pid=os.getpid(),
            )
        else:
            team.require_no_lead_agent("one lead at a time")
            if agents:  # its teammates resolve types with the running supervisor's definitions
                raise Conflict(
                    f"team {team.name!r} is up; its agent definitions are set when it starts: "
                    f"'agentteams down {team.name}', then give --agents to lead or up"
                )
        # Not in the team's runtime directory: that goes with the team, which the lead may delete.
        self.result_dir = Path(tempfile.mkdtemp(prefix=RESULT_DIR_PREFIX))
        self.result_file = self.result_dir / "result.json"
        launch = LeadLaunch(
            spec=lead_spec(team, model, permission_mode, fork_subagents, effort, agents),
            result_file=str(self.result_file),
            prompt=prompt,
            timeout=timeout,
            interactive=interactive,
            verbose=verbose,
            owns_team=owns_team,
            keep_reason=keep_reason,
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentproc.lead", *launch.to_argv()],
            env={**os.environ, **launch.to_env()},
            stdin=None if interactive else subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self) -> LeadResult:
        """Its result, once it has ended; the supervisor this started is brought down. An
        interrupt is passed on to the lead, which ends its turn and reports."""
        try:
            while True:
                try:
                    code = self.proc.wait()
                    break
                except KeyboardInterrupt:
                    self.proc.send_signal(signal.SIGINT)
        finally:
            if self.started_supervisor and self.team.is_up():
                self.team.down()
            if self.owns_team and self._empty():
                self.team.store.delete()
        try:
            result = self._result(code)
        finally:
            shutil.rmtree(self.result_dir, ignore_errors=True)
        result.kept = self.team.store.exists()
        return result

    def _empty(self) -> bool:
        """The team made for this run holds nothing: no teammate, no task."""
        try:
            return not self.team.config().teammates() and not self.team.tasks.list()
        except AgentTeamsError:
            return False  # gone already, or unreadable: not ours to judge

    def _result(self, code: int) -> LeadResult:
        try:
            data = self.result_file.read_bytes()
            return msgspec.json.decode(data, type=LeadResult)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            how = f"signal {-code}" if code < 0 else f"exit {code}"
            return LeadResult(
                team=self.team.name,
                answer="",
                stopped_by="error",
                turns=0,
                seconds=0.0,
                error=f"the lead process ended ({how}) without a result",
            )
