"""The resident door: `send` and `task create` handed by a standard-library-only process to
the team's warm door program, with the same result as the full path; the door is private,
refuses bad requests in one line, and a dead door or supervisor never leaves a command
hanging or sends twice."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from ipc import resident
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME
from supervisor.cli import parsers, quick
from supervisor.cli.main import main as full_main
from supervisor.client import busy
from supervisor.client.handle import TeamHandle
from supervisor.resident.server import Door
from tests.runtime_helpers import running_team, wait_for

AGENTTEAMS = [sys.executable, "-m", "supervisor.cli"]
HEAVY = ("zmq", "msgspec", "cryptography", "ipc", "typing")  # what the quick path does without


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``agentteams --root ROOT ARGV``, a process: through the door if it answers."""
    return subprocess.run(
        [*AGENTTEAMS, "--root", str(root), *argv], capture_output=True, text=True, timeout=60
    )


def full_path(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The same on the full path, in this process (what the command line runs without a door)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = full_main(["--root", str(root), *argv])
        except SystemExit as exc:  # argparse's usage error
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def imports_of(root: Path, *argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *AGENTTEAMS[1:], "--root", str(root), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {
        line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    done.stderr = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    return names, done


def test_send_and_create_through_the_door_as_the_full_path_does_and_refuse_alike(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("bob", prompt="Work through the task list.")
        wait_for(lambda: (m := team.status().teammate("bob")) is not None and m.state == "idle", timeout=30)
        inbox = root / "teams" / "t" / "inboxes" / "bob.json"
        for sender, to in ((LEAD_NAME, "bob"), ("bob", LEAD_NAME)):
            argv = ("send", "t", to, "hello", "--summary", "hi", "--from", sender, "--json")
            names, by_door = imports_of(root, *argv)
            assert by_door.returncode == 0, by_door.stderr
            assert not sorted(n for n in names if n.split(".")[0] in HEAVY)  # it went through the door
            full = full_path(root, *argv)
            assert full.returncode == 0, full.stderr
            assert by_door.stdout == full.stdout  # the same reply, printed the same way
        assert (
            run(root, "send", "t", "bob", "hello", "--summary", "hi").stdout
            == "Message sent to bob's inbox\n"
        )
        box = [m for m in json.loads(inbox.read_text()) if m["text"] == "hello"]
        assert len(box) == 3 and all(m.keys() == box[0].keys() for m in box)  # door, full, door
        assert wait_for(lambda: all(m["read"] for m in json.loads(inbox.read_text())))  # bob was woken
        lead_box = json.loads(team.paths.inbox(LEAD_NAME).read_text())
        as_bob = [m for m in lead_box if m["from"] == "bob" and m["text"] == "hello"]
        assert [m.get("via") for m in as_bob] == ["person"] * 2  # a person in bob's name, either way

        create = (
            "task",
            "create",
            "t",
            "by the door",
            "--command",
            "true",
            "--subagent",
            "Run `true`",
            "--json",
        )
        names, created = imports_of(root, *create)
        assert created.returncode == 0, created.stderr
        assert not sorted(n for n in names if n.split(".")[0] in HEAVY)
        a, b = json.loads(created.stdout), json.loads(full_path(root, *create).stdout)
        assert int(b["id"]) == int(a["id"]) + 1
        assert {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}
        assert a["metadata"] == {"command": "true", "subagent": "Run `true`"}
        assert (
            run(root, "task", "create", "t", "third").stdout == f"created task #{int(b['id']) + 1}: third\n"
        )
        assert wait_for(lambda: team.tasks.get(a["id"]).status == "completed", timeout=30)  # bob claimed it

        # Bad input: the same one line and exit code as the full path, and nothing changed.
        before = inbox.read_bytes(), len(team.tasks.list())
        bad: list[tuple[str, ...]] = [
            ("send", "t", "nobody", "hi", "--summary", "s"),
            ("task", "create", "t", "x", "--blocked-by", "seven"),
            ("send", "t", "bob"),  # a usage error: the same parser
        ]
        for refused in bad:
            names, by_door = imports_of(root, *refused)
            full = full_path(root, *refused)
            assert (by_door.returncode, by_door.stderr.strip()) == (full.returncode, full.stderr.strip()), (
                refused
            )
            assert full.returncode in (1, 2) and len(full.stderr.strip().splitlines()) == 1, full.stderr
            if refused[-1] != "seven":  # a task id only the table's words refuse: the full path says it
                assert "msgspec" not in names, refused  # refused at the door, not after a fallback
        assert (inbox.read_bytes(), len(team.tasks.list())) == before


def test_a_bad_request_gets_one_line_and_a_foreign_user_is_refused(root: Path, team: str) -> None:
    """The door program's loop, on a socket of the test's, talked to raw."""
    handle = TeamHandle(team, root=root)
    place = Path(
        tempfile.mkdtemp(prefix="at-door-", dir="/tmp")
    )  # no private parents: another user may reach it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(place / "s"))
    listener.listen(8)
    listener.setblocking(False)
    door = Door(listener, handle)
    wake_r, wake_w = os.pipe()
    loop = threading.Thread(target=door.serve, args=(wake_r,), daemon=True)
    loop.start()
    request = {"v": 1, "op": "send_message", "actor": LEAD_NAME, "root": str(root), "team": team}

    def ask(line: bytes) -> dict[str, object]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(place / "s"))
            s.sendall(line)
            return json.loads(s.makefile("rb").readline())  # type: ignore[no-any-return]

    def line(**change: object) -> bytes:
        return json.dumps({**request, **change}).encode() + b"\n"

    try:
        for bad in (b"not json\n", line(args={"to": "bob"}, v="one")):
            reply = ask(bad)
            assert reply["ok"] is False and reply["exit"] == 1 and "bad request" in str(reply["error"]), reply
        for wrong in ({"to": "bob", "txt": "x"}, {"to": "bob", "text": 7, "summary": "s"}):
            assert "not taken here" in str(ask(line(args=wrong))["fallback"])  # the full path says why
        assert ask(line(op="spawn", args={}))["fallback"]  # not served here: the full path
        assert ask(line(team="other", args={}))["fallback"]
        assert not handle.state.mailbox("bob").exists()  # nothing was sent
        assert ask(line(args={"to": "bob", "text": "x", "summary": "s"}))["ok"] is True
        assert len(handle.state.mailbox("bob").read()) == 1

        if os.getuid() == 0:  # another user, for real: a child that becomes nobody
            place.chmod(0o755)
            (place / "s").chmod(0o666)
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover (the child)
                try:
                    os.setuid(65534)
                    os.write(
                        write_end,
                        json.dumps(ask(line(args={"to": "bob", "text": "y", "summary": "s"}))).encode(),
                    )
                finally:
                    os._exit(0)
            os.close(write_end)
            os.waitpid(pid, 0)
            refused = json.loads(os.read(read_end, 65536))
            assert refused["ok"] is False and "refused" in refused["error"]
            assert len(handle.state.mailbox("bob").read()) == 1
    finally:
        door.stopping = True
        os.write(wake_w, b"x")
        loop.join(5)
        handle.close()
        shutil.rmtree(place)


def test_the_socket_is_private_and_a_dead_door_or_supervisor_never_hangs_a_command(root: Path) -> None:
    with running_team(root) as team:
        team.store.add_member("alice", prompt="x", cwd=str(root))  # a member, never started
        runtime = team.paths.runtime_dir()
        sock = runtime / resident.SOCKET_NAME
        assert sock.stat().st_mode & 0o777 == 0o600 and runtime.stat().st_mode & 0o777 == 0o700
        assert run(root, "send", "t", "alice", "one", "--summary", "s").returncode == 0  # starts the door
        door = wait_for(lambda: _door_of(root))

        def texts() -> list[str]:
            return [m["text"] for m in json.loads(team.paths.inbox("alice").read_text())]

        # kill -9 of the door while a request waits on it: the supervisor starts another, which answers.
        os.kill(door, signal.SIGSTOP)
        waiting = _send_in_background(root, "two")
        os.kill(door, signal.SIGKILL)
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        assert texts().count("two") == 1
        door = wait_for(lambda: _door_of(root))

        # kill -9 of the supervisor while a request waits: a clear error (or, had it not yet
        # connected, the full path), never a hang, never two sends.
        os.kill(door, signal.SIGSTOP)
        waiting = _send_in_background(root, "three")
        supervisor = team.supervisor_pid()
        assert supervisor is not None
        os.kill(supervisor, signal.SIGKILL)
        os.kill(door, signal.SIGCONT)  # it had been told to stop (its parent died): it does
        out, err = waiting.communicate(timeout=60)
        if waiting.returncode == 0:
            assert texts().count("three") == 1
        else:
            assert (
                waiting.returncode == 1 and "went away before answering" in err and len(err.splitlines()) == 1
            )
            assert texts().count("three") <= 1
        wait_for(lambda: _door_of(root) is None)

        # The supervisor is gone and its socket left behind: the full path, the same result.
        assert sock.exists()
        done = run(root, "send", "t", "alice", "four", "--summary", "s")
        assert done.returncode == 0 and done.stdout == "Message sent to alice's inbox\n"
        assert texts().count("four") == 1


def _door_of(root: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"supervisor.resident" in words and str(root).encode() in words and state != "Z":
            return int(entry)
    return None


def _send_in_background(root: Path, text: str) -> subprocess.Popen[str]:
    """A send that has connected to a stopped door and waits for its answer."""
    proc = subprocess.Popen(
        [*AGENTTEAMS, "--root", str(root), "send", "t", "alice", text, "--summary", "s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def waiting() -> bool:
        try:  # waiting for the reply (a read with a deadline polls first): the request went out
            return (
                Path(f"/proc/{proc.pid}/wchan")
                .read_text()
                .startswith(("poll_schedule_timeout", "unix_stream"))
            )
        except OSError:
            return False

    wait_for(lambda: waiting() or proc.poll() is not None, timeout=30, interval=0.01)
    return proc


def test_the_quick_path_finds_what_the_full_path_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parsers.LEAD_NAME == LEAD_NAME and parsers.DEFAULT_ROWS == busy.DEFAULT_ROWS
    assert (quick.SOCKET_NAME, quick.VERSION, quick.MAX_REQUEST) == (
        resident.SOCKET_NAME,
        resident.VERSION,
        resident.MAX_REQUEST,
    )
    monkeypatch.chdir(tmp_path)

    def same(root: str | None, name: str) -> None:
        paths = TeamPaths(root, name)
        paths.runtime_dir()
        found = quick.place(root, name)
        assert found == (str(paths.root), paths.team, str(paths.runtime_path() / resident.SOCKET_NAME)), (
            root,
            name,
        )

    for root in (None, str(tmp_path / "r"), "rel/./x/", "~/teams", str(tmp_path) + "//a/../b"):
        for name in ("demo", "My Team!", "x" * 60):
            same(root, name)
    monkeypatch.delenv("AGENTTEAMS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    same(None, "demo")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / ("x" * 60)))  # too long: /tmp/agentteams-UID
    same(None, "demo")
    assert quick.place(None, "---") is None and quick.place(" ", "demo") is None
    assert quick.place(None, "never-up") is None  # no runtime directory: nothing to ask


def test_a_teammates_tool_and_unreadable_stdin_take_the_full_path(root: Path) -> None:
    """Inside a teammate (its tools inherit AGENTTEAMS_UNDER_AGENT) the full path does not
    sign as the lead, so the door, which would, is not asked; stdin that is not UTF-8 text
    is refused in the full path's one line, and nothing is sent."""
    from ipc import trust
    from ipc.mailbox import Mailbox

    with running_team(root) as team:
        team.spawn("bob", prompt="Wait for messages.")
        wait_for(lambda: (m := team.status().teammate("bob")) is not None and m.state == "idle", timeout=30)
        argv = [*AGENTTEAMS, "--root", str(root), "send", "t", "bob"]
        env = {**os.environ, "AGENTTEAMS_UNDER_AGENT": "bob"}
        done = subprocess.run(
            [*argv, "from a tool", "--summary", "s"], env=env, capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        (sent,) = [m for m in Mailbox(root, "t", "bob").read() if m.text == "from a tool"]
        assert trust.signature_of(sent) is None  # not in the lead's name: a person's, unsigned
        # What is in the inbox, not its bytes: bob flips its read flag when it takes the first.
        before = [(m.msg_id, m.text) for m in Mailbox(root, "t", "bob").read()]
        done = subprocess.run(
            [*argv, "-", "--summary", "s"], input=b"caf\xe9\n", capture_output=True, timeout=60
        )
        assert done.returncode == 1 and b"not UTF-8" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert [(m.msg_id, m.text) for m in Mailbox(root, "t", "bob").read()] == before
