"""Small things about the files: a write that fails leaves no temporary behind (the one
clean-up serves the temp-and-rename and the spare), spare task files of a killed process
are removed by the next process that makes one, and a config this process wrote is read
back from its cached copy (set_active's cheap look decodes nothing). Quick."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from ipc import config as config_module
from ipc import storage
from ipc.config import TeamConfigStore
from ipc.errors import StorageError
from ipc.tasks import TaskList


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
