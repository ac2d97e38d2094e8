"""How many agents this supervisor can hold, and a clear refusal past that.

Each agent costs the supervisor a ZeroMQ socket (a doorbell socket, once the supervisor
rings it) and open files (that socket's own event fd and connection, and the agent's
connection to the links socket that all agents share). The context is sized once, at start, for as many
agents as the hard open-file limit could hold; the soft limit is raised toward the hard one
as agents arrive. An agent that cannot fit is refused before anything is written, with the
limit named and what to change: never a ZeroMQ "Too many open files" mid-spawn.

What the agents run keeps the limit the person set: :attr:`Capacity.agent_nofile` is the
soft limit the supervisor was started with, and each agent puts its own back to it.
"""

from __future__ import annotations

import logging

from ipc import limits
from ipc.errors import LimitReached

log = logging.getLogger("agentteams.supervisor")

SOCKETS_PER_AGENT = 1  # a doorbell socket to ring it
FILES_PER_AGENT = 4  # its connection to the links socket, the doorbell's 2, one spare
RESERVED_SOCKETS = 16  # the links and control sockets, the lead's doorbell, the Claude Code peers'
RESERVED_FILES = 64  # logs, locks, the signal pipe, the fork server, control callers, a lead agent


class Capacity:
    def __init__(self, *, per_agent_files: int = FILES_PER_AGENT) -> None:
        self.per_agent_files = per_agent_files
        self.agent_nofile, hard = limits.nofile()
        self.max_sockets = min(
            limits.zmq_socket_limit(),
            max(limits.ZMQ_DEFAULT_SOCKETS, self._agents_in(hard) * SOCKETS_PER_AGENT + RESERVED_SOCKETS),
        )

    def _agents_in(self, files: int) -> int:
        return max(0, (files - RESERVED_FILES) // self.per_agent_files)

    def admit(self, name: str, agents: int) -> None:
        """Room for agent ``name`` beside the ``agents`` that hold sockets now, raising the
        soft open-file limit if that makes room; LimitReached otherwise."""
        sockets = (agents + 1) * SOCKETS_PER_AGENT + RESERVED_SOCKETS
        if sockets > self.max_sockets:
            raise LimitReached(
                f"cannot start {name}: this supervisor's ZeroMQ context holds {self.max_sockets:,} "
                f"sockets, room for {agents:,} agents ({SOCKETS_PER_AGENT} sockets each), and all "
                "are taken; run part of the team on another host (a team on the engine) or stop a teammate"
            )
        wanted = limits.open_files() + self.per_agent_files + RESERVED_FILES
        soft, hard = limits.nofile()
        if wanted <= soft:
            return
        raised = limits.raise_nofile(max(wanted, min(2 * soft, hard)))
        if raised >= wanted:
            log.info("open-file limit raised to %d for %d agents", raised, agents + 1)
            return
        raise LimitReached(
            f"cannot start {name}: the supervisor is at its open-file limit (RLIMIT_NOFILE, hard "
            f"limit {hard:,}) with {agents:,} agents, {self.per_agent_files} files each; raise the "
            "hard limit ('ulimit -Hn N' as root, or LimitNOFILE= for a service) before "
            "'agentteams up', then bring the team down and up again"
        )
