"""The command line as a person or a script meets it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runtime_helpers import alive, cli, wait_for, wait_for_gone


def jcli(root: Path, *args: str) -> Any:
    return json.loads(cli(root, *args, "--json").stdout)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


@pytest.fixture
def demo(root: Path) -> Path:
    cli(root, "team", "create", "demo", "--description", "cli test")
    return root


def test_team_create_list_delete(root: Path) -> None:
    created = jcli(root, "team", "create", "My Team")
    assert created["name"] == "my-team" and created["members"][0]["name"] == "team-lead"
    assert [t["name"] for t in jcli(root, "team", "list")] == ["my-team"]
    cli(root, "team", "delete", "my-team")
    assert jcli(root, "team", "list") == []


def test_unknown_team_is_one_line_and_changes_nothing(root: Path) -> None:
    before = snapshot(root)
    for args in (
        ("inbox", "ghost", "alice"),
        ("task", "list", "ghost"),
        ("up", "ghost"),
        ("send", "ghost", "a", "x", "--summary", "s"),
    ):
        err = cli(root, *args, ok=False).stderr
        assert "team 'ghost' does not exist" in err
    assert snapshot(root) == before


def test_unknown_member_and_non_member_recipient(demo: Path) -> None:
    before = snapshot(demo)
    err = cli(demo, "inbox", "demo", "mallory", ok=False).stderr
    assert "members: team-lead" in err
    err = cli(demo, "send", "demo", "mallory", "hello", "--summary", "hi", ok=False).stderr
    assert "'mallory' is not a member" in err and "members: team-lead" in err
    assert not (demo / "teams" / "demo" / "inboxes" / "mallory.json").exists()
    assert snapshot(demo) == before


def test_unknown_task_and_dependency_cycle(demo: Path) -> None:
    cli(demo, "task", "create", "demo", "first")
    cli(demo, "task", "create", "demo", "second", "--blocked-by", "1")
    before = snapshot(demo)
    assert "task #99 does not exist" in cli(demo, "task", "get", "demo", "99", ok=False).stderr
    assert "cycle" in cli(demo, "task", "update", "demo", "1", "--add-blocked-by", "2", ok=False).stderr
    assert (
        "does not exist"
        in cli(demo, "task", "create", "demo", "third", "--blocked-by", "42", ok=False).stderr
    )
    assert "not a task number" in cli(demo, "task", "get", "demo", "../x", ok=False).stderr
    assert snapshot(demo) == before


def test_task_commands(demo: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from ipc import TeamConfigStore; import sys; TeamConfigStore(sys.argv[1], 'demo').add_member('alice')",
            str(demo),
        ],
        check=True,
    )
    task = jcli(demo, "task", "create", "demo", "Write it", "--description", "d", "--command", "echo hi")
    assert task == {
        "id": "1",
        "subject": "Write it",
        "description": "d",
        "status": "pending",
        "blocks": [],
        "blockedBy": [],
        "metadata": {"command": "echo hi"},
    }
    assert jcli(demo, "task", "claim", "demo", "1", "alice")["success"] is True
    assert "already_claimed" in cli(demo, "task", "claim", "demo", "1", "team-lead", ok=False).stderr
    assert jcli(demo, "task", "update", "demo", "1", "--status", "completed")["status"] == "completed"
    assert [t["id"] for t in jcli(demo, "task", "list", "demo")] == ["1"]
    cli(demo, "task", "delete", "demo", "1")
    assert jcli(demo, "task", "list", "demo") == []
    owned = jcli(demo, "task", "create", "demo", "For alice", "--owner", "alice")
    assert (owned["owner"], owned["status"]) == ("alice", "pending")
    assert "already_claimed" in cli(demo, "task", "claim", "demo", owned["id"], "team-lead", ok=False).stderr
    assert "members" in cli(demo, "task", "create", "demo", "x", "--owner", "mallory", ok=False).stderr


def test_usage_errors_are_one_line(root: Path) -> None:
    err = cli(root, "send", "demo", ok=False).stderr
    assert err.startswith("agentteams: error:")


def test_invalid_toml_names_the_line(root: Path) -> None:
    bad = root / "bad.toml"
    bad.write_text('[team]\nname = "x"\n[[teammates]\nname = 1\n')
    err = cli(root, "run", str(bad), ok=False).stderr
    assert "invalid TOML" in err and "line 3" in err
    wrong = root / "wrong.toml"
    wrong.write_text('[team]\nname = "x"\n[[teammates]]\nname = 1\n')
    err = cli(root, "run", str(wrong), ok=False).stderr
    assert "wrong.toml: teammates[0].name: expected `str`, got `int`" in err, err
    assert not (root / "teams").exists()


def test_a_scenarios_mistakes_are_named_in_its_own_words_before_anything_is_made(root: Path) -> None:
    for i, (text, said) in enumerate(
        (
            (
                '[[teammates]]\nname = "w"\n[[tasks]]\nsubject = "A"\n',
                "tasks[0] has no key; every [[tasks]] needs one",
            ),
            ('[[teammates]]\nname = "w"\nmodle = "x"\n', "teammates[0] has an unknown key 'modle'"),
            (
                '[[teammates]]\nname = "w"\nagent_type = "nope"\n',
                "teammates[0].agent_type: unknown agent type 'nope'; known: general-purpose",
            ),
        )
    ):
        scenario = root / f"mistake{i}.toml"
        scenario.write_text(f'[team]\nname = "m{i}"\n{text}')
        err = cli(root, "run", str(scenario), ok=False).stderr
        assert err.startswith(f"agentteams: error: {scenario}: {said}"), err
        assert err.count("\n") == 1, err
    assert not (root / "teams").exists() and not (root / "work").exists()


def test_scenario_cycle_is_refused_before_anything_is_written(root: Path) -> None:
    cyc = root / "cycle.toml"
    cyc.write_text(
        '[team]\nname = "cyc"\n[[teammates]]\nname = "w"\n'
        '[[tasks]]\nkey = "a"\nsubject = "A"\nblocked_by = ["b"]\n'
        '[[tasks]]\nkey = "b"\nsubject = "B"\nblocked_by = ["a"]\n'
    )
    err = cli(root, "run", str(cyc), ok=False).stderr
    assert "cycle" in err and "a -> b -> a" in err
    assert not (root / "teams").exists()


def test_scenario_names_a_teammate_cannot_have_are_refused_before_anything_is_written(root: Path) -> None:
    for i, (mates, said) in enumerate(
        (
            ('name = "a"\n[[teammates]]\nname = "a"\n', "teammates[1]: the name 'a' is given twice"),
            (
                'name = "w"\ncount = 2\n[[teammates]]\nname = "w-2"\n',
                "teammates[1]: the name 'w-2' is given twice",
            ),
            ('name = "team-lead"\n', "teammates[0]: the name 'team-lead' is the lead's name"),
        )
    ):
        scenario = root / f"names{i}.toml"
        scenario.write_text(f'[team]\nname = "n{i}"\n[[teammates]]\n{mates}')
        err = cli(root, "run", str(scenario), ok=False).stderr
        assert said in err, err
    assert not (root / "teams").exists()


def test_run_the_documented_example(root: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "pipeline.toml"
    result = jcli(root, "run", str(example))
    assert result["tasks_completed"] == result["tasks_total"] > 0 and result["tasks_failed"] == []


def test_a_whole_session_and_ps_parentage(demo: Path) -> None:
    cli(demo, "up", "demo")
    try:
        spawned = jcli(demo, "spawn", "demo", "alice", "--prompt", "Work.")
        assert spawned["name"] == "alice" and spawned["color"] == "blue"
        assert "already a member" in cli(demo, "spawn", "demo", "alice", "--prompt", "Work.", ok=False).stderr
        again = jcli(demo, "spawn", "demo", "alice", "--prompt", "Work.", "--rename")
        assert again["name"] == "alice-2" and again["renamed_from"] == "alice"  # asked for, and said
        cli(demo, "task", "create", "demo", "busy", "--command", "sleep 30")
        tree = wait_for(
            lambda: (
                (t := jcli(demo, "ps", "demo")["teams"][0])
                and any(m["children"] for m in t["teammates"])
                and t
            )
        )
        sup = tree["supervisor"]["pid"]
        assert tree["forkserver"]["ppid"] == sup
        busy = next(m for m in tree["teammates"] if m["children"])
        assert busy["process"]["ppid"] == sup and busy["task"]["subject"] == "busy"
        assert any(c["ppid"] == busy["pid"] and "sleep 30" in c["cmdline"] for c in busy["children"])
        idle = next(m for m in tree["teammates"] if not m["children"])
        response = jcli(demo, "send", "demo", idle["name"], "hello there", "--summary", "greeting")
        assert response["routing"]["target"] == f"@{idle['name']}"
        wait_for(lambda: jcli(demo, "inbox", "demo", "team-lead", "--unread"))
        broadcast = jcli(demo, "send", "demo", "*", "all hands", "--summary", "all")
        assert sorted(broadcast["recipients"]) == ["alice", "alice-2"]
        assert jcli(demo, "shutdown", "demo", idle["name"])["stopped"] is True
        err = cli(demo, "shutdown", "demo", "ghost", ok=False).stderr
        assert "'ghost' is not a member of team 'demo'; members: team-lead, alice" in err, err
        assert "is already up" in cli(demo, "up", "demo", ok=False).stderr
        pids = {busy["pid"], *(c["pid"] for c in busy["children"]), sup, tree["forkserver"]["pid"]}
    finally:
        cli(demo, "down", "demo")
    assert wait_for_gone(pids) == []
    assert "not up" in cli(demo, "status", "demo", ok=False).stderr


def test_demo_end_to_end(root: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "demo", "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["tasks_completed"] == summary["tasks_total"] == 20
    assert summary["left_running"] == []
    # The offline lead drove it: it reported, shut the team down and deleted it.
    assert summary["lead"]["stopped_by"] == "done" and summary["answer"].startswith("Done: 20 of 20 tasks")
    assert not (root / "teams" / "demo").exists()
    assert summary["send_to_turn_ms"]["n"] >= 20  # reports, idle notifications, shutdowns
    assert peak_has_lead(summary)
    peak = summary["peak_process_tree"]
    pids = [m["pid"] for m in peak["teammates"]] + [peak["supervisor"]["pid"]]
    assert len(peak["teammates"]) == 4 and alive(pids) == []
    report = Path(summary["report"]).read_text()
    assert "| total | 200000 |" in report
    assert os.path.exists(summary["output"])


def peak_has_lead(summary: dict[str, Any]) -> bool:
    lead = summary["peak_process_tree"]["lead"]
    return lead is not None and alive([lead["pid"]]) == []


def test_watch_prints_a_frame(demo: Path) -> None:
    cli(demo, "task", "create", "demo", "Visible task")
    frame = cli(demo, "watch", "demo", "--once").stdout
    assert "team demo" in frame and "Visible task" in frame and "0/1 completed" in frame
    snap = jcli(demo, "watch", "demo")
    assert snap["tasks"][0]["subject"] == "Visible task"


def test_ps_finds_claude_code_teammates_under_a_claude_root(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    (claude / "teams" / "cc").mkdir(parents=True)
    config = {
        "name": "cc",
        "description": "",
        "createdAt": 1,
        "leadAgentId": "team-lead@cc",
        "leadSessionId": "s",
        "members": [
            {
                "agentId": "team-lead@cc",
                "name": "team-lead",
                "agentType": "team-lead",
                "model": "m",
                "joinedAt": 1,
                "tmuxPaneId": "",
                "cwd": "/",
                "subscriptions": [],
            },
            {
                "agentId": "alice@cc",
                "name": "alice",
                "agentType": "general-purpose",
                "model": "m",
                "joinedAt": 1,
                "tmuxPaneId": "%1",
                "cwd": "/",
                "subscriptions": [],
            },
        ],
    }
    (claude / "teams" / "cc" / "config.json").write_text(json.dumps(config))
    argv = [
        sys.executable,
        "-c",
        "import time; time.sleep(60)",
        "--agent-id",
        "alice@cc",
        "--team-name",
        "cc",
    ]
    fake = subprocess.Popen(argv, env={**os.environ, "CLAUDE_CONFIG_DIR": str(claude)})
    # The same team name under another root is another team: not listed here.
    stranger = subprocess.Popen(argv, env={**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "other")})
    try:
        found = wait_for(
            lambda: [
                p for t in jcli(claude, "ps")["claude_code"] for p in t["processes"] if p["pid"] == fake.pid
            ]
        )
        assert found[0]["agent_id"] == "alice@cc" and found[0]["member"] is True
        listed = [p["pid"] for t in jcli(claude, "ps")["claude_code"] for p in t["processes"]]
        assert fake.pid in listed and stranger.pid not in listed
        cli(claude, "team", "create", "x")  # writing takes Claude Code's own lock, and leaves none behind
        assert not (claude / "teams" / "x" / "config.json.lock").exists()
    finally:
        for proc in (fake, stranger):
            proc.kill()
            proc.wait()


def test_sigterm_to_run_brings_the_team_down(root: Path) -> None:
    scenario = root / "slow.toml"
    scenario.write_text(
        '[team]\nname = "slow"\n[[teammates]]\nname = "w"\n[[tasks]]\nkey = "a"\nsubject = "Wait"\ncommand = "sleep 60"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "run", str(scenario), "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: (root / "teams" / "slow" / "config.json").exists(), timeout=30)
    tree = wait_for(
        lambda: (
            (t := jcli(root, "ps", "slow")["teams"][0]) and any(m["children"] for m in t["teammates"]) and t
        )
    )
    pids = {
        tree["supervisor"]["pid"],
        *(m["pid"] for m in tree["teammates"]),
        *(c["pid"] for m in tree["teammates"] for c in m["children"]),
    }
    proc.send_signal(15)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "agentteams: interrupted"
    assert wait_for_gone(pids) == []


def test_a_team_whose_config_is_torn_for_good_is_deleted_with_force(root: Path) -> None:
    cli(root, "team", "create", "torn")
    config = root / "teams" / "torn" / "config.json"
    config.write_text('{"name": "torn", "memb')  # a peer killed mid-write, for good
    said = cli(root, "team", "delete", "torn", ok=False).stderr
    assert said.strip().endswith("'agentteams team delete torn --force' removes the team as it is"), said
    assert config.exists()
    cli(root, "team", "delete", "torn", "--force")
    assert not (root / "teams" / "torn").exists() and not (root / "tasks" / "torn").exists()


def test_a_command_that_creates_a_task_leaves_no_spare_file(root: Path) -> None:
    # Quick commands end with os._exit, which skipped the removal of the spare file a
    # create makes for the next: one was left in tasks/{team}/ by every `task create`.
    cli(root, "team", "create", "sp")
    cli(root, "task", "create", "sp", "first")
    cli(root, "task", "create", "sp", "second")
    assert sorted(p.name for p in (root / "tasks" / "sp").iterdir()) == [
        ".highwatermark",
        ".lock",
        "1.json",
        "2.json",
    ]
