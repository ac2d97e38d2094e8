"""Malformed frames on the control and wake sockets, hostile names, oversized messages."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipc import control, link
from ipc.errors import AgentTeamsError, InvalidInput
from ipc.mailbox import MAX_TEXT_BYTES
from supervisor import Team
from tests.runtime_helpers import running_team

frames = st.one_of(
    st.binary(max_size=512),
    st.builds(
        lambda d: msgspec.msgpack.encode(d),
        st.dictionaries(
            st.text(max_size=8),
            st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=20), st.none()),
            max_size=5,
        ),
    ),
    st.builds(
        lambda t, i: msgspec.msgpack.encode({"type": t, "id": i}),
        st.sampled_from(["Spawn", "Shutdown", "Status", "Bogus", "Push"]),
        st.text(max_size=10),
    ),
)


@given(frames)
def test_link_decode_is_strict(data: bytes) -> None:
    try:
        frame = link.decode(data)
    except InvalidInput:
        return
    assert link.decode(link.encode(frame)) == frame


@given(frames)
def test_control_decode_is_strict(data: bytes) -> None:
    try:
        request = control.decode_request(data)
    except InvalidInput:
        return
    assert control.decode_request(control.encode(request)) == request


def test_fuzzed_control_frames_get_error_replies_and_the_supervisor_keeps_running(root: Path) -> None:
    with running_team(root) as team:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"ipc://{control.control_path(team.paths.runtime_dir())}")

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(frames)
        def fuzz(data: bytes) -> None:
            sock.send(data)
            if sock.poll(2000):
                reply = msgspec.msgpack.decode(sock.recv(), type=control.Reply)
                assert not reply.ok or reply.result is not None  # a reply, never a crash

        fuzz()
        sock.send_multipart([b"extra", b"frames", b"here"])  # not our protocol: dropped
        sock.send(b"\x00" * (control.MAX_REQUEST_BYTES + 10))  # too big: libzmq drops the peer
        sock.close(0)
        ctx.term()
        assert team.status().supervisor == team.supervisor_pid()


def test_hostile_member_names_never_escape_the_root(root: Path) -> None:
    with running_team(root) as team:
        made = []
        for name in ("../../evil", "/abs", "a\x00b", "ａｌｉｃｅ"):
            try:
                made.append(team.spawn(name, prompt="p"))
            except AgentTeamsError as exc:
                assert "\n" not in exc.message
        for name in made:
            assert "/" not in name and "\x00" not in name
        with pytest.raises(AgentTeamsError):
            team.spawn("x" * 10_000, prompt="p")
        outside = {p for p in root.parent.iterdir()} - {root, root.parent / "home", root.parent / "run"}
        assert not [p for p in outside if "evil" in p.name or p.name == "abs"]
        for path in root.rglob("*"):
            assert path.resolve().is_relative_to(root.resolve())


def test_an_oversized_message_is_refused(root: Path) -> None:
    team = Team.create("t", root=root)
    team.store.add_member("alice")
    with pytest.raises(InvalidInput, match="limit"):
        team.send("alice", "x" * (MAX_TEXT_BYTES + 1), summary="big")
    assert not (root / "teams" / "t" / "inboxes" / "alice.json").exists()
    with pytest.raises(InvalidInput, match="limit"):
        team.tasks.create("big", "x" * (MAX_TEXT_BYTES + 1))  # one limit for messages and tasks
    assert team.tasks.list() == []
