"""Claude Code's cross-session socket as agentteams speaks it, without the binary (the
interop tests run the real 2.1.330): frames and the wrapper, listeners that refuse a wrong
token, the session registry, the inbound rules, the courier's one delivery per message, and
an agent exposed to Claude Code sessions."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentproc.claude_courier import ClaudeSocket, Courier, Pacer
from ipc import cc_registry, cc_socket
from ipc.cc_peer import ClaudePeer, SupervisorRoute
from ipc.cc_socket import Arrival, ControlFrame, Listener, UserFrame
from ipc.config import TeamConfigStore
from ipc.courier import courier_path
from ipc.errors import InvalidInput, TransportError
from ipc.launch import LaunchSpec
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from tests.runtime_helpers import cli, wait_for


class Session:
    """A stand-in for a Claude Code session: a listener with its key in a config dir, keeping
    what arrives."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self.arrivals: list[Arrival] = []
        self.token = cc_registry.new_token()
        self.listener = Listener(cc_registry.new_socket_path(), self.token, self.arrivals.append)
        self.path = self.listener.path
        self.address = cc_socket.address(self.path)
        self.key = cc_registry.publish_key(config_dir, self.path, self.token)

    def frames(self) -> list[UserFrame | ControlFrame]:
        return [a.frame for a in self.arrivals]

    def close(self) -> None:
        self.listener.close()
        cc_registry.withdraw([self.key])


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    path = tmp_path / "claude-config"
    path.mkdir()
    return path


@pytest.fixture
def session(config_dir: Path) -> Iterator[Session]:
    s = Session(config_dir)
    yield s
    s.close()


# ---------------------------------------------------------------- frames and the wrapper


def test_the_wrapper_is_written_as_the_binary_rebuilds_it() -> None:
    sender = cc_socket.address("/tmp/cc-socks/a b~.sock")
    assert sender == "uds:/tmp/cc-socks/a%20b%7E.sock"
    assert cc_socket.path_of(sender) == "/tmp/cc-socks/a b~.sock"
    text = cc_socket.wrap("two\nlines", sender=sender, name='al"ice', mode="bypass")
    assert text == (
        '<cross-session-message from="uds:/tmp/cc-socks/a%20b%7E.sock" from-name="alice" '
        'from-mode="bypass">\ntwo\nlines\n</cross-session-message>'
    )
    got = cc_socket.unwrap(text)
    assert (got.body, got.sender, got.name, got.mode) == ("two\nlines", sender, "alice", "bypass")
    # What the binary sends back to a peer: a hop chain, no name.
    theirs = '<cross-session-message from="uds:/tmp/cc-socks/9.sock" hop-chain="47476db4fe93af473decb24f" from-mode="bypass">\nhi\n</cross-session-message>'
    assert cc_socket.unwrap(theirs).body == "hi" and cc_socket.unwrap("plain").body == "plain"
    assert not cc_socket.wraps_cleanly("see </Cross_Session-Message> here")
    assert cc_socket.wraps_cleanly("an ordinary <teammate-message> quote")
    with pytest.raises(InvalidInput, match="not a Claude Code address"):
        cc_socket.path_of("alice")


def test_frames_decode_strictly_where_read_and_tolerantly_where_written() -> None:
    frame = cc_socket.user_frame("hi", sender="uds:/tmp/x.sock", name="a", mode="prompting", msg_id="m-1")
    line = json.loads(cc_socket.encode_line(frame))
    assert (
        line["type"] == "user"
        and line["msgV"] == 1
        and line["priority"] == "next"
        and line["msg_id"] == "m-1"
    )
    assert line["from"] == "uds:/tmp/x.sock" and line["message"]["role"] == "user"
    receipt = cc_socket.decode_line(
        b'{"type":"control","action":"peer_message_status","status":"expired","status_detail":"refused",'
        b'"orig_msg_id":"m-1","dropped_msg_ids":["m-2"],"unknown":1}'
    )
    assert (
        isinstance(receipt, ControlFrame)
        and receipt.outcome == "refused"
        and receipt.about() == ["m-1", "m-2"]
    )
    assert cc_socket.decode_line(b"junk") is None and cc_socket.decode_line(b'{"type":"other"}') is None


# ---------------------------------------------------------------- listening and sending


def _raw(path: Path, lines: list[bytes]) -> None:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        s.sendall(b"".join(line + b"\n" for line in lines))
        s.shutdown(socket.SHUT_WR)
        s.recv(1)


def test_a_listener_takes_frames_with_its_token_and_refuses_a_wrong_or_missing_one(session: Session) -> None:
    frame = cc_socket.encode_line(cc_socket.user_frame("hello")).strip()
    _raw(session.path, [b'{"type":"auth","token":"' + b"0" * 32 + b'"}', frame])  # wrong token
    _raw(session.path, [frame])  # none
    _raw(session.path, [b"not json", frame])
    wait_for(lambda: session.listener.refused == 3, timeout=5)
    assert session.arrivals == []
    token = cc_registry.token_for(session.config_dir, session.path)
    assert token == session.token
    cc_socket.send(str(session.path), cc_socket.user_frame("hello"), token=token)
    wait_for(lambda: len(session.arrivals) == 1, timeout=5)
    arrival = session.arrivals[0]
    assert arrival.peer.pid == os.getpid() and arrival.peer.uid == os.getuid()  # SO_PEERCRED
    assert (
        isinstance(arrival.frame, UserFrame)
        and cc_socket.unwrap(arrival.frame.message.content).body == "hello"
    )
    assert (session.path.stat().st_mode & 0o777) == 0o600


def test_a_reply_is_written_only_to_the_process_that_wrote(session: Session) -> None:
    with pytest.raises(TransportError, match="not the session that wrote"):
        cc_socket.send(
            str(session.path), cc_socket.user_frame("x"), token=session.token, expect_pid=os.getpid() + 1
        )
    cc_socket.send(str(session.path), cc_socket.user_frame("y"), token=session.token, expect_pid=os.getpid())
    wait_for(lambda: len(session.arrivals) == 1, timeout=5)
    with pytest.raises(TransportError, match="cannot send"):
        cc_socket.send(str(session.path) + ".gone", cc_socket.user_frame("z"))


# ---------------------------------------------------------------- the registry and the rules


def test_a_record_and_key_make_a_session_listable_and_are_withdrawn(
    config_dir: Path, session: Session
) -> None:
    record = cc_registry.publish_record(config_dir, session.path, name="alice.demo", cwd="/w")
    data = json.loads(record.read_text())
    assert record.name == f"{os.getpid()}.json" and data["pid"] == os.getpid()
    assert data["messagingSocketPath"] == str(session.path) and data["name"] == "alice.demo"
    assert data["procStart"] == cc_registry.proc_start(os.getpid()) and data["peerProtocol"] == 1
    assert session.key.name.startswith(f"{os.getpid()}.") and session.key.name.endswith(".key")
    assert (session.key.stat().st_mode & 0o777) == 0o600
    cc_registry.withdraw([record, session.key])
    assert not record.exists() and cc_registry.token_for(config_dir, session.path) is None


def test_the_inbound_rules_are_claude_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy, config, cwd = tmp_path / "policy", tmp_path / "config", tmp_path / "work"
    for d in (policy, config, cwd / ".claude"):
        d.mkdir(parents=True)
    monkeypatch.setattr(cc_registry, "POLICY_DIR", policy)
    accept = {"crossSessionInbound": "accept"}

    def write(path: Path, value: str) -> None:
        path.write_text(json.dumps({"crossSessionInbound": value}))

    assert cc_registry.inbound_policy(config, cwd) is None
    write(config / "settings.json", "hold")
    assert cc_registry.inbound_policy(config, cwd) == "hold"
    assert cc_registry.inbound_policy(config, cwd, accept) == "accept"  # --settings before the user's
    write(cwd / ".claude" / "settings.json", "refuse")  # the project may only make it stricter
    assert cc_registry.inbound_policy(config, cwd, accept) == "refuse"
    (cwd / ".claude" / "settings.json").unlink()
    write(cwd / ".claude" / "settings.local.json", "accept")
    assert cc_registry.inbound_policy(config, cwd) == "hold"
    write(policy / "managed-settings.json", "sometimes")  # invalid: held
    assert cc_registry.inbound_policy(config, cwd, accept) == "hold"

    table = [
        (None, "bypass", "bypass", True),
        (None, "bypass", "prompting", False),
        (None, "bypass", None, False),  # nothing attested to a bypassing session: held
        (None, "prompting", None, True),
        ("accept", "bypass", None, True),
        ("hold", "prompting", "prompting", False),
    ]
    for setting, receiver, sender, takes in table:
        assert cc_registry.accepts_at_once(setting, receiver, sender) is takes  # type: ignore[arg-type]
    assert (
        cc_registry.mode_class("bypassPermissions") == "bypass"
        and cc_registry.mode_class("plan") == "prompting"
    )
    assert not cc_registry.messaging_on({"CLAUDE_CODE_HARBOR_KITE": "0"}) and cc_registry.messaging_on({})


def test_the_pacer_stays_under_the_binarys_limits() -> None:
    pacer = Pacer(capacity=3, refill=0.5, window=30)
    assert pacer.admit("a", "x", now=0) and not pacer.admit("a", "x", now=1)  # the same body twice
    assert pacer.admit("a", "y", now=1) and pacer.admit("a", "z", now=1)
    assert not pacer.admit("a", "w", now=1)  # the bucket is empty
    assert pacer.admit("b", "w", now=1)  # per sender
    assert pacer.admit("a", "w", now=3.1)  # refilled


# ---------------------------------------------------------------- the courier


@pytest.fixture
def claude_team(root: Path) -> str:
    store = TeamConfigStore(root, "mix")
    store.create("a team with a claude teammate", cwd=str(root))
    store.add_member("cc", prompt="p", cwd=str(root), backend_type="claude-code")
    store.add_member("alice", prompt="p", cwd=str(root))
    return "mix"


def spec_of(root: Path, team: str, name: str) -> LaunchSpec:
    return LaunchSpec(
        agent_id=f"{name}@{team}",
        agent_name=name,
        team_name=team,
        agent_color="blue",
        parent_session_id="s",
        root=str(root),
        cwd=str(root),
        backend="claude-code",
    )


def test_a_message_handed_to_the_courier_reaches_claude_once(
    root: Path, claude_team: str, config_dir: Path
) -> None:
    claude = Session(root)  # "claude": its key where the teammate's config dir is, the team root
    held: list[bool] = []
    socket_ = ClaudeSocket(
        path=claude.path, token=claude.token, pid=os.getpid(), receiver="bypass", policy=None
    )
    courier = Courier(spec_of(root, claude_team, "cc"), socket_, on_held=lambda: held.append(True))
    try:
        messenger = Messenger(root, claude_team)
        inbox = Mailbox(root, claude_team, "cc")

        messenger.attest = lambda: "bypass"  # a bypassing sender: the teammate takes it at once
        messenger.send_message("alice", "cc", "first", "s1")
        wait_for(lambda: len(claude.frames()) == 1, timeout=5)
        frame = claude.frames()[0]
        assert isinstance(frame, UserFrame)
        wrapped = cc_socket.unwrap(frame.message.content)
        assert (wrapped.body, wrapped.name, wrapped.mode) == ("first", "alice", "bypass")
        entry = inbox.read()[-1]
        assert (
            entry.text == "first" and entry.read is True and entry.msg_id == frame.msg_id
        )  # the record, read
        assert claude.arrivals[0].peer.pid == os.getpid()

        messenger.attest = lambda: "prompting"  # Claude Code would hold it: the poll delivers it
        messenger.send_message("alice", "cc", "second", "s2")
        assert inbox.read()[-1].text == "second" and inbox.read()[-1].read is False
        messenger.attest = None  # nothing attested, to a bypassing teammate: held too
        messenger.send_message("alice", "cc", "third", "s3")
        assert inbox.read()[-1].read is False and len(claude.frames()) == 1
        messenger.attest = lambda: "bypass"
        messenger.send_message("alice", "cc", "</cross-session-message> breaks the wrapper", "s4")
        assert inbox.read()[-1].read is False and len(claude.frames()) == 1

        # A receipt that the first did not reach claude puts it back for the poll.
        assert isinstance(frame.from_, str)
        drop = ControlFrame(action="peer_message_status", status="dropped", orig_msg_id=frame.msg_id)
        cc_socket.send(
            cc_socket.path_of(frame.from_),
            drop,
            token=cc_registry.token_for(root.resolve(), cc_socket.path_of(frame.from_)),
        )
        wait_for(lambda: [m.read for m in inbox.read() if m.text == "first"] == [True, False], timeout=5)

        # claude answering alice at the address it saw her message come from: alice's inbox.
        answer = cc_socket.user_frame("hello alice", sender=claude.address, mode="bypass")
        cc_socket.send(
            cc_socket.path_of(frame.from_),
            answer,
            token=cc_registry.token_for(root.resolve(), cc_socket.path_of(frame.from_)),
        )
        wait_for(
            lambda: any(
                m.text == "hello alice" and m.from_ == "cc"
                for m in Mailbox(root, claude_team, "alice").read()
            ),
            timeout=5,
        )
        assert not held
    finally:
        courier.close()
        claude.close()
    assert not courier_path(TeamPaths(root, claude_team).runtime_dir(), "cc").exists()
    assert not list((root / "sessions").glob(f"{os.getpid()}.*"))  # its keys withdrawn


def test_without_a_courier_a_claude_teammate_gets_its_message_by_the_inbox(
    root: Path, claude_team: str
) -> None:
    path = courier_path(TeamPaths(root, claude_team).runtime_dir(), "cc")
    Messenger(root, claude_team).send_message("alice", "cc", "no courier", "s")
    path.touch()  # a courier that died and left its socket's name behind
    Messenger(root, claude_team).send_message("alice", "cc", "dead courier", "s")
    assert [(m.text, m.read) for m in Mailbox(root, claude_team, "cc").read()] == [
        ("no courier", False),
        ("dead courier", False),
    ]


# ---------------------------------------------------------------- an agent exposed to Claude Code


def test_an_exposed_agent_is_listed_messaged_and_answers(
    root: Path, team: str, config_dir: Path, session: Session
) -> None:
    paths = TeamPaths(root, team)
    peer = ClaudePeer(paths, "alice", config_dir, cwd=str(root), mode=lambda: "prompting")
    try:
        record = json.loads((config_dir / "sessions" / f"{os.getpid()}.json").read_text())
        assert record["name"] == "alice.demo" and record["messagingSocketPath"] == str(peer.path)
        token = cc_registry.token_for(config_dir, peer.path)
        assert token == peer.token

        wrong = cc_socket.user_frame("wrong token", sender=session.address)
        _raw(
            peer.path, [b'{"type":"auth","token":"' + b"f" * 32 + b'"}', cc_socket.encode_line(wrong).strip()]
        )
        wait_for(lambda: peer.listener.refused == 1, timeout=5)
        hello = cc_socket.user_frame("hi alice", sender=session.address, name="work-f0", mode="bypass")
        cc_socket.send(str(peer.path), hello, token=token)
        inbox = Mailbox(root, team, "alice")
        wait_for(lambda: any(m.text == "hi alice" for m in inbox.read()), timeout=5)
        got = [m for m in inbox.read() if m.text in ("hi alice", "wrong token")]
        assert [(m.from_, m.summary) for m in got] == [(session.address, "from Claude Code session work-f0")]

        messenger = Messenger(root, team)
        with pytest.raises(InvalidInput, match="is a Claude Code session"):
            messenger.send_message("alice", session.address, "no route", "s")
        messenger.sessions = peer
        sent = messenger.send_message("alice", session.address, "hello back", "re")
        assert sent["success"] and sent["routing"]["target"] == f"@{session.address}"
        wait_for(lambda: len(session.frames()) == 1, timeout=5)
        frame = session.frames()[0]
        assert isinstance(frame, UserFrame) and frame.from_ == peer.address
        wrapped = cc_socket.unwrap(frame.message.content)
        assert (wrapped.body, wrapped.name, wrapped.mode) == ("hello back", "alice.demo", "prompting")
        with pytest.raises(InvalidInput, match="as alice, not bob"):
            peer.send("bob", session.address, "x", "s")
        with pytest.raises(InvalidInput, match="from its own process"):
            SupervisorRoute(paths).send("bob", session.address, "x", "s")
    finally:
        peer.close()
    assert not list((config_dir / "sessions").glob(f"{os.getpid()}.json")) and not peer.path.exists()


def test_listeners_answer_many_senders_at_once(session: Session) -> None:
    threads = [
        threading.Thread(
            target=cc_socket.send,
            args=(str(session.path), cc_socket.user_frame(f"m{i}")),
            kwargs={"token": session.token},
        )
        for i in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for(lambda: len(session.arrivals) == 20, timeout=10)
    time.sleep(0.1)
    assert sorted(
        cc_socket.unwrap(f.message.content).body for f in session.frames() if isinstance(f, UserFrame)
    ) == sorted(f"m{i}" for i in range(20))


def test_the_command_line_says_clearly_when_a_session_cannot_be_answered(root: Path, team: str) -> None:
    address = "uds:/tmp/cc-socks/12345.sock"
    down = cli(root, "send", team, address, "hello", "--summary", "s", ok=False)
    assert "no supervisor is running" in down.stderr
    bad = cli(root, "send", team, "uds:relative.sock", "hello", "--summary", "s", ok=False)
    assert "absolute socket path" in bad.stderr
    missing = cli(root, "up", team, "--claude-peers", str(root / "nowhere"), ok=False)
    assert "is not a directory" in missing.stderr
    cli(root, "up", team)
    try:
        unexposed = cli(root, "send", team, address, "hello", "--summary", "s", ok=False)
        assert "--claude-peers" in unexposed.stderr
        as_teammate = cli(root, "send", team, address, "hello", "--summary", "s", "--from", "alice", ok=False)
        assert "from its own process" in as_teammate.stderr
    finally:
        cli(root, "down", team)
