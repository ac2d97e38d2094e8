"""A team as large as the host allows: the supervisor sizes its sockets and files for what
it runs, and a teammate that cannot fit is refused with one line naming the limit."""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from ipc import limits
from ipc.errors import LimitReached
from ipc.tasks import SPREAD, TaskList
from ipc.wake import WakeListener, Waker
from supervisor import Team
from supervisor.daemon import capacity
from tests.runtime_helpers import AGENTTEAMS, cli, nothing_left_under, running_team, wait_for

SOFT, HARD = 64, 128  # room for about twenty teammates: well short of the loop's 40


@contextlib.contextmanager
def low_limit_team(root: Path) -> Iterator[Team]:
    """A team whose supervisor was started (by ``agentteams up``) under a low open-file
    limit; brought down afterwards, and nothing of it may survive."""
    team = Team.create("t", root=root, cwd=str(root))

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, HARD))

    subprocess.run(
        [*AGENTTEAMS, "up", "t", "--root", str(root)], preexec_fn=low, check=True, capture_output=True
    )
    try:
        yield team
    finally:
        team.down(grace=2)
        nothing_left_under(root)


def test_a_spawn_past_the_open_file_limit_is_refused_in_one_line_and_the_team_goes_on(
    tmp_path: Path,
) -> None:
    with low_limit_team(tmp_path) as team:
        started: list[str] = []
        refusal = ""
        for i in range(40):
            try:
                started.append(team.spawn(f"w{i}", prompt=""))
            except LimitReached as exc:  # raised again as itself from the supervisor
                refusal = exc.message
                break
        assert refusal, f"40 teammates fitted in {HARD} files"
        assert len(started) >= 3  # the supervisor raised its soft limit of 64 to make room
        assert "RLIMIT_NOFILE" in refusal and f"hard limit {HARD}" in refusal and "ulimit -Hn" in refusal
        assert "internal error" not in refusal and "ZMQError" not in refusal
        sup = team.supervisor_pid()
        assert sup is not None and resource.prlimit(sup, resource.RLIMIT_NOFILE)[0] > SOFT

        # The same refusal through the CLI: one line, exit 1, and nothing written for it.
        out = cli(tmp_path, "spawn", "t", "late", "--prompt", "", ok=False)
        assert out.returncode == 1 and "RLIMIT_NOFILE" in out.stderr
        assert "late" not in {m.name for m in team.config().teammates()}

        # The team is unaffected: its teammates work, and keep the person's limit for their tools.
        mates = team.status().teammates
        assert [m.name for m in mates] == started
        assert all(resource.prlimit(m.pid, resource.RLIMIT_NOFILE)[0] == SOFT for m in mates if m.pid)
        task = team.tasks.create("after the refusal", metadata={"command": "true"})
        assert wait_for(lambda: team.tasks.get(task.id).status == "completed", timeout=30)


def test_a_full_zeromq_context_is_named_with_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "zmq_socket_limit", lambda: 40)
    room = capacity.Capacity()
    assert room.max_sockets == 40
    agents = (40 - capacity.RESERVED_SOCKETS) // capacity.SOCKETS_PER_AGENT
    room.admit("fits", agents - 1)
    with pytest.raises(LimitReached, match="ZeroMQ context holds 40 sockets.*another host"):
        room.admit("one-too-many", agents)


def test_the_context_is_sized_for_what_the_hard_limit_holds() -> None:
    _, hard = limits.nofile()
    room = capacity.Capacity()
    expected = (hard - capacity.RESERVED_FILES) // capacity.FILES_PER_AGENT * capacity.SOCKETS_PER_AGENT
    assert room.max_sockets >= min(limits.zmq_socket_limit(), expected)
    assert room.agent_nofile == limits.nofile()[0]


def test_a_waker_keeps_a_bounded_number_of_sockets_and_every_ring_arrives(tmp_path: Path) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    listeners = [WakeListener(ctx, tmp_path, f"a{i}") for i in range(5)]
    waker = Waker(tmp_path, kept=2)
    try:
        for i in range(5):
            assert waker.wake(f"a{i}")
        assert len(waker.sockets) == 2 and list(waker.sockets) == ["a3", "a4"]
        for listener in listeners:
            assert listener.socket.poll(5000), "a ring from a closed socket was lost"
            assert listener.drain() == 1
    finally:
        waker.close()
        for listener in listeners:
            listener.close()
        ctx.term()


def test_an_agent_puts_its_soft_limit_back() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    pid = os.fork()
    if pid == 0:  # the child lowers its own limit: what an agent does at start
        code = 1
        with contextlib.suppress(BaseException):
            limits.set_soft_nofile(min(soft, 100))
            code = 0 if resource.getrlimit(resource.RLIMIT_NOFILE) == (min(soft, 100), hard) else 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# ---------------------------------------------------------------- views of many teammates

MATES, BUSY, ROWS = 24, 3, 5


def _teammate_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("├─ w", "└─ w"))]


def test_ps_status_watch_and_task_list_show_a_count_and_the_busy_first_within_a_row_budget(
    tmp_path: Path,
) -> None:
    with running_team(tmp_path) as team:
        for i in range(MATES):
            team.spawn(f"w{i}", prompt="")
        wait_for(lambda: [m.state for m in team.status().teammates].count("idle") == MATES, timeout=60)
        for i in range(BUSY):
            team.tasks.create(f"long {i}", metadata={"command": "sleep 60"})
        for i in range(8):
            team.tasks.create(f"later {i}", metadata={"command": "true"}, blocked_by=["1"])
        busy = wait_for(
            lambda: (
                [m.name for m in team.status().teammates if m.state == "running"]
                if [m.state for m in team.status().teammates].count("running") == BUSY
                else None
            ),
            timeout=30,
        )

        text = cli(tmp_path, "ps", "t", "--rows", str(ROWS)).stdout
        assert f"{MATES} teammates: {BUSY} running · {MATES - BUSY} idle" in text, text
        rows = _teammate_lines(text)
        assert len(rows) == ROWS, text
        assert sorted(r.split()[1] for r in rows[:BUSY]) == sorted(busy), text  # the busy ones first
        assert f"… {MATES - ROWS} more teammates: {MATES - ROWS} idle" in text and "--all" in text, text

        every = cli(tmp_path, "ps", "t", "--all").stdout
        assert len(_teammate_lines(every)) == MATES and "more teammates" not in every, every
        assert len(_teammate_lines(cli(tmp_path, "ps", "t").stdout)) == MATES  # under the default budget
        full = json.loads(cli(tmp_path, "ps", "t", "--rows", "2", "--json").stdout)
        assert all(m["process"] for m in full["teams"][0]["teammates"])  # --json: every row, in full

        status = cli(tmp_path, "status", "t", "--rows", str(ROWS)).stdout.splitlines()
        assert status[0] == f"{MATES} teammates: {BUSY} running · {MATES - BUSY} idle", status
        assert [line.split("\t")[1] for line in status[1 : 1 + BUSY]] == ["running"] * BUSY, status
        assert len(status) == ROWS + 2 and "more teammates" in status[-1], status

        watch = cli(tmp_path, "watch", "t", "--once", "--rows", str(ROWS)).stdout
        assert f"{MATES} teammates: {BUSY} running" in watch and "more teammates" in watch, watch
        shown = [line.split()[0] for line in watch.splitlines() if line.startswith("w")]
        assert sorted(shown[:BUSY]) == sorted(busy), watch

        tasks = cli(tmp_path, "task", "list", "t", "--rows", "4").stdout.splitlines()
        assert tasks[0] == f"{BUSY + 8} tasks: {BUSY} in progress · 8 pending", tasks
        assert [line.split("\t")[1] for line in tasks[1 : 1 + BUSY]] == ["in_progress"] * BUSY, tasks
        assert tasks[-1].startswith(f"… {BUSY + 8 - 4} more tasks: {BUSY + 8 - 4} pending"), tasks
        assert len(cli(tmp_path, "task", "list", "t", "--rows", "0").stdout.splitlines()) == BUSY + 8
        cli(tmp_path, "ps", "t", "--rows", "-1", ok=False)


@pytest.mark.heavy  # one of the slowest tests (7-17 s): make test-heavy, which CI runs too
def test_the_scale_benchmark_runs_and_reports_each_measure(tmp_path: Path) -> None:
    """Its quick form, in this process (not part of `bench all --quick`): the code must not rot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks import scale

    result = scale.run(quick=True, max_teammates=4)
    assert [r["teammates"] for r in result["rows"]] == [4]
    row = result["rows"][0]
    assert row["spawn_ms_per_teammate"] > 0 and row["uss_mib_per_teammate"] > 0
    assert row["tasks_per_s"] > 0 and row["send_turn_lost"] == 0 and row["send_turn_idle_lost"] == 0
    assert row["supervisor_files"] > 0 and row["idle_team_cpu_s_per_min"] >= 0 and row["ps_s"] > 0
    assert scale.table(result).row_count == 1
    assert scale.plot(plt, result, tmp_path) == tmp_path / "scale.png" and (tmp_path / "scale.png").exists()


def test_a_claimer_that_lost_the_race_for_the_lowest_task_spreads_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hundreds of claimers all going for the lowest task again would each win one round in
    hundreds: after a lost race a claimer picks among the lowest few, at random."""
    Team.create("t", root=tmp_path, cwd=str(tmp_path))
    tasks = TaskList(tmp_path, "t")
    for i in range(100):
        tasks.create(f"t{i + 1}")
    stale = list(tasks._claimables())  # what a claimer saw just before "rival" won task 1
    tasks.claim("1", "rival")
    real = TaskList._claimables
    looks: list[int] = []

    def seen(self: TaskList) -> Iterator[Any]:
        looks.append(1)
        return iter(stale) if len(looks) == 1 else real(self)

    monkeypatch.setattr(TaskList, "_claimables", seen)
    random.seed(7)  # a pick of task 2 (the lowest left) would be 1 in 64: this seed does not
    got = tasks.claim_next("w0")
    assert len(looks) == 2 and got is not None and got.owner == "w0"
    assert 3 <= int(got.id) <= 1 + SPREAD, got.id  # not the lowest again: among the lowest few
    lowest = tasks.claim_next("w1")
    assert lowest is not None and lowest.id == "2"  # a claimer that lost no race takes the lowest
