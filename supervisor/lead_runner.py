"""Running a lead agent for a team (``agentteams lead``/``chat``, ``Team.lead``): its own
process, ``python -m agentproc.lead``, with the team's supervisor up for as long as it runs.

A supervisor this started is brought down again when the lead ends (the team's files stay,
unless the lead deleted the team); one that was already up is left as it was.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ipc.errors import Conflict, InvalidInput
from ipc.launch import LeadResult, check_model
from supervisor.specs import check_api_key

if TYPE_CHECKING:
    from supervisor.team import Team


def check_lead(prompt: str, model: str, timeout: float | None, interactive: bool) -> None:
    """InvalidInput, before anything is created or started, for a lead that cannot run."""
    check_model(model)
    check_api_key(model, "(set it and run the lead again)")
    if not prompt.strip() and not interactive:
        raise InvalidInput("the lead needs a goal: give --prompt TEXT (or '-' to read it from stdin)")
    if timeout is not None and timeout <= 0:
        raise InvalidInput(f"--timeout {timeout:g}: give a number of seconds above 0")


class LeadProcess:
    """A lead agent that runs; ``wait`` gives its result."""

    def __init__(
        self, team: Team, prompt: str, *, model: str, timeout: float | None, interactive: bool, verbose: bool
    ) -> None:
        check_lead(prompt, model, timeout, interactive)
        self.team = team
        self.started_supervisor = not team.is_up()
        if self.started_supervisor:
            team.up()
        else:
            lead = team.status().lead_pid
            if lead is not None:
                raise Conflict(f"team {team.name!r} already has a lead agent running (pid {lead})")
        runtime = team.paths.runtime_dir()
        self.result_file = runtime / f"lead-result-{os.getpid()}.json"
        self.result_file.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "agentproc.lead", "--root", str(team.root), "--team", team.name]
        argv += ["--model", model, "--prompt", prompt, "--result-file", str(self.result_file)]
        if timeout is not None:
            argv += ["--timeout", str(timeout)]
        argv += ["--interactive"] if interactive else []
        argv += ["--verbose"] if verbose else []
        self.proc = subprocess.Popen(argv, stdin=None if interactive else subprocess.DEVNULL)

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
        return self._result(code)

    def _result(self, code: int) -> LeadResult:
        try:
            data = Path(self.result_file).read_bytes()
            self.result_file.unlink(missing_ok=True)
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
