"""Small things about the files: a write that fails leaves no temporary behind (the one
clean-up serves the temp-and-rename and the spare), spare task files of a killed process
are removed by the next process that makes one, the temp of a writer killed mid-rewrite by
the next writer of that file, and a config this process wrote is read back from its cached
copy (set_active's cheap look decodes nothing). Quick."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from ipc import config as config_module
from ipc import leftovers, storage, task_window
from ipc.config import TeamConfigStore
from ipc.errors import StorageError
from ipc.mailbox import Mailbox
from ipc.tasks import TaskList

# A writer of the inbox at PATH, half-way through its rewrite (1 MiB in its temp) until a
# line comes on stdin: with "lock" as the real writers do it, else holding no lock.
HALF_WAY = """
import contextlib, sys
from pathlib import Path
from ipc import storage
from ipc.locks import locked
path, root = Path(sys.argv[1]), Path(sys.argv[2])
with locked(path, root=root) if sys.argv[3] == "lock" else contextlib.nullcontext():
    with storage.atomic_write_from(path) as write:
        write(b"[" + b" " * (1 << 20))
        print("half-way", flush=True)
        sys.stdin.readline()
        write(b"]\\n")
"""


def spares(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".spare."))


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_spares_of_a_killed_process_go_and_a_live_ones_stay(tmp_path: Path) -> None:
    TeamConfigStore(tmp_path, "t").create()
    tasks = TaskList(tmp_path, "t")
    tasks.create("first")  # the task list's directory, and this process's spare
    directory = tmp_path / "tasks" / "t"
    dead, live = f".spare.{dead_pid()}.0", f".spare.{os.getppid()}.3"
    for name in (dead, live, ".spare.x.1"):
        (directory / name).touch()
    storage._looked_for_dead.discard(directory)  # as a process that has not made a spare here yet
    storage._spares.pop(directory, None)
    tasks.create("second")
    assert dead not in spares(directory) and {live, ".spare.x.1"} <= set(spares(directory))
    assert [t.subject for t in tasks.list()] == ["first", "second"]


def half_way(path: Path, root: Path, lock: bool) -> subprocess.Popen[str]:
    writer = subprocess.Popen(
        [sys.executable, "-c", HALF_WAY, str(path), str(root), "lock" if lock else "no"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdout.readline() == "half-way\n"
    return writer


def test_the_temp_of_a_writer_killed_mid_rewrite_goes_with_the_next_write(root: Path, team: str) -> None:
    inbox = Mailbox(root, team, "alice").path
    killed = half_way(inbox, root, lock=True)
    # A pid that is alive: never ours to remove. (Started before the kill: as it starts its
    # write, it would itself remove the temp of a writer already gone.)
    live = half_way(inbox, root, lock=False)
    working = inbox.with_name(f".alice.json.{live.pid}.tmp")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    stale = inbox.with_name(f".alice.json.{killed.pid}.tmp")
    assert stale.stat().st_size > 1 << 20 and not inbox.exists()
    gone = dead_pid()
    others = [  # not our temp name for this inbox: Claude Code's, agent-team-mail's, another file's
        f"alice.json.tmp-{gone}",
        "alice.tmp",
        f".bob.json.{gone}.tmp",
        f".alice.json.{gone}.tmp.x",
        ".alice.json.x.tmp",
    ]
    for name in others:
        (inbox.parent / name).write_bytes(b"theirs")
    try:
        later = "import sys; from ipc.mailbox import Mailbox; Mailbox(*sys.argv[1:]).append(sender='bob', text='after')"
        done = subprocess.run(
            [sys.executable, "-c", later, str(root), team, "alice"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert not stale.exists(), "the killed writer's temp outlived the next write"
        assert working.stat().st_size > 1 << 20, "a live writer's temp was touched"
        assert all((inbox.parent / name).read_bytes() == b"theirs" for name in others)
        assert [m.text for m in Mailbox(root, team, "alice").read()] == ["after"]
    finally:
        assert live.stdin is not None
        live.communicate("go\n", timeout=30)
    assert live.returncode == 0 and inbox.read_bytes() == b"[" + b" " * (1 << 20) + b"]\n"
    assert not working.exists()


def test_a_dead_writers_temp_of_the_completed_prefix_hint_goes_when_it_is_next_written(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = TaskList(root, team)
    for task in tasks.create_many([(f"t{i}", "", None, None, []) for i in range(3)]):
        tasks.update(task.id, status="completed")
    hint = root / "tasks" / team / task_window.HINT
    stale = hint.with_name(f".{hint.name}.{dead_pid()}.tmp")
    stale.write_bytes(b"{")
    leftovers._listed.clear()  # as a process that has not listed the directory yet
    monkeypatch.setattr(task_window, "SWEEP_EVERY", 0.0)  # each look sweeps, and writes the hint
    tasks.find_claimable()
    tasks.find_claimable()
    assert hint.exists() and not stale.exists()


def test_a_dead_writers_temp_outside_a_teams_directories_is_left_alone(tmp_path: Path) -> None:
    """The same writer writes the user's own files (Claude Code's settings): their
    directories are not ours to clean, whatever the names in them."""
    settings = tmp_path / ".claude" / "settings.json"
    stale = settings.with_name(f".settings.json.{dead_pid()}.tmp")
    settings.parent.mkdir()
    stale.write_bytes(b"someone's")
    leftovers._listed.clear()
    storage.atomic_write(settings, b"{}")
    assert stale.read_bytes() == b"someone's" and settings.read_bytes() == b"{}"


def test_a_failed_write_leaves_no_temporary_and_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "files"
    path = where / "x.json"
    storage.atomic_write(path, b"old")

    def full(at: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage, "_write_hook", full)
    with pytest.raises(StorageError, match="could not write .*x.json: disk full; the previous"):
        storage.atomic_write(path, b"new")
    storage.make_spare(where)
    assert len(spares(where)) == 1  # the create below writes into it
    with pytest.raises(StorageError, match="could not write .*y.json: disk full$"):
        storage.create(where / "y.json", b"new")
    assert sorted(p.name for p in where.iterdir()) == ["x.json"] and path.read_bytes() == b"old"


def test_a_config_this_process_wrote_is_read_back_without_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TeamConfigStore(tmp_path, "t")
    store.create()
    store.add_member("alice")
    decoded: list[int] = []
    real = config_module._decoder

    class Counting:
        def decode(self, data: bytes) -> object:
            decoded.append(len(data))
            return real.decode(data)

    monkeypatch.setattr(config_module, "_decoder", Counting())
    assert store.set_active({"alice": True}) == ["alice"]
    assert len(decoded) == 1  # the locked read-modify-write only
    assert store.set_active({"alice": True}) == [] and len(decoded) == 1  # nothing changes: a stat
    fresh = TeamConfigStore(tmp_path, "t").read()  # what is on disk is what was cached
    assert msgspec.structs.asdict(fresh) == msgspec.structs.asdict(store.read())


def test_a_create_whose_spare_was_removed_mid_write_still_writes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process in another pid namespace sees this one's pid dead and removes its spare:
    # here, between the spare's open and its rename.
    where = tmp_path / "tasks" / "t"
    where.mkdir(parents=True)
    storage.make_spare(where)
    [spare] = spares(where)

    def remove_spare(path: Path, data: bytes) -> None:
        if (where / spare).exists():
            os.unlink(where / spare)

    monkeypatch.setattr(storage, "_write_hook", remove_spare)
    storage.create(where / "1.json", b'{"id": "1"}')
    assert (where / "1.json").read_bytes() == b'{"id": "1"}' and spares(where) == []
