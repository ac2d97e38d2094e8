"""The supervisor's router on real ZeroMQ links, for its tests: a roster that says who is
idle, the router with each agent's link connected both ways, what an agent is sent, and a
frame an agent says handled as the reactor would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ipc import link
from ipc.poller import close_context, context
from ipc.wake import Waker
from supervisor.daemon.child import Child
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.router import Router
from tests.runtime_helpers import wait_for


@dataclass
class Named:
    name: str


@dataclass
class Roster:
    """Who is idle, as the children's state machine says: any state but running (held too)."""

    idle_names: list[str] = field(default_factory=list)
    states: list[tuple[str, str]] = field(default_factory=list)  # every report heard

    def idle(self) -> list[Child]:
        return cast(list[Child], [Named(n) for n in self.idle_names])

    def is_idle(self, name: str) -> bool:
        return name in self.idle_names

    def on_hello(self, name: str) -> None:
        pass

    def on_state(self, name: str, state: str, task: str) -> None:
        self.states.append((name, state))
        if state != "running" and name not in self.idle_names:
            self.idle_names.append(name)
        if state == "running" and name in self.idle_names:
            self.idle_names.remove(name)


@contextlib.contextmanager
def routing(
    tmp_path: Path, names: tuple[str, ...]
) -> Iterator[tuple[Router, Roster, dict[str, link.AgentLink]]]:
    """A router under ``tmp_path`` with a roster, and a connected link for each agent named."""
    ctx = context()
    waker = Waker(tmp_path, ctx=ctx)
    reactor = Reactor()
    router = Router(reactor, ctx, tmp_path, waker)
    roster = Roster()
    router.roster = roster
    agents: dict[str, link.AgentLink] = {}
    try:
        for name in names:
            router.open(name)
            agents[name] = link.AgentLink(ctx, tmp_path, name)
            agents[name].send(link.Hello(agent=name, pid=1))  # connected both ways before the test
            wait_for(lambda: router.links.receive(), 5)
        yield router, roster, agents
    finally:
        for agent in agents.values():
            agent.close()
        router.close()
        waker.close()
        reactor.close()
        close_context(ctx)


def frames_to(agent: link.AgentLink) -> list[link.Frame]:
    return cast(list[link.Frame], wait_for(agent.receive, 5))


def said(router: Router, agent: link.AgentLink, frame: link.Frame) -> None:
    """``frame`` from ``agent``, handled by the router."""
    agent.send(frame)
    wait_for(lambda: router.links.socket.poll(0), 5)
    router._on_links()  # what the reactor calls when the links are readable
