"""Entry point of a teammate process: ``python -m agentproc`` with Claude Code's flags."""

from __future__ import annotations

import logging
import os
import signal
import sys
from types import FrameType

from agentproc.channel import Channel, PollChannel, ZmqChannel
from agentproc.context import AgentContext
from agentproc.identity import parse
from agentproc.loop import AgentLoop
from ipc.errors import AgentTeamsError
from ipc.osproc import set_parent_death_signal, set_process_name

_loop: AgentLoop | None = None


def _kill_tools(ctx: AgentContext | None) -> None:
    for group in list(ctx.tool_groups if ctx else ()):
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Parent death or a forced stop: take the tools down with us, then go at once. Every
    # state write is atomic, so exiting mid-write leaves the previous version intact.
    _kill_tools(_loop.ctx if _loop else None)
    os._exit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    global _loop
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    identity = parse(sys.argv[1:] if argv is None else argv)
    set_process_name(f"at:{identity.name}")
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the lead's terminal is the lead's
    set_parent_death_signal(signal.SIGTERM)
    if identity.supervisor_pid and os.getppid() != identity.supervisor_pid:
        return 1  # the supervisor died before we could ask to be told: nothing to serve
    channel: Channel = (
        ZmqChannel(identity.wake_endpoint, identity.fallback_poll) if identity.wake == "zmq" else PollChannel()
    )
    try:
        _loop = AgentLoop(identity, channel)
        return _loop.run()
    except AgentTeamsError as exc:
        print(f"agentproc {identity.name}: {exc.message}", file=sys.stderr)
        return 1
    finally:
        channel.close()
