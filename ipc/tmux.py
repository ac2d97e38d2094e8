"""tmux, through its own commands: which server, the panes a team's teammates run in, and
what both sides need to agree on (the options a pane is tagged with, the session name, the
file that says which server a team uses).

A server is named as tmux names it: ``""`` is the one of ``$TMUX`` when the caller is
inside tmux, else tmux's default; a name is ``tmux -L NAME``; a path is ``tmux -S PATH``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ipc.errors import AgentTeamsError, InvalidInput

TEAM_OPTION = "@agentteams-team"  # set on every pane a supervisor made: found again after a crash
AGENT_OPTION = "@agentteams-agent"
TIMEOUT = 10.0


def team_tag(runtime: Path) -> str:
    """What a team's panes are tagged with: its runtime directory's name, the team's name and
    a digest of its root, since two roots may each hold a team of the same name on one server."""
    return runtime.name


def session_name(runtime: Path) -> str:
    """The detached session a team's panes go in when the caller is not inside tmux."""
    return f"agentteams-{team_tag(runtime)}"


def socket_file(runtime: Path) -> Path:
    """Where a supervisor writes the path of the tmux server its panes are in."""
    return runtime / "tmux-socket"


class TmuxError(AgentTeamsError):
    """A tmux command failed (its last line of stderr says why)."""


class Tmux:
    def __init__(self, server: str = "") -> None:
        self.server = server

    def argv(self, *args: str) -> list[str]:
        if not self.server:
            return ["tmux", *args]
        return ["tmux", "-S" if "/" in self.server else "-L", self.server, *args]

    def run(self, *args: str) -> str:
        """The command's standard output, stripped; TmuxError if it fails."""
        try:
            result = subprocess.run(
                self.argv(*args),
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=TIMEOUT,
            )
        except FileNotFoundError:
            raise InvalidInput("the tmux backend needs tmux, and it is not installed") from None
        except subprocess.TimeoutExpired:
            raise TmuxError(f"tmux {args[0]} did not answer within {TIMEOUT:g}s") from None
        # tmux 3.3 exits 0 when it cannot create its server's socket, saying so on stderr
        # only: a command asked to print (-P) that printed nothing failed
        if result.returncode != 0 or ("-P" in args and not result.stdout.strip()):
            last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise TmuxError(f"tmux {args[0]}: {last}")
        return result.stdout.strip()

    def query(self, target: str, fmt: str) -> str | None:
        """``display -p -t TARGET FMT``; None if the target (a pane) is gone, or the server."""
        try:
            return self.run("display-message", "-p", "-t", target, fmt)
        except TmuxError:
            return None

    def pane_exists(self, pane: str) -> bool:
        return bool(pane) and self.query(pane, "#{pane_id}") == pane

    def kill_pane(self, pane: str) -> None:
        try:
            self.run("kill-pane", "-t", pane)
        except TmuxError:
            pass  # already gone, with its window, session or server

    def panes_tagged(self, tag: str) -> list[tuple[str, str]]:
        """(pane id, agent) of every pane of the server tagged with ``tag`` (:func:`team_tag`)."""
        try:
            out = self.run("list-panes", "-a", "-F", f"#{{pane_id}} #{{{TEAM_OPTION}}} #{{{AGENT_OPTION}}}")
        except TmuxError:
            return []  # no server: no panes
        found = []
        for line in out.splitlines():
            parts = line.split(" ")
            if len(parts) == 3 and parts[1] == tag:
                found.append((parts[0], parts[2]))
        return found


def inside_tmux() -> bool:
    return bool(os.environ.get("TMUX"))
