"""A turn that waits on another process tells the supervisor so (``ipc.link.Waiting``), from
the agent's own tools over the real link: a command past its first moments, a background
shell waited on, and never a command that ends at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentproc.channel import ZmqChannel
from agentproc.context import AgentContext
from agentproc.tools import bash, shells
from ipc import link
from ipc.poller import close_context, context
from tests.agent_helpers import launch_spec
from tests.runtime_helpers import wait_for


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[tuple[AgentContext, link.SupervisorLinks]]:
    spec = launch_spec(tmp_path, name="alice")
    ctx = context()
    links = link.SupervisorLinks(ctx, spec.team_paths().runtime_dir())
    links.open("alice")
    channel = ZmqChannel(spec)
    try:
        channel.hello("alice", 1)
        assert wait_for(lambda: links.receive(), 5), "connected"
        yield AgentContext(spec=spec, channel=channel), links
    finally:
        channel.close()
        links.close()
        close_context(ctx)


def heard(links: link.SupervisorLinks, count: int) -> list[link.Frame]:
    """What the agent said, once at least ``count`` frames came (or 5 s passed)."""
    frames: list[link.Frame] = []

    def enough() -> bool:
        frames.extend(frame for _, frame in links.receive())
        return len(frames) >= count

    wait_for(enough, 5)
    return frames


def test_a_command_that_runs_on_is_waited_on_off_the_turns_cpu(
    agent: tuple[AgentContext, link.SupervisorLinks],
) -> None:
    ctx, links = agent
    outcome = bash.run_command(ctx, "sleep 0.3; echo slept", 10)
    assert outcome.exit_code == 0 and outcome.output.strip() == "slept"
    assert heard(links, 2) == [link.Waiting(waiting=True), link.Waiting(waiting=False)]
    assert not ctx.waiting


def test_a_command_killed_at_its_timeout_computes_again_after(
    agent: tuple[AgentContext, link.SupervisorLinks],
) -> None:
    ctx, links = agent
    outcome = bash.run_command(ctx, "sleep 30", 0.3)
    assert outcome.timed_out
    assert heard(links, 2) == [link.Waiting(waiting=True), link.Waiting(waiting=False)]


def test_a_command_that_ends_at_once_says_nothing(
    agent: tuple[AgentContext, link.SupervisorLinks], monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, links = agent
    monkeypatch.setattr(bash, "OFF_CPU_AFTER", 5.0)  # "at once", however busy the machine
    assert bash.run_command(ctx, "echo quick", 10).output.strip() == "quick"
    ctx.channel.state("idle")  # a frame after: nothing came before it
    assert heard(links, 1) == [link.State(state="idle")]


def test_waits_within_a_wait_are_one(agent: tuple[AgentContext, link.SupervisorLinks]) -> None:
    ctx, links = agent
    with ctx.off_cpu(), ctx.off_cpu():
        assert ctx.waiting
    assert not ctx.waiting
    assert heard(links, 2) == [link.Waiting(waiting=True), link.Waiting(waiting=False)]


def test_a_background_shell_waited_on_is_waited_on_off_the_turns_cpu(
    agent: tuple[AgentContext, link.SupervisorLinks],
) -> None:
    ctx, links = agent
    started = bash.start_background(ctx, "sleep 0.3; echo done")
    state = shells.output(ctx, started["backgroundTaskId"], block=True, timeout_s=10)
    assert state["status"] == "completed" and state["output"].strip() == "done"
    assert heard(links, 2) == [link.Waiting(waiting=True), link.Waiting(waiting=False)]
