"""The tmux backend with the real tmux: each test on a tmux server of its own (``tmux -L``),
killed at the end. Panes appear with the ids the config says and go away; the teammate in a
pane is supervised (restarted in its pane, stopped); a kill -9 anywhere leaves no pane and
no process."""

from __future__ import annotations

import os
import pty
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipc import tmux as ipc_tmux
from ipc.errors import AgentTeamsError
from supervisor import Team
from tests.runtime_helpers import AGENTTEAMS, alive, cli, processes_under, running_team, wait_for

# The kill -9 and attach cases are marked ``tmux`` (``make test-tmux``): a few seconds each,
# kept out of ``make test``, which runs the pane's basic life.
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(server: str, *args: str, ok: bool = True) -> str:
    result = subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True, timeout=10)
    if ok:
        assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def panes(server: str) -> dict[str, str]:
    """pane id -> 'pid dead' of every pane of the server (none when it is not running)."""
    out = tmux(server, "list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{pane_dead}", ok=False)
    return {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines()}


def pane_of(team: Team, name: str) -> str:
    member = next(m for m in team.config().teammates() if m.name == name)
    return member.tmux_pane_id


@pytest.fixture
def server() -> Iterator[str]:
    name = f"at-test-{secrets.token_hex(4)}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, timeout=10)
    socket_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (socket_dir / name).unlink(missing_ok=True)  # a server that died leaves its socket file


def do_task(team: Team, owner: str, command: str) -> None:
    task = team.tasks.create(f"task for {owner}", "run it", metadata={"command": command}, owner=owner)
    team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)


def test_a_teammate_in_a_pane_shows_its_turns_and_its_pane_goes_with_it(root: Path, server: str) -> None:
    with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
        team.spawn("alice", prompt="Do your tasks.")
        pane = pane_of(team, "alice")
        status = team.status().teammate("alice")
        assert status is not None and status.backend == "tmux"
        assert pane.startswith("%") and panes(server)[pane] == f"{status.pid} 0"
        session = tmux(server, "display", "-p", "-t", pane, "#{session_name}")
        assert session == ipc_tmux.session_name(team.paths.runtime_dir()) and session.startswith(
            "agentteams-t-"
        )
        # Its environment (an API key, maybe) came through a private file, not left behind.
        assert not (team.paths.runtime_dir() / "panes" / "alice.env").exists()
        do_task(team, "alice", "echo hello-from-a-pane")
        wait_for(lambda: "hello-from-a-pane" in tmux(server, "capture-pane", "-p", "-t", pane))
        shown = tmux(server, "capture-pane", "-p", "-t", pane)
        assert "▶" in shown and "Bash" in shown, shown
        reply = team.shutdown("alice")
        assert reply.stopped
        wait_for(lambda: pane not in panes(server), timeout=30)
        assert not alive([status.pid or 0])


def test_inside_tmux_panes_are_split_beside_the_callers_and_go_at_down(
    root: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmux(server, "new-session", "-d", "-s", "user", "-x", "200", "-y", "50", "sleep 600")
    caller = tmux(server, "display", "-p", "-t", "user", "#{pane_id}")
    socket = tmux(server, "display", "-p", "#{socket_path}")
    server_pid = tmux(server, "display", "-p", "#{pid}")
    monkeypatch.setenv("TMUX", f"{socket},{server_pid},0")  # as if `agentteams up` ran in that pane
    monkeypatch.setenv("TMUX_PANE", caller)
    with running_team(root, teammate_mode="auto") as team:
        team.spawn("alice", prompt="Wait.")
        team.spawn("bob", prompt="Wait.")
        ids = [pane_of(team, "alice"), pane_of(team, "bob")]
        fmt = "#{window_id} #{pane_left} #{pane_top}"
        where = {p: tmux(server, "display", "-p", "-t", p, fmt).split() for p in [caller, *ids]}
        assert len({w[0] for w in where.values()}) == 1, "all in the caller's window"
        assert int(where[ids[0]][1]) > int(where[caller][1]), "the first to the right of the caller"
        assert where[ids[1]][1] == where[ids[0]][1] and int(where[ids[1]][2]) > int(where[ids[0]][2]), (
            "the second stacked under the first"
        )
    wait_for(lambda: set(panes(server)) == {caller}, timeout=30)  # down took theirs, left the caller's
    wait_for(lambda: all(m.tmux_pane_id == "" for m in team.config().teammates()))  # no stale pane id


def test_a_tmux_server_that_cannot_start_is_refused_with_tmuxs_words(root: Path, tmp_path: Path) -> None:
    # A socket tmux cannot make (a name past the kernel's 108 bytes): its own words, one line.
    with running_team(root, tmux_server=str(tmp_path / ("s" * 120))) as team:
        for attempt in (
            lambda: team.spawn("alice", prompt="Wait.", backend="tmux"),
            lambda: team.restart("alice"),
        ):
            with pytest.raises(AgentTeamsError) as refused:
                attempt()
            said = refused.value.message
            assert "tmux new-session: error" in said and "File name too long" in said, said
            assert "internal error" not in said
            assert "it stays a member, failed" in said
        assert team.status().teammate("alice").state == "failed"  # type: ignore[union-attr]
        assert "Traceback" not in (team.paths.runtime_dir() / "supervisor.log").read_text()
    # A socket in a directory that does not exist: refused at `up`, before anything starts.
    missing = str(tmp_path / "no-such-dir" / "sock")
    with pytest.raises(AgentTeamsError, match=r"--tmux-server '.*no-such-dir/sock': no directory"):
        Team("t", root=root).up(tmux_server=missing)
    assert not Team("t", root=root).is_up()


@pytest.mark.tmux
def test_kill_9_of_a_teammate_restarts_it_in_its_own_pane(root: Path, server: str) -> None:
    with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
        team.spawn("alice", prompt="Do your tasks.")
        pane = pane_of(team, "alice")
        first = team.status().teammate("alice")
        assert first is not None and first.pid is not None
        os.kill(first.pid, signal.SIGKILL)

        def restarted() -> bool:
            now = team.status().teammate("alice")
            return now is not None and now.pid not in (None, first.pid) and now.state in ("running", "idle")

        wait_for(restarted)
        now = team.status().teammate("alice")
        assert now is not None and now.restarts == 1
        assert pane_of(team, "alice") == pane and panes(server)[pane] == f"{now.pid} 0", "the same pane"
        assert not alive([first.pid])
        do_task(team, "alice", "echo after-the-restart")  # supervised and working again
    wait_for(lambda: not panes(server), timeout=30)


@pytest.mark.tmux
def test_kill_9_of_the_supervisor_leaves_no_pane_no_process_and_no_stale_id(root: Path, server: str) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    supervisor = team.up(teammate_mode="tmux", tmux_server=server)
    team.spawn("alice", prompt="Wait.")
    team.spawn("bob", prompt="Wait.")
    pids = [t.pid for t in team.status().teammates if t.pid]
    assert len(pids) == 2 and len(panes(server)) == 2
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not alive(pids), timeout=20)
    wait_for(lambda: not panes(server), timeout=20)
    wait_for(lambda: all(m.tmux_pane_id == "" for m in team.config().teammates()))
    wait_for(lambda: not processes_under(root), timeout=20)
    # Brought up again, its teammates come back in new panes, on the server it was given
    # before (it used to be the default one, a person's).
    team.up(teammate_mode="tmux")
    try:
        wait_for(lambda: all(m.tmux_pane_id.startswith("%") for m in team.config().teammates()))
        assert set(panes(server)) == {pane_of(team, "alice"), pane_of(team, "bob")}
    finally:
        team.down(grace=2)
    wait_for(lambda: not panes(server), timeout=30)


@pytest.mark.tmux
def test_a_team_of_the_same_name_under_another_root_leaves_the_first_ones_panes(
    root: Path, tmp_path: Path, server: str
) -> None:
    other_root = tmp_path / "other-root"
    other_root.mkdir()
    with running_team(root, teammate_mode="tmux", tmux_server=server) as first:
        first.spawn("alice", prompt="Wait.")
        pane, pid = pane_of(first, "alice"), first.status().teammate("alice").pid  # type: ignore[union-attr]
        with running_team(other_root, teammate_mode="tmux", tmux_server=server) as second:
            second.spawn("alice", prompt="Wait.")  # its up swept what it took for its own leftovers
            theirs = pane_of(second, "alice")
            assert theirs != pane and panes(server)[pane] == f"{pid} 0", "the first team's pane untouched"
            sessions = {tmux(server, "display", "-p", "-t", p, "#{session_name}") for p in (pane, theirs)}
            assert len(sessions) == 2, sessions
        wait_for(lambda: theirs not in panes(server), timeout=30)
        assert panes(server)[pane] == f"{pid} 0" and first.status().teammate("alice").restarts == 0  # type: ignore[union-attr]


@pytest.mark.tmux
def test_attach_opens_the_teams_session_from_a_terminal(root: Path, server: str) -> None:
    with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
        team.spawn("alice", prompt="Wait.")
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env["TERM"] = "xterm-256color"
        pid, fd = pty.fork()
        if pid == 0:  # the child: agentteams attach in a terminal
            os.execve(AGENTTEAMS[0], [*AGENTTEAMS, "attach", "t", "alice", "--root", str(root)], env)
        try:
            wait_for(
                lambda: (
                    tmux(server, "list-clients", "-F", "#{client_session}", ok=False)
                    == ipc_tmux.session_name(team.paths.runtime_dir())
                )
            )
            tmux(server, "detach-client", "-s", ipc_tmux.session_name(team.paths.runtime_dir()))
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        finally:
            os.close(fd)
            if alive([pid]):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        refused = cli(root, "attach", "t", "nobody", ok=False)
        assert "'nobody' is not a member of team 't'" in refused.stderr, refused.stderr
        team.spawn("pat", prompt="Wait.", backend="process")
        assert "'pat' does not run in a tmux pane" in cli(root, "attach", "t", "pat", ok=False).stderr
        # No terminal (a script, a pipe): said so, not tmux's bare "not a terminal".
        piped = cli(root, "attach", "t", "alice", ok=False, stdin="").stderr
        assert "attach needs a terminal" in piped and "attach-session -t %" in piped, piped


@pytest.mark.tmux
def test_a_teammate_that_crashes_for_good_leaves_no_pane(root: Path, server: str) -> None:
    with running_team(root, teammate_mode="tmux", tmux_server=server, restart="never") as team:
        team.spawn("alice", prompt="Wait.")
        pane = pane_of(team, "alice")
        pid = team.status().teammate("alice").pid  # type: ignore[union-attr]
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: pane not in panes(server), timeout=30)
        wait_for(lambda: all(m.name != "alice" for m in team.config().teammates()))


def test_spawn_backend_tmux_in_a_process_team(root: Path, server: str) -> None:
    with running_team(root, tmux_server=server) as team:
        team.spawn("carol", prompt="Wait.")
        out = cli(root, "spawn", "t", "dave", "--prompt", "Wait.", "--backend", "tmux").stdout
        assert "spawned dave" in out
        assert pane_of(team, "carol").startswith("process:")
        assert pane_of(team, "dave") in panes(server)


@pytest.mark.tmux
def test_kill_9_of_the_tmux_server_brings_teammates_back_in_new_panes(root: Path, server: str) -> None:
    with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
        team.spawn("alice", prompt="Do your tasks.")
        first = team.status().teammate("alice")
        assert first is not None and first.pid is not None
        os.kill(int(tmux(server, "display", "-p", "#{pid}")), signal.SIGKILL)

        def back() -> bool:
            now = team.status().teammate("alice")
            return now is not None and now.pid != first.pid and now.state in ("running", "idle")

        wait_for(back, timeout=30)
        assert not alive([first.pid])
        assert pane_of(team, "alice") in panes(server), (
            "its new pane, on a new server, is the one the config names"
        )
        do_task(team, "alice", "echo after-the-server-died")
    wait_for(lambda: not panes(server), timeout=30)


def test_ps_shows_a_tmux_team_that_is_down_as_ours(root: Path, server: str) -> None:
    # Its members' backendType "tmux" made ps take it for Claude Code's own team once down.
    with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
        team.spawn("alice", prompt="Do your tasks.")
        team.down(grace=2)
        shown = cli(root, "ps").stdout
        assert "t: not up" in shown and "Claude Code team" not in shown, shown
