from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc import Conflict, NotFound, TeamConfigStore
from ipc.errors import CorruptFile, InvalidInput
from ipc.team_list import list_teams


def test_create_writes_the_lead(root: Path) -> None:
    config = TeamConfigStore(root, "My Team").create("desc", lead_model="offline", cwd="/w")
    assert config.name == "my-team"
    on_disk = json.loads((root / "teams" / "my-team" / "config.json").read_text())
    assert on_disk["leadAgentId"] == "team-lead@my-team"
    assert on_disk["members"] == [
        {
            "agentId": "team-lead@my-team",
            "name": "team-lead",
            "agentType": "team-lead",
            "model": "offline",
            "joinedAt": on_disk["createdAt"],
            "tmuxPaneId": "",
            "cwd": "/w",
            "subscriptions": [],
        }
    ]
    assert (root / "tasks" / "my-team" / ".lock").exists()


def test_create_twice_conflicts(root: Path) -> None:
    TeamConfigStore(root, "t").create()
    with pytest.raises(Conflict, match="already exists"):
        TeamConfigStore(root, "t").create()


def test_add_member_dedupes_and_colors_by_join_order(root: Path) -> None:
    store = TeamConfigStore(root, "t")
    store.create()
    names = [store.add_member("w").name for _ in range(3)]
    assert names == ["w", "w-2", "w-3"]
    store.remove_member("w-2")
    ninth = [store.add_member(f"x{i}") for i in range(6)][-1]
    config = store.read()
    assert [m.color for m in config.teammates()] == [
        "blue",
        "yellow",
        "purple",
        "orange",
        "pink",
        "cyan",
        "red",
        "blue",
    ]
    assert ninth.color == "blue"
    member = json.loads(store.path.read_text())["members"][1]
    assert set(member) == {
        "agentId",
        "name",
        "agentType",
        "model",
        "prompt",
        "color",
        "planModeRequired",
        "joinedAt",
        "tmuxPaneId",
        "cwd",
        "subscriptions",
        "backendType",
        "isActive",
    }


def test_the_lead_name_is_reserved(root: Path) -> None:
    store = TeamConfigStore(root, "t")
    store.create()
    with pytest.raises(InvalidInput):
        store.add_member("team-lead")


def test_update_and_remove_member(root: Path, team: str) -> None:
    store = TeamConfigStore(root, team)
    updated = store.update_member("alice", is_active=True, tmux_pane_id="process:42")
    assert updated.is_active is True and store.require_member("alice").tmux_pane_id == "process:42"
    with pytest.raises(InvalidInput, match="agent_id"):
        store.update_member("alice", agent_id="x")
    with pytest.raises(NotFound, match="members: team-lead, alice, bob"):
        store.update_member("zed", is_active=True)
    assert store.remove_member("alice") is not None
    assert store.remove_member("alice") is None


def test_delete_is_refused_while_teammates_remain(root: Path, team: str) -> None:
    store = TeamConfigStore(root, team)
    with pytest.raises(Conflict, match="alice, bob"):
        store.delete()
    assert store.exists()
    store.remove_member("alice")
    store.remove_member("bob")
    store.delete()
    assert not (root / "teams" / team).exists() and not (root / "tasks" / team).exists()
    assert list_teams(root) == []


def test_unknown_team(root: Path) -> None:
    with pytest.raises(NotFound, match="team create"):
        TeamConfigStore(root, "ghost").read()


def test_a_config_torn_by_a_killed_in_place_writer_is_repaired_from_the_copy_read_last(
    root: Path, team: str
) -> None:
    """Claude Code rewrites config.json in place; a teammate that stopped it mid-write repairs
    what it left (the torn bytes kept beside it, and fields agentteams does not know kept
    in the rebuilt one), and leaves a sound config alone."""
    store = TeamConfigStore(root, team)
    raw = json.loads(store.path.read_bytes())
    raw["futureField"] = {"kept": True}  # as a newer Claude Code might write
    raw["members"][1]["futureMemberField"] = 7
    store.path.write_text(json.dumps(raw))
    names = [m.name for m in store.read().members]  # the copy read last
    inode = store.path.stat().st_ino
    store.repair_torn()
    assert store.path.stat().st_ino == inode  # sound: not written
    whole = store.path.read_bytes()
    store.path.write_bytes(whole[: len(whole) // 2])  # cut mid-write, in place
    store.repair_torn()
    assert (
        [m.name for m in TeamConfigStore(root, team).read().members] == names == ["team-lead", "alice", "bob"]
    )
    assert [p.read_bytes() for p in store.path.parent.glob("config.json.corrupt-*")] == [
        whole[: len(whole) // 2]
    ]
    repaired = json.loads(store.path.read_bytes())
    assert repaired["futureField"] == {"kept": True} and repaired["members"][1]["futureMemberField"] == 7


def test_a_config_left_torn_reads_as_the_copy_read_before_until_a_whole_one_replaces_it(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code rewrites config.json in place, and can stall (or die) between truncating
    and writing: a reader that has read it before goes on with that copy (a sender it knows
    is still a member), one that has not waits, then says it is corrupt; a whole file is read
    again at once."""
    store = TeamConfigStore(root, team)
    names = [m.name for m in store.read().members]
    whole = store.path.read_bytes()
    store.path.write_bytes(b"")  # truncated, not yet written
    assert [m.name for m in store.read().members] == names
    assert store.config_member("alice") is not None
    monkeypatch.setattr("ipc.config.TORN_WAIT", 0.1)
    with pytest.raises(CorruptFile, match="config.json"):
        TeamConfigStore(root, team).read()
    store.path.write_bytes(whole.replace(b"alice", b"carol"))
    assert [m.name for m in store.read().members] == ["team-lead", "carol", "bob"]
    assert not list(store.path.parent.glob("config.json.corrupt-*"))  # a reader repairs nothing


def test_a_team_made_again_after_a_delete_is_never_read_as_the_deleted_one(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TeamConfigStore(root, "again")
    store.create("the first")
    assert store.read().description == "the first"  # the copy read last
    store.delete()
    store.create("the second")
    store.path.write_bytes(b"")  # torn by an in-place writer before this store read it
    monkeypatch.setattr("ipc.config.TORN_WAIT", 0.1)
    with pytest.raises(CorruptFile, match="config.json"):
        store.read()


def test_a_rewrite_keeps_what_others_wrote_inside_leadprocess(root: Path) -> None:
    # Claude Code 2.1.330 owns leadProcess: keys we do not know in it went at every rewrite.
    store = TeamConfigStore(root, "t")
    store.create("desc")
    path = root / "teams" / "t" / "config.json"
    raw = json.loads(path.read_text())
    raw["leadProcess"] = {
        "pid": 1,
        "pidSpace": "vm#pid:[1]",
        "claimedAt": 5,
        "procStart": "7",
        "hostName": "box",
        "future": {"deep": [1, 2]},
    }
    raw["members"][0]["opencodeSessionId"] = "s-1"
    path.write_text(json.dumps(raw))
    store.add_member("alice")
    again = json.loads(path.read_text())
    assert again["leadProcess"] == raw["leadProcess"]
    assert again["members"][0]["opencodeSessionId"] == "s-1"
    assert [m["name"] for m in again["members"]] == ["team-lead", "alice"]
