"""The tmux server's death, with the real tmux (``make test-tmux``): inside tmux the teammates
fall back to a detached session of the team on a new server; when no new pane can be made
they fail with tmux's own message, and the config never names a pane that is gone."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipc import tmux as ipc_tmux
from supervisor import Team
from tests.runtime_helpers import alive, running_team, wait_for

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def tmux(server: list[str], *args: str, ok: bool = True) -> str:
    result = subprocess.run(["tmux", *server, *args], capture_output=True, text=True, timeout=10)
    if ok:
        assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def pane_of(team: Team, name: str) -> str:
    member = team.config().member(name)
    return member.tmux_pane_id if member is not None else ""


@pytest.fixture
def server() -> Iterator[list[str]]:
    name = f"at-test-{secrets.token_hex(4)}"
    yield ["-L", name]
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, timeout=10)
    socket_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (socket_dir / name).unlink(missing_ok=True)


def test_inside_tmux_the_servers_death_brings_teammates_back_in_the_teams_own_session(
    root: Path, server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmux(server, "new-session", "-d", "-s", "user", "-x", "200", "-y", "50", "sleep 600")
    caller = tmux(server, "display", "-p", "-t", "user", "#{pane_id}")
    socket = tmux(server, "display", "-p", "#{socket_path}")
    server_pid = int(tmux(server, "display", "-p", "#{pid}"))
    monkeypatch.setenv("TMUX", f"{socket},{server_pid},0")  # as if `agentteams up` ran in that pane
    monkeypatch.setenv("TMUX_PANE", caller)
    with running_team(root, teammate_mode="auto") as team:
        team.spawn("alice", prompt="Wait.")
        first = team.status().teammate("alice")
        assert first is not None and first.pid is not None
        os.kill(server_pid, signal.SIGKILL)  # the person's tmux, with the caller's pane

        def back() -> bool:
            now = team.status().teammate("alice")
            return now is not None and now.pid != first.pid and now.state in ("running", "idle")

        wait_for(back, timeout=30)
        assert not alive([first.pid])
        pane = pane_of(team, "alice")
        where = tmux(server, "display", "-p", "-t", pane, "#{session_name} #{pane_pid}")
        session = ipc_tmux.session_name(team.paths.runtime_dir())
        assert where == f"{session} {team.status().teammate('alice').pid}"  # type: ignore[union-attr]
        remembered = ipc_tmux.socket_file(Path(team.status().runtime)).read_text()
        assert remembered == socket, "attach finds the new server"
    wait_for(lambda: not tmux(server, "list-panes", "-a", ok=False), timeout=30)


def test_when_no_new_pane_can_be_made_the_teammate_fails_with_tmuxs_message_and_no_stale_pane_id(
    root: Path, tmp_path: Path
) -> None:
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    server = ["-S", str(sockets / "s")]
    try:
        with running_team(root, teammate_mode="tmux", tmux_server=str(sockets / "s")) as team:
            team.spawn("alice", prompt="Wait.")
            first = team.status().teammate("alice")
            assert first is not None and first.pid is not None and pane_of(team, "alice").startswith("%")
            server_pid = int(tmux(server, "display", "-p", "#{pid}"))
            shutil.rmtree(sockets)
            sockets.write_text("no tmux server can be started here now")
            os.kill(server_pid, signal.SIGKILL)

            def failed() -> bool:
                now = team.status().teammate("alice")
                return now is not None and now.state == "failed"

            wait_for(failed, timeout=30)
            now = team.status().teammate("alice")
            assert now is not None
            assert "tmux new-session" in now.last_exit, now.last_exit
            assert pane_of(team, "alice") == "", "no stale pane id"
            assert not alive([first.pid])
    finally:
        subprocess.run(["tmux", *server, "kill-server"], capture_output=True, timeout=10)
