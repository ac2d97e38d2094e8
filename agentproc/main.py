"""Entry point of an agent process: ``python -m agentproc`` with Claude Code's flags (and
agentteams' environment, see :class:`ipc.launch.LaunchSpec`)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from agentproc import pane
from agentproc.channel import Channel, open_channel
from agentproc.claude_teammate import ClaudeTeammate
from agentproc.loop import AgentLoop
from agentproc.subagent import SubagentRun
from ipc import key_handover, limits, memtrace, trust
from ipc.cc_peer import ClaudePeer
from ipc.cc_registry import mode_class
from ipc.errors import AgentTeamsError
from ipc.launch import LaunchSpec
from ipc.osproc import fix_malloc_mmap_threshold, kill_session, set_parent_death_signal, set_process_name

_loop: AgentLoop | None = None
_peer: ClaudePeer | None = None


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Parent death or a forced stop: take every tool down with us (the whole session, so
    # also one started a moment ago and not yet registered), then go at once. Every state
    # write leaves a readable file (or one the next writer repairs), so exiting mid-write
    # loses nothing that was acknowledged.
    if os.getsid(0) == os.getpid():
        kill_session(os.getpid(), spare=os.getpid())
    else:  # not a session leader (started by hand): the tools we know of
        for group in list(_loop.ctx.tool_groups if _loop else ()):
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if _peer is not None:
        _peer.withdraw()  # its record and key: Claude Code would list a dead session until it sweeps
    pane.leave_if_orphaned()  # a claude teammate stopped before it ran claude
    os._exit(128 + signum)


def expose(loop: AgentLoop) -> ClaudePeer:
    """Let the sessions of a Claude Code config dir list and message this agent."""
    ctx = loop.ctx
    peer = ClaudePeer(
        ctx.paths,
        ctx.name,
        Path(ctx.spec.claude_peers).expanduser(),
        cwd=ctx.spec.cwd,
        mode=lambda: mode_class(ctx.permission_mode),
    )
    ctx.messenger.sessions = peer
    return peer


def main(argv: list[str] | None = None) -> int:
    global _loop, _peer
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    try:
        spec = LaunchSpec.from_argv(sys.argv[1:] if argv is None else argv)
    except AgentTeamsError as exc:
        print(f"agentproc: {exc.message}", file=sys.stderr)
        return 2
    set_process_name(f"at:{spec.agent_name}")
    # Its private key, read from the pipe it inherited: it signs as itself, and only as itself.
    key = key_handover.take_key()
    trust.keyring.agent_process(spec.team_paths(), spec.agent_name, key)
    limits.set_soft_nofile(spec.nofile)  # its tools get the person's limit, not the supervisor's
    fix_malloc_mmap_threshold()  # again, for a teammate started without the fork server
    memtrace.start(spec.agent_name)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the lead's terminal is the lead's
    set_parent_death_signal(signal.SIGTERM)  # in a pane: the tmux server's death
    if pane.in_pane(spec):
        if spec.supervisor_pid and not pane.watch_supervisor(spec, leave_first=not spec.runs_claude):
            pane.leave(spec)
            return 1
    elif spec.supervisor_pid and os.getppid() != spec.supervisor_pid:
        return 1  # the supervisor died before we could ask to be told: nothing to serve
    channel: Channel | None = None
    try:
        channel = open_channel(spec)
        if spec.role == "subagent":
            return SubagentRun(spec, channel).run()
        if spec.runs_claude:
            return ClaudeTeammate(spec, channel, in_pane=pane.in_pane(spec)).run()
        _loop = AgentLoop(spec, channel)
        if spec.claude_peers and spec.role == "teammate":
            _peer = expose(_loop)
        return _loop.run()
    except AgentTeamsError as exc:
        # One line, the last in the log: the supervisor hands it to whoever asked for the spawn.
        print(f"{spec.agent_name}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        if _peer is not None:
            _peer.close()
        if channel is not None:
            channel.close()
