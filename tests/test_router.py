"""The supervisor's router on real ZeroMQ links: a ready task that finds no teammate idle is
not lost to the race between a teammate's last look for work and its idle report, and a
flood of frames the link refuses does not hold the supervisor's loop."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from ipc import link
from supervisor.daemon.router import Router
from tests.router_helpers import Roster, frames_to, routing, said
from tests.runtime_helpers import wait_for


@pytest.fixture
def routed(tmp_path: Path) -> Iterator[tuple[Router, Roster, link.AgentLink]]:
    with routing(tmp_path, ("bee",)) as (router, roster, agents):
        yield router, roster, agents["bee"]


def idle_report(router: Router, agent: link.AgentLink) -> None:
    said(router, agent, link.State(state="idle"))


def test_a_task_ready_while_no_one_is_idle_goes_to_the_next_idle_report(
    routed: tuple[Router, Roster, link.AgentLink],
) -> None:
    router, roster, agent = routed
    assert router.route_tasks(["7"], relay=False) == []  # bee is still looking: not idle yet
    idle_report(router, agent)
    assert frames_to(agent) == [link.Wake(task="7")]
    assert not router.unrouted


def test_a_routed_task_is_not_handed_out_again(routed: tuple[Router, Roster, link.AgentLink]) -> None:
    router, roster, agent = routed
    roster.idle_names.append("bee")
    assert router.route_tasks(["3"], relay=False) == ["bee"]
    assert frames_to(agent) == [link.Wake(task="3")]
    idle_report(router, agent)
    assert agent.receive() == []


def test_a_flood_of_malformed_frames_ends_each_read_and_loses_no_good_frame(
    routed: tuple[Router, Roster, link.AgentLink],
) -> None:
    router, _roster, agent = routed
    for _ in range(link.RECEIVED_AT_ONCE + 10):
        agent.socket.send(b"\xc1 not msgpack")  # every frame refused by the strict decoder
    agent.send(link.State(state="idle"))
    wait_for(lambda: int(router.links.socket.get(zmq.EVENTS)) & zmq.POLLIN, 5)
    time.sleep(0.2)  # the rest arrive behind the first (if not, the first read proves less)
    assert router.links.receive() == []  # the call ends after its share of reads
    assert wait_for(router.links.receive, 5) == [("bee", link.State(state="idle"))]
