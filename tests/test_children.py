"""The supervisor's lifecycle logic, without processes: a fake clock, a fake process seam and
a fake team port drive :mod:`supervisor.daemon.children` and :mod:`supervisor.daemon.policy` through every
fault path in microseconds."""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Callable

import msgspec
import pytest

from ipc.errors import AgentTeamsError, LockTimeout
from ipc.launch import EXIT_GAVE_UP, LaunchSpec
from ipc.replies import SpawnReply, StopReply
from ipc.schemas import TeammateTerminated
from supervisor.daemon.children import Children
from supervisor.daemon.policy import RestartPolicy
from supervisor.daemon.reactor import TimerQueue
from supervisor.daemon.states import InvalidTransition, TeammateState, check_transition

S = TeammateState
STAYS = " (it stays a member, failed: restart it once that is mended, or shut it down)"


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


class Loop(TimerQueue):
    def advance(self, seconds: float) -> None:
        assert isinstance(self.clock, FakeClock)
        end = self.clock.t + seconds
        while True:
            delay = self.next_delay()
            if delay is None or self.clock.t + delay > end:
                break
            self.clock.t += delay
            self.run_due()
        self.clock.t = end


class FakeProcesses:
    def __init__(self) -> None:
        self.next_pid = 100
        self.started: list[str] = []
        self.signals: list[tuple[int, int]] = []
        self.killed: list[int] = []
        self.fail_start = False
        self.log_line = ""

    def start(self, spec: LaunchSpec) -> int:
        if self.fail_start:
            raise AgentTeamsError("no more processes")
        self.next_pid += 1
        self.started.append(spec.agent_name)
        return self.next_pid

    def signal(self, pid: int, sig: int) -> None:
        self.signals.append((pid, sig))

    def kill_tree(self, pid: int) -> None:
        self.killed.append(pid)

    def startup_error(self, spec: LaunchSpec) -> str:
        return self.log_line


class Port:
    """A fake TeamPort: records what the lifecycle would change in the files."""

    def __init__(self) -> None:
        self.events: list[TeammateTerminated] = []
        self.gone: list[str] = []
        self.parked: list[str] = []
        self.owned: dict[str, list[str]] = {}
        self.ready: list[list[str]] = []
        self.requests = 0
        self.lock_fails = 0
        self.ended_turns: list[str] = []

    def started(self, spec: LaunchSpec, pid: int) -> None:
        pass

    def ended(self, name: str) -> None:
        self.ended_turns.append(name)

    def release(self, name: str, error: str = "", crash: str = "") -> list[str]:
        if self.lock_fails:
            self.lock_fails -= 1
            raise LockTimeout("held")
        return self.owned.pop(name, [])

    def left(self, name: str) -> None:
        self.gone.append(name)

    def inactive(self, name: str) -> None:
        self.parked.append(name)

    def activity(self, name: str, active: bool) -> None:
        pass

    def terminated(self, event: TeammateTerminated) -> None:
        self.events.append(event)

    def request_shutdown(self, name: str, reason: str) -> str:
        self.requests += 1
        return f"shutdown-{self.requests}@{name}"

    def tasks_ready(self, ids: list[str]) -> None:
        self.ready.append(ids)

    def subagent_exited(self, spec: LaunchSpec, code: int) -> None:
        self.events.append(
            TeammateTerminated(
                name=spec.agent_name,
                agent_id=spec.agent_id,
                timestamp="t",
                status="killed" if code < 0 else "completed",
            )
        )


def spec(name: str = "alice") -> LaunchSpec:
    return LaunchSpec(
        agent_id=f"{name}@t",
        agent_name=name,
        team_name="t",
        agent_color="blue",
        parent_session_id="s",
        root="/r",
        cwd="/",
    )


def exited(code: int) -> int:
    return code << 8  # a wait status


def killed_by(sig: int) -> int:
    return sig


Results = list[tuple[msgspec.Struct | None, str]]


def recorder() -> tuple[Results, Callable[[msgspec.Struct | None, str], None]]:
    results: Results = []
    return results, lambda result, error: results.append((result, error))


@pytest.fixture
def world() -> tuple[Children, FakeProcesses, Port, Loop]:
    procs, port, loop = FakeProcesses(), Port(), Loop(FakeClock())
    policy = RestartPolicy(mode="on-failure", intensity=3, period=30.0, backoff_initial=0.1, backoff_max=5.0)
    return Children(procs, port, loop, policy), procs, port, loop


# ---------------------------------------------------------------- restart policy


def test_backoff_doubles_up_to_its_maximum() -> None:
    policy = RestartPolicy(intensity=100, period=1e9, backoff_initial=0.1, backoff_max=1.0)
    history: deque[float] = deque()
    delays = [policy.next_delay(history, now=float(i)) for i in range(6)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_intensity_counts_restarts_within_the_period_only() -> None:
    policy = RestartPolicy(intensity=2, period=10.0)
    history: deque[float] = deque()
    assert policy.next_delay(history, 0.0) is not None
    assert policy.next_delay(history, 1.0) is not None
    assert policy.next_delay(history, 2.0) is None  # third within 10 s: give up
    assert policy.next_delay(history, 11.5) is not None  # the first has left the window


def test_never_means_never() -> None:
    assert RestartPolicy(mode="never").next_delay(deque(), 0.0) is None


# ---------------------------------------------------------------- transitions


def test_a_stop_is_never_undone_and_failed_is_left_only_by_a_start() -> None:
    check_transition("a", S.STARTING, S.IDLE)
    with pytest.raises(InvalidTransition):
        check_transition("a", S.STOPPING, S.RUNNING)
    with pytest.raises(InvalidTransition):
        check_transition("a", S.FAILED, S.IDLE)
    check_transition("a", S.FAILED, S.STARTING)


# ---------------------------------------------------------------- lifecycle


def test_ready_after_hello_and_a_timeout_without_one(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, _, loop = world
    ready, done = recorder()
    children.add(spec("alice"), done)
    assert children.get("alice").state == S.STARTING and ready == []
    children.on_hello("alice")
    assert isinstance(ready[0][0], SpawnReply) and children.get("alice").state == S.RUNNING
    silent, done2 = recorder()
    children.add(spec("bob"), done2)
    loop.advance(31)
    assert silent == [(None, "bob did not become ready within 30s")]


def test_a_crash_restarts_with_backoff_then_fails_past_the_intensity(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, port, loop = world
    child = children.add(spec())
    port.owned["alice"] = ["7"]
    for delay in (0.1, 0.2, 0.4):
        assert child.pid is not None
        children.on_exit(child.pid, exited(1))
        assert child.state == S.EXITED and port.events[-1].restarting
        loop.advance(delay - 0.01)
        assert child.pid is None, "restarted before its backoff"
        loop.advance(0.02)
        assert child.state == S.STARTING
    children.on_exit(child.pid or 0, exited(1))
    assert child.state == S.FAILED and not port.events[-1].restarting
    assert procs.started == ["alice"] * 4 and port.parked == ["alice"]
    assert [e.released_tasks for e in port.events] == [["7"], [], [], []] and port.ready == [["7"]]


def test_a_teammate_that_gave_up_is_failed_at_once_not_restarted(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, port, loop = world
    procs.log_line = "alice: gave up after 3 failed turns in a row: API error 401"
    child = children.add(spec())
    children.on_exit(child.pid or 0, exited(EXIT_GAVE_UP))
    loop.advance(60)
    assert child.state == S.FAILED and procs.started == ["alice"]
    assert port.events[-1].status == "failed" and "API error 401" in port.events[-1].detail


def test_start_up_errors_reach_the_caller(world: tuple[Children, FakeProcesses, Port, Loop]) -> None:
    children, procs, _, _ = world
    procs.log_line = "alice: unknown model 'x'"
    results, done = recorder()
    child = children.add(spec(), done)
    children.on_exit(child.pid or 0, exited(1))
    assert results == [(None, "alice exited during start-up: alice: unknown model 'x'")]
    procs.fail_start = True
    results2, done2 = recorder()
    children.add(spec("bob"), done2)
    assert results2 == [(None, "bob could not start: no more processes" + STAYS)]


def test_shutdown_approved_exit_removes_the_member(world: tuple[Children, FakeProcesses, Port, Loop]) -> None:
    children, _, port, _ = world
    child = children.add(spec())
    stopped, done = recorder()
    children.request_stop("alice", reason="bye", grace=10, force=False, done=done)
    children.on_shutdown_approved("alice", "shutdown-1@alice")
    assert child.state == S.STOPPING
    children.on_exit(child.pid or 0, exited(0))
    assert port.gone == ["alice"] and isinstance(stopped[0][0], StopReply)
    assert "alice" not in children.by_name


def test_a_stale_approval_never_stops_a_new_incarnation(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, _, _, _ = world
    child = children.add(spec())
    _, done = recorder()
    children.request_stop("alice", reason="bye", grace=10, force=False, done=done)
    children.on_shutdown_approved("alice", "shutdown-0@alice")  # an older request's answer
    assert child.state != S.STOPPING


def test_no_answer_is_an_error_unless_forced_then_term_and_kill_once(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, _, loop = world
    child = children.add(spec())
    pid = child.pid or 0
    results, done = recorder()
    children.request_stop("alice", reason="bye", grace=2, force=False, done=done)
    loop.advance(2.1)
    assert results == [(None, "alice did not answer the shutdown request within 2s; use --force")]
    forced, done2 = recorder()
    children.request_stop("alice", reason="bye", grace=2, force=True, done=done2)
    loop.advance(2.1)
    assert procs.signals == [(pid, signal.SIGTERM)]  # once: no second SIGTERM
    loop.advance(2.1)
    assert procs.killed == [pid]
    children.on_exit(pid, killed_by(9))
    assert isinstance(forced[0][0], StopReply)


def test_no_signal_reaches_a_pid_after_its_exit_was_handled(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, _, loop = world
    child = children.add(spec())
    pid = child.pid or 0
    children.force_stop(child, grace=1)
    children.on_exit(pid, killed_by(15))
    loop.advance(10)
    assert procs.killed == [], "the kill timer fired for a pid that may already be a stranger's"


def test_a_lock_held_during_an_exit_is_retried_and_nothing_is_lost(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, _, port, loop = world
    policy_never = RestartPolicy(mode="never")
    children.policy = policy_never
    child = children.add(spec())
    port.owned["alice"] = ["3"]
    port.lock_fails = 2
    children.on_exit(child.pid or 0, exited(1))
    assert port.events == []
    loop.advance(1.1)
    assert [e.released_tasks for e in port.events] == [["3"]] and port.gone == ["alice"]


def test_down_keeps_members_and_stops_everyone(world: tuple[Children, FakeProcesses, Port, Loop]) -> None:
    children, procs, port, loop = world
    a, b, c = children.add(spec("alice")), children.add(spec("bob")), children.add(spec("carol"))
    children.on_hello("carol")
    children.on_state("carol", "running", "7")  # in a turn: it cannot answer until it ends
    finished: list[bool] = []
    children.stop_all(grace=3, done=lambda: finished.append(True))
    assert port.requests == 2 and not finished
    assert procs.signals == [(c.pid, signal.SIGTERM)]  # at once, not after the grace
    children.on_exit(c.pid or 0, killed_by(15))
    children.on_exit(a.pid or 0, exited(0))
    loop.advance(3.1)  # bob never answered: SIGTERM, then SIGKILL
    assert (b.pid, signal.SIGTERM) in procs.signals
    children.on_exit(b.pid or 0, killed_by(9))
    assert finished == [True] and port.gone == [] and set(port.parked) == {"alice", "bob", "carol"}
    with pytest.raises(AgentTeamsError, match="shutting down"):
        children.add(spec("dave"))


def test_a_teammate_that_takes_work_instead_of_the_shutdown_is_stopped_at_once(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, procs, port, _ = world
    a = children.add(spec("alice"))
    children.on_hello("alice")
    children.on_state("alice", "idle")
    children.stop_all(grace=30, done=lambda: None)
    assert port.requests == 1 and procs.signals == []
    children.on_state("alice", "running", "4")  # it claimed a task before it saw the request
    assert procs.signals == [(a.pid, signal.SIGTERM)]


def test_the_idle_teammates_a_wake_may_go_to_are_kept_most_recent_first(
    world: tuple[Children, FakeProcesses, Port, Loop],
) -> None:
    children, _, port, loop = world
    children.policy = RestartPolicy(mode="never")
    for name in ("alice", "bob", "carol"):
        children.add(spec(name))
    children.add(msgspec.structs.replace(spec("dave"), backend="claude-code"))
    children.add(msgspec.structs.replace(spec("sub"), role="subagent", parent="alice"))
    for name in ("dave", "sub", "bob", "alice", "carol"):
        children.on_hello(name)
        children.on_state(name, "idle")
    assert [c.name for c in children.idle()] == ["carol", "alice", "bob"], "not claude, no subagent"
    children.on_state("alice", "running", "1")
    assert [c.name for c in children.idle()] == ["carol", "bob"] and not children.is_idle("alice")
    children.on_state("alice", "idle")
    bob = children.by_name["bob"]
    children.on_exit(bob.pid or 0, killed_by(9))  # gone: never woken again
    loop.advance(1)
    assert [c.name for c in children.idle()] == ["alice", "carol"] and not children.is_idle("bob")
    assert port.ended_turns == ["bob"], "the router hears its turn is over"


def test_a_subagent_dies_with_its_parent(world: tuple[Children, FakeProcesses, Port, Loop]) -> None:
    children, procs, _, _ = world
    parent = children.add(spec("alice"))
    sub = children.add(msgspec.structs.replace(spec("alice-sub"), role="subagent", parent="alice"))
    children.on_exit(parent.pid or 0, killed_by(9))
    assert (sub.pid, signal.SIGTERM) in procs.signals


def test_wait_status_helpers_match_the_os() -> None:
    assert os.waitstatus_to_exitcode(exited(3)) == 3 and os.waitstatus_to_exitcode(killed_by(9)) == -9
