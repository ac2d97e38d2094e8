"""A supervisor started for one command (``lead``, ``run``) goes down when that command
ends, however it ends: a ``kill -9`` of the command runs none of its clean-up, and the team
it started (the supervisor, the fork server, teammates, the resident door) would run on with
no one to bring it down."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from ipc.osproc import pidfd_open
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")


def watch_owner(reactor: Reactor, pid: int, down: Callable[[], None]) -> None:
    """Call ``down`` in the loop once process ``pid`` has ended (at once if it has); no
    owner (0), never."""
    if not pid:
        return
    owner = pidfd_open(pid)

    def gone() -> None:
        if owner is not None:
            reactor.remove_reader(owner)
            os.close(owner)
        log.info("the command that started this team (pid %d) has ended", pid)
        down()

    if owner is None:
        reactor.call_later(0, gone)
    else:
        reactor.add_reader(owner, gone)
