"""A teammate's identity: Claude Code's command-line flags plus agentteams' environment."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ipc.paths import normalise_agent_name, normalise_team_name, resolve_root
from ipc.schemas import PERMISSION_MODES
from ipc.wake import DEFAULT_FALLBACK_POLL, WakeMode


@dataclass(frozen=True)
class Identity:
    agent_id: str
    name: str
    team: str
    color: str
    parent_session_id: str
    agent_type: str
    model: str
    plan_mode_required: bool
    permission_mode: str
    # From the environment the supervisor sets:
    root: Path
    cwd: Path
    wake: WakeMode
    wake_endpoint: str
    fallback_poll: float
    incarnation_ms: int
    supervisor_pid: int


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agentproc", description="An agentteams teammate process.")
    p.add_argument("--agent-id", required=True)
    p.add_argument("--agent-name", required=True)
    p.add_argument("--team-name", required=True)
    p.add_argument("--agent-color", required=True)
    p.add_argument("--parent-session-id", required=True)
    p.add_argument("--agent-type", default="general-purpose")
    p.add_argument("--model", default="offline")
    p.add_argument("--plan-mode-required", action="store_true")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, default="")
    return p


def parse(argv: list[str], environ: dict[str, str] | None = None) -> Identity:
    env = os.environ if environ is None else environ
    args = parser().parse_args(argv)
    name = normalise_agent_name(args.agent_name)
    team = normalise_team_name(args.team_name)
    wake = env.get("AGENTTEAMS_WAKE", "zmq")
    if wake not in ("zmq", "poll"):
        raise SystemExit(f"AGENTTEAMS_WAKE={wake!r}; use zmq or poll")
    return Identity(
        agent_id=args.agent_id,
        name=name,
        team=team,
        color=args.agent_color,
        parent_session_id=args.parent_session_id,
        agent_type=args.agent_type,
        model=args.model,
        plan_mode_required=args.plan_mode_required,
        permission_mode=args.permission_mode,
        root=resolve_root(env.get("AGENTTEAMS_ROOT")),
        cwd=Path(env.get("AGENTTEAMS_CWD") or os.getcwd()),
        wake=wake,  # type: ignore[arg-type]
        wake_endpoint=env.get("AGENTTEAMS_WAKE_ENDPOINT", ""),
        fallback_poll=float(env.get("AGENTTEAMS_FALLBACK_POLL", DEFAULT_FALLBACK_POLL)),
        incarnation_ms=int(env.get("AGENTTEAMS_INCARNATION_MS", "0")),
        supervisor_pid=int(env.get("AGENTTEAMS_SUPERVISOR_PID", "0")),
    )
