"""A teammate's fallback poll leaves a task list that changed a moment ago to the
supervisor's hand-out, but not for ever: a team creating tasks without pause would otherwise
starve the tasks nobody told the supervisor of."""

from __future__ import annotations

import os
from pathlib import Path

from agentproc.channel import TASKS_SETTLE_MOST, SettleGate, ZmqChannel
from ipc.launch import LaunchSpec


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_skips_while_the_list_changes_then_looks_once_the_run_is_long_and_starts_afresh() -> None:
    clock = Clock()
    gate = SettleGate(most=10.0, clock=clock)
    assert gate.skip(changed=True)  # a run starts
    clock.now += 9.9
    assert gate.skip(changed=True)
    clock.now += 0.1
    assert not gate.skip(changed=True)  # ten seconds of skips: look anyway
    assert gate.skip(changed=True)  # and the next run is bounded again from here
    clock.now += 10.0
    assert not gate.skip(changed=True)


def test_a_settled_list_is_looked_at_and_ends_the_run() -> None:
    clock = Clock()
    gate = SettleGate(most=10.0, clock=clock)
    assert gate.skip(changed=True)
    clock.now += 9.0
    assert not gate.skip(changed=False)  # settled: look, and the run is over
    clock.now += 9.0
    assert gate.skip(changed=True)  # a new run, not the old one's 18 s
    clock.now += 9.0
    assert gate.skip(changed=True)


def test_a_teammates_poll_of_a_list_changed_at_every_poll_looks_after_the_bound(root: Path) -> None:
    spec = LaunchSpec(
        agent_id="alice@t", agent_name="alice", team_name="t", agent_color="blue",
        parent_session_id="s", root=str(root), cwd=str(root), fallback_poll=0.01,
    )  # fmt: skip
    spec.team_paths().tasks_dir.mkdir(parents=True)
    spec.team_paths().runtime_dir().mkdir(parents=True, exist_ok=True)
    channel = ZmqChannel(spec)
    clock = Clock()
    channel.settle.clock = clock
    try:
        looks = []
        most = int(TASKS_SETTLE_MOST)
        for _ in range(2 * most + 2):  # a poll each second, a task written before each
            os.utime(spec.team_paths().tasks_dir)  # a creator just wrote
            looks.append(not channel.wait().queued)
            clock.now += 1.0
        # Not never: a look when a run reaches the bound, and the next run is bounded too.
        assert [i for i, looked in enumerate(looks) if looked] == [most, 2 * most + 1]
    finally:
        channel.close()
