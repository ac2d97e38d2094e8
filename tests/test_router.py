"""The supervisor's router on real ZeroMQ links: a ready task that finds no teammate idle is
not lost to the race between a teammate's last look for work and its idle report."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

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
    idle_names: list[str] = field(default_factory=list)
    states: list[tuple[str, str]] = field(default_factory=list)

    def idle(self) -> list[Child]:
        return cast(list[Child], [Named(n) for n in self.idle_names])

    def on_hello(self, name: str) -> None:
        pass

    def on_state(self, name: str, state: str, task: str) -> None:
        self.states.append((name, state))
        if state == "idle" and name not in self.idle_names:
            self.idle_names.append(name)


@pytest.fixture
def routed(tmp_path: Path) -> Iterator[tuple[Router, Roster, Any]]:
    ctx = context()
    waker = Waker(tmp_path, ctx=ctx)
    reactor = Reactor()
    router = Router(reactor, ctx, tmp_path, waker)
    roster = Roster()
    router.roster = roster
    router.open("bee")
    agent = link.AgentLink(ctx, tmp_path, "bee")
    agent.send(link.Hello(agent="bee", pid=1))  # connected both ways before the test begins
    wait_for(lambda: router.links["bee"].receive(), 5)
    try:
        yield router, roster, agent
    finally:
        agent.close()
        router.close()
        waker.close()
        reactor.close()
        close_context(ctx)


def frames_to(agent: link.AgentLink) -> list[link.Frame]:
    return cast(list[link.Frame], wait_for(agent.receive, 5))


def idle_report(router: Router, roster: Roster, agent: link.AgentLink) -> None:
    agent.send(link.State(state="idle"))

    def handled() -> bool:
        router._on_link("bee")  # what the reactor calls when the link is readable
        return bool(roster.states)

    wait_for(handled, 5)


def test_a_task_ready_while_no_one_is_idle_goes_to_the_next_idle_report(
    routed: tuple[Router, Roster, link.AgentLink],
) -> None:
    router, roster, agent = routed
    assert router.route_tasks(["7"], relay=False) == []  # bee is still looking: not idle yet
    idle_report(router, roster, agent)
    assert frames_to(agent) == [link.Wake(task="7")]
    assert not router.unrouted


def test_a_routed_task_is_not_handed_out_again(routed: tuple[Router, Roster, link.AgentLink]) -> None:
    router, roster, agent = routed
    roster.idle_names.append("bee")
    assert router.route_tasks(["3"], relay=False) == ["bee"]
    assert frames_to(agent) == [link.Wake(task="3")]
    idle_report(router, roster, agent)
    assert agent.receive() == []
