"""Check-ins: the parent's own model moves a synchronous subagent to the background while it
works. Its pieces alone (quick), then a lead on the local Messages API server that
simulates the prompt cache (heavy: the lead imports the SDK): the model calls
TaskBackground at a check-in, or declines it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentproc import checkins
from agentproc.channel import PollChannel
from agentproc.context import AgentContext
from agentproc.permissions import NoAskPolicy
from agentproc.tools import ToolBox
from agentproc.tools.agent import TASK_BACKGROUND
from agentproc.transcript import Transcript
from ipc import agents, subagents
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult
from ipc.usage import ledger_path, read_ledger
from supervisor import Team
from tests.agent_helpers import LEAD_MODEL, launch_spec, results, serve, strip
from tests.fake_anthropic import PromptCache, Reply, last_user_text, text, text_of, tool_uses
from tests.runtime_helpers import nothing_left_under, running_team, wait_for


def check(**fields: Any) -> checkins.CheckIn:
    given: dict[str, Any] = {
        "subagent": "sub-1",
        "description": "helper",
        "prompt": "`make`",
        "seconds": 31,
        "progress": "",
        "number": 1,
        **fields,
    }
    return checkins.CheckIn(**given)


def test_the_interval_is_the_definitions_else_the_environments_else_thirty_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(checkins.ENV, raising=False)
    assert checkins.interval(None) == 30.0
    monkeypatch.setenv(checkins.ENV, "2.5")
    assert checkins.interval(None) == 2.5 and checkins.interval(7) == 7
    monkeypatch.setenv(checkins.ENV, "0")
    assert checkins.interval(None) is None and checkins.interval(0.0) is None
    monkeypatch.setenv(checkins.ENV, "soon")
    assert checkins.interval(None) == 30.0  # logged, and the default


def test_an_agent_definition_sets_its_own_check_in_and_a_wrong_value_is_refused() -> None:
    assert agents.parse_definition("---\nname: a\nsubagentCheckIn: 5\n---\nx").subagent_check_in == 5.0
    assert agents.parse_definition("---\nname: a\n---\nx").subagent_check_in is None
    for wrong in ("-1", "soon", "true"):
        with pytest.raises(ValueError, match="'subagentCheckIn' must be a number of seconds"):
            agents.parse_definition(f"---\nname: a\nsubagentCheckIn: {wrong}\n---\nx")


def test_the_side_request_answers_every_call_of_the_waiting_message_then_makes_the_offer() -> None:
    calls = [
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {}},
        {"type": "tool_use", "id": "s1", "name": "Agent", "input": {}},
        {"type": "tool_use", "id": "b1", "name": "Bash", "input": {}},
    ]
    before: list[dict[str, Any]] = [
        {"role": "user", "content": "GOAL"},
        {"role": "assistant", "content": calls},
    ]
    ran = [{"type": "tool_result", "tool_use_id": "r1", "content": "file text"}]
    side = checkins.side_messages(before, ran, check(progress="(calling Bash {})"))
    assert side[:2] == before  # the conversation itself is not touched
    last = side[-1]["content"]
    assert [b.get("tool_use_id") for b in last[:3]] == ["r1", "s1", "b1"]
    assert [b["content"] for b in last[:3]] == ["file text", checkins.PENDING, checkins.NOT_RUN]
    offer = last[3]["text"]
    assert "sub-1" in offer and "31 s" in offer and '"task_id": "sub-1"' in offer and "Bash" in offer


def test_only_a_task_background_call_for_that_subagent_moves_it() -> None:
    def use(name: str, **args: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "x", "name": name, "input": args}]

    assert checkins.chose_background(use("TaskBackground", task_id="sub-1"), "sub-1")
    assert not checkins.chose_background(use("TaskBackground", task_id="sub-2"), "sub-1")
    assert not checkins.chose_background(use("TaskStop", task_id="sub-1"), "sub-1")
    assert not checkins.chose_background([{"type": "text", "text": "TaskBackground sub-1"}], "sub-1")


def test_the_offline_rule_moves_a_subagent_whose_description_or_prompt_says_background() -> None:
    assert checkins.offline_answer("alice", check(description="slow build, background ok"))
    assert checkins.offline_answer("alice", check(prompt="`make` (may run in the Background)"))
    assert not checkins.offline_answer("alice", check(description="backgrounds", prompt="`make`"))


def test_its_progress_is_its_latest_text_else_its_tool_calls_from_its_sidechain(tmp_path: Path) -> None:
    paths = TeamPaths(tmp_path, "t")
    paths.team_dir.mkdir(parents=True)
    assert checkins.progress(paths, "alice", "sub-1") == ""  # no transcript yet
    Transcript(paths, "alice", sidechain="sub-1").append("assistant", [{"type": "text", "text": "Reading."}])
    call = {"type": "tool_use", "id": "x", "name": "Bash", "input": {"command": "make " + "x" * 900}}
    Transcript(paths, "alice", sidechain="sub-1").append("assistant", [call])
    Transcript(paths, "alice", sidechain="sub-2").append("assistant", [{"type": "text", "text": "other"}])
    Transcript(paths, "alice").append("assistant", [{"type": "text", "text": "the parent's own"}])
    shown = checkins.progress(paths, "alice", "sub-1")
    assert shown.startswith('(calling Bash {"command": "make xxx') and len(shown) < 400


def test_task_background_in_a_turn_only_confirms_a_running_subagent_of_its_own(tmp_path: Path) -> None:
    paths = TeamPaths(tmp_path, "t")
    paths.team_dir.mkdir(parents=True)
    ctx = AgentContext(spec=launch_spec(tmp_path, name="alice", wake="poll"), channel=PollChannel())
    tools = ToolBox(ctx, [TASK_BACKGROUND], NoAskPolicy())
    subagents.write(paths, SubagentResult(id="sub-1", parent="alice"))
    subagents.write(paths, SubagentResult(id="sub-2", parent="bob"))
    subagents.write(paths, SubagentResult(id="sub-3", parent="alice", status="completed"))
    moved = tools.call("TaskBackground", {"task_id": "sub-1"})
    assert not moved.is_error and "sub-1" in ctx.background
    assert subagents.read(paths, "sub-1").moved_by == "its parent's model (TaskBackground)"
    for sub, why in (
        ("sub-2", "not a subagent of alice"),
        ("sub-3", "not running"),
        ("sub-9", "no subagent"),
    ):
        refused = tools.call("TaskBackground", {"task_id": sub})
        assert refused.is_error and why in refused.content


def helper(root: Path) -> dict[str, Any]:
    """An offline synchronous subagent that records each run and works until the test lets it end."""
    command = f"echo run >> {root}/runs; while [ ! -e {root}/gate ]; do sleep 0.1; done; echo finished"
    return {"description": "helper", "prompt": f"`{command}`", "model": "offline"}


def lead(root: Path, monkeypatch: pytest.MonkeyPatch, script: Any) -> tuple[Team, Any, list[Any]]:
    seen: list[tuple[dict[str, Any], dict[str, int]]] = []
    cache = PromptCache()

    def billed(request: dict[str, Any]) -> dict[str, int]:
        usage = cache(request)
        seen.append((request, usage))
        return usage

    monkeypatch.setenv(checkins.ENV, "1")
    with serve(script, monkeypatch, usage=billed) as api:
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: one helper.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    return team, api, seen


@pytest.mark.heavy
@pytest.mark.usefixtures("fake_api_env")
def test_the_parents_model_moves_its_subagent_to_the_background_at_a_check_in(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {"notifications": [], "subagent": 0, "offers": []}
    work = f"echo run >> {root}/runs; while [ ! -e {root}/gate ]; do sleep 0.1; done; echo finished"

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if "You are a subagent" in text_of(request["system"]):  # a model of its own, on this server
            seen["subagent"] += 1
            return text(done["w"][0]) if "w" in done else tool_uses(("w", "Bash", {"command": work}))
        if "[check-in" in turn:
            seen["offers"].append(turn)
            if "(calling Bash" not in turn:  # its progress shows it at work: then, not before
                return text("wait")
            sub = turn.split("subagent ", 1)[1].split()[0]
            return tool_uses(("bg", "TaskBackground", {"task_id": sub}))
        if "GOAL" in turn and not done:
            return tool_uses(("s1", "Agent", {"description": "helper", "prompt": "Run the work."}))
        if "s1" in done:
            seen["s1"] = json.loads(done["s1"][0])
            (root / "gate").touch()  # only now may it end: it ran on in the background
            return text("It runs on.")
        if "<task-notification>" in turn:
            seen["notifications"].append(turn)
            return text("Reported.")
        return text("?")

    team, api, billed = lead(root, monkeypatch, script)
    launched = seen["s1"]
    assert launched["status"] == "async_launched" and "Moved to the background" in launched["message"]
    *declined, offer = seen["offers"]
    assert '"task_id": "' + launched["agentId"] + '"' in offer
    assert all("(calling Bash" not in d for d in declined)  # it had not got that far yet
    # Its result came once, and it ran once: one request stream (its call, then its answer),
    # one run of its command, one record.
    (note,) = seen["notifications"]
    assert "<status>completed</status>" in note and "finished" in note and launched["agentId"] in note
    assert seen["subagent"] == 2 and (root / "runs").read_text() == "run\n"
    assert len(list((team.paths.team_dir / "subagents").glob("*.json"))) == 1
    record = json.loads(team.paths.subagent_result(launched["agentId"]).read_text())
    number = len(seen["offers"])
    assert record["moved_by"] == f"its parent's model at check-in {number}" and record["check_ins"] == number
    # The check-in is the lead's first request, its Agent call and the offer: same system
    # and tools (TaskBackground among them), so it reads from the cache all the first wrote.
    mine = [(r, u) for r, u in billed if "You are team-lead" in text_of(r["system"])]
    (first, first_usage), (side, side_usage) = mine[0], mine[1]
    assert "[check-in" in json.dumps(side["messages"][-1])
    assert strip(side["system"]) == strip(first["system"]) and strip(side["tools"]) == strip(first["tools"])
    assert "TaskBackground" in {t["name"] for t in first["tools"]}
    assert strip(side["messages"][:-2]) == strip(first["messages"])
    assert side["messages"][-2]["content"][0]["id"] == "s1"
    assert side_usage["cache_read_input_tokens"] == sum(
        first_usage[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    # Not a turn of the conversation; its usage is the lead's like any request's.
    assert "[check-in" not in team.paths.transcript("team-lead").read_text()
    (tokens,) = read_ledger(ledger_path(team.paths, "team-lead")).values()
    assert tokens.requests == len(mine)
    nothing_left_under(root)


@pytest.mark.heavy
@pytest.mark.usefixtures("fake_api_env")
def test_a_declined_check_in_keeps_the_agent_call_waiting_for_the_result(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {"offers": 0}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if "[check-in" in turn:
            seen["offers"] += 1
            (root / "gate").touch()
            return text("wait")
        if "GOAL" in turn and not done:
            return tool_uses(("s1", "Agent", helper(root)))
        if "s1" in done:
            seen["s1"] = done["s1"][0]
            return text("Done.")
        if "<task-notification>" in turn:
            seen["notification"] = turn
        return text("?")

    team, _, _ = lead(root, monkeypatch, script)
    assert seen["offers"] >= 1
    assert seen["s1"].startswith("finished") and "agentId: sub-" in seen["s1"]
    (path,) = (team.paths.team_dir / "subagents").glob("*.json")
    record = json.loads(path.read_text())
    assert record["moved_by"] == "" and record["check_ins"] == seen["offers"] and not record["background"]
    assert "notification" not in seen and (root / "runs").read_text() == "run\n"
    nothing_left_under(root)


def test_an_offline_teammates_subagent_moved_to_the_background_reports_its_answer_to_the_lead(
    root: Path,
) -> None:
    gate = root / "gate"
    with running_team(root) as team:
        team.spawn("alice", prompt="")
        prompt = f"Run `while [ ! -e {gate} ]; do sleep 0.1; done; echo answer-42`"
        task = team.tasks.create("slow", metadata={"subagent": prompt}, owner="alice")
        helper = wait_for(lambda: subagents.running_of(team.paths, "alice", set()))[0]
        team.background(helper)  # its parent's Agent call returns; the task is not done yet
        wait_for(lambda: team.tasks.get(task.id).meta.get("backgroundAgent") == helper, timeout=30)
        # It was completed at once ("its answer comes later"): a task blocked by it ran
        # before the subagent had done the work.
        assert team.tasks.get(task.id).status == "in_progress"
        assert "answer-42" not in json.dumps([m.text for m in team.inbox("team-lead").read()])
        gate.touch()
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        said = wait_for(lambda: [m.text for m in team.inbox("team-lead").read() if "answer-42" in m.text])
        assert said[0] == f"Completed task #{task.id}: slow\nanswer-42", said
