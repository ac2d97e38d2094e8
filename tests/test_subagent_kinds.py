"""The kinds of subagent beyond the named one, driven by the real `anthropic` SDK against the
local Messages API server that simulates the prompt cache: fork workers (the parent's
conversation, tools and model; billed as a cache read of the parent's prefix; never forking
again), permissions that bubble up to the parent, and a synchronous subagent moved to the
background while it works."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from ipc.schemas import PermissionRequest
from supervisor import Team
from tests.agent_helpers import LEAD_MODEL, define, results, secret_outside, serve, strip
from tests.fake_anthropic import PromptCache, Reply, last_user_text, text, text_of, tool_uses
from tests.runtime_helpers import nothing_left_under, running_team, wait_for

# Each test starts a lead and subagents that import the SDK: several seconds on a loaded machine.
pytestmark = [pytest.mark.heavy, pytest.mark.usefixtures("fake_api_env")]


class Billed:
    """The simulated prompt cache, keeping each request's usage beside it."""

    def __init__(self) -> None:
        self.cache = PromptCache()
        self.seen: list[tuple[dict[str, Any], dict[str, int]]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, int]:
        usage = self.cache(request)
        self.seen.append((request, usage))
        return usage


def is_fork(request: dict[str, Any]) -> bool:
    return "<fork-boilerplate>" in json.dumps(request.get("messages", []))


def directive(request: dict[str, Any]) -> str:
    """A fork's own task: the text after the boilerplate (its parent's call names every fork's)."""
    said = [text_of(m["content"]) for m in request["messages"] if m["role"] == "user"]
    return next(t for t in said if "<fork-boilerplate>" in t)


def test_a_fork_shares_its_parents_prefix_reads_it_from_the_cache_and_cannot_fork_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if is_fork(request):
            if "again" in done:
                seen["again"] = done["again"]
                return text("fork: 42 files")
            return tool_uses(("again", "Agent", {"description": "deeper", "prompt": "Fork once more."}))
        if "GOAL" in turn and not done:
            return tool_uses(("f1", "Agent", {"description": "count", "prompt": "Count the files."}))
        if "f1" in done:
            seen["launched"] = json.loads(done["f1"][0])
            return text("A fork counts them.")
        if "<task-notification>" in turn:
            seen["notification"] = turn
            return text("Counted.")
        return text("?")

    billed = Billed()
    with serve(script, monkeypatch, usage=billed):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: count the files.", model=LEAD_MODEL, timeout=60, fork_subagents=True)
    assert result.stopped_by == "done", result
    assert seen["launched"]["status"] == "async_launched"
    fork_id = seen["launched"]["agentId"]
    assert "<status>completed</status>" in seen["notification"] and "fork: 42 files" in seen["notification"]
    # A fork inside a fork is refused, and says why.
    refusal, is_error = seen["again"]
    assert is_error and "cannot fork again" in refusal
    # The fork's first request is the lead's first request, then the lead's call and the
    # placeholder answer with the directive: same system prompt, tools and model...
    (first, first_usage), *rest = billed.seen
    fork_request, fork_usage = next((r, u) for r, u in rest if is_fork(r))
    assert strip(fork_request["system"]) == strip(first["system"])
    assert strip(fork_request["tools"]) == strip(first["tools"])
    assert fork_request["model"] == first["model"]
    assert strip(fork_request["messages"][:1]) == strip(first["messages"])
    call = fork_request["messages"][1]
    assert call["role"] == "assistant" and call["content"][0]["id"] == "f1"
    # ... so it reads from the cache all that the lead's first request wrote there.
    assert first_usage["cache_creation_input_tokens"] > 0
    assert fork_usage["cache_read_input_tokens"] == first_usage["cache_creation_input_tokens"]
    record = json.loads(team.paths.subagent_result(fork_id).read_text())
    assert record["fork"] is True and record["status"] == "completed"
    nothing_left_under(root)


def test_a_forks_permission_requests_bubble_up_to_the_lead_approved_it_goes_on_denied_it_stops_cleanly(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = secret_outside(tmp_path)
    seen: dict[str, Any] = {"asked": []}

    def copy(name: str) -> str:
        return f"cat {outside}/secret.txt > {root}/{name}.txt"

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if is_fork(request):
            which = "yes" if "COPY-YES" in directive(request) else "no"
            if f"b-{which}" in done:
                seen[f"fork-{which}"] = done[f"b-{which}"]
                return text(f"fork {which} ends")
            return tool_uses((f"b-{which}", "Bash", {"command": copy(which)}))
        if "GOAL" in turn and not done:
            return tool_uses(
                ("f1", "Agent", {"description": "copy yes", "prompt": "COPY-YES"}),
                ("f2", "Agent", {"description": "copy no", "prompt": "COPY-NO"}),
            )
        if "[permission request]" in turn:
            found = re.search(r"Allow with SendMessage (\{.*?\})", turn)
            assert found is not None
            answer = json.loads(found[1])
            seen["asked"].append(turn)
            if "no.txt" in turn:
                answer.update(approve=False, content="not that one")
            return tool_uses(("p", "SendMessage", answer))
        return text("Waiting for the forks.")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: copy the file in.", model=LEAD_MODEL, timeout=60, fork_subagents=True)
    assert result.stopped_by == "done", result
    assert len(seen["asked"]) == 2 and all(str(outside) in t and "sub-" in t for t in seen["asked"])
    assert (root / "yes.txt").read_text() == "from outside\n"
    ran, is_error = seen["fork-yes"]
    assert not is_error
    refused, is_error = seen["fork-no"]
    assert is_error and "not that one" in refused and not (root / "no.txt").exists()
    records = [json.loads(p.read_text()) for p in (team.paths.team_dir / "subagents").glob("*.json")]
    assert sorted((r["status"], r["asking"], r["answer"]) for r in records) == [("completed", None, None)] * 2
    nothing_left_under(root)


def sync_helper(prompt: str, **extra: Any) -> dict[str, Any]:
    """Agent tool input for an offline synchronous subagent (no SDK to import: it starts fast)."""
    return {"description": "helper", "prompt": prompt, "model": "offline", **extra}


def asker_and_secret(root: Path, tmp_path: Path) -> Path:
    """A file outside the project, and an agent type ``asker`` whose permission requests
    bubble up to its parent: a subagent of that type must ask to read it."""
    define(root, "asker", "permissionMode: bubble", "You copy files.")
    return secret_outside(tmp_path)


def running_subagent(team: Team) -> str:
    folder = team.paths.team_dir / "subagents"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if json.loads(path.read_text())["status"] == "running":
            return path.stem
    return ""


def test_a_synchronous_subagent_moved_to_the_background_by_a_person_or_a_timeout_reports_once(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {"notifications": []}
    gate = root / "go"

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if "GOAL" in turn and not done:  # runs until the test lets it end
            return tool_uses(
                ("s1", "Agent", sync_helper(f"`while [ ! -e {gate} ]; do sleep 0.1; done; echo by-hand`"))
            )
        if "s1" in done:
            seen["s1"] = json.loads(done["s1"][0])
            gate.touch()
            return tool_uses(("s2", "Agent", sync_helper("`sleep 6; echo by-timeout`")))
        if "s2" in done:
            seen["s2"] = json.loads(done["s2"][0])
            return text("Both run on.")
        if "<task-notification>" in turn:
            seen["notifications"].append(turn)
            return text("Noted." if len(seen["notifications"]) < 2 else "Both reported.")
        return text("?")

    def person(team: Team) -> None:
        sub = wait_for(lambda: running_subagent(team), timeout=30)
        moved = Team.open("t", root=root).background(sub)
        seen["moved"] = (sub, moved.status, moved.background)

    # The second helper outlasts the lead's auto-background timeout; the first, a person moves sooner.
    monkeypatch.setenv("AGENTTEAMS_AUTO_BACKGROUND", "4")
    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        helper = threading.Thread(target=person, args=(team,))
        helper.start()
        result = team.lead("GOAL: two helpers.", model=LEAD_MODEL, timeout=60)
        helper.join()
    assert result.stopped_by == "done", result
    assert seen["moved"][1:] == ("running", True)
    assert seen["s1"]["status"] == "async_launched" and seen["s1"]["agentId"] == seen["moved"][0]
    assert "Moved to the background" in seen["s1"]["message"]
    notes = seen["notifications"]
    assert seen["s2"]["status"] == "async_launched" and seen["s2"]["agentId"] != seen["moved"][0]
    assert (
        len(notes) == 2
        and sum("by-hand" in n for n in notes) == 1
        and sum("by-timeout" in n for n in notes) == 1
    )
    nothing_left_under(root)


def test_a_bubbling_synchronous_subagent_goes_to_the_background_so_that_the_lead_can_answer_it(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = asker_and_secret(root, tmp_path)
    seen: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if "GOAL" in turn and not done:
            command = f"`cat {outside}/secret.txt > {root}/copied.txt`"
            return tool_uses(("s1", "Agent", sync_helper(command, subagent_type="asker")))
        if "s1" in done:
            seen["s1"] = json.loads(done["s1"][0])
            return text("It asks.")
        if "[permission request]" in turn:
            found = re.search(r"Allow with SendMessage (\{.*?\})", turn)
            assert found is not None
            seen["asked"] = turn
            return tool_uses(("p", "SendMessage", json.loads(found[1])))
        if "<task-notification>" in turn:
            seen["notification"] = turn
            return text("Copied.")
        return text("ok")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: copy it in.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    assert seen["s1"]["status"] == "async_launched" and "Moved to the background" in seen["s1"]["message"]
    assert seen["s1"]["agentId"] in seen["asked"] and str(outside) in seen["asked"]
    assert "<status>completed</status>" in seen["notification"]
    assert (root / "copied.txt").read_text() == "from outside\n"
    nothing_left_under(root)


def test_a_teammates_bubbling_subagent_asks_through_it_and_the_lead_answers_as_for_the_teammate(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = asker_and_secret(root, tmp_path)
    seen: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if "Start with task #1" in turn and not done:
            command = f"`cat {outside}/secret.txt > {root}/copied.txt`"
            return tool_uses(("s1", "Agent", sync_helper(command, subagent_type="asker")))
        if "s1" in done:
            seen["s1"] = done["s1"]
            return tool_uses(("t1", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        return text("ok")

    # Served before the supervisor starts: its agents inherit where the API is.
    with serve(script, monkeypatch), running_team(root) as team:
        team.spawn("ada", prompt="You delegate.", model=LEAD_MODEL)
        team.tasks.create("Copy it in", "x")
        asked = wait_for(lambda: team.pending_requests(), timeout=30)[0]
        assert isinstance(asked, PermissionRequest) and asked.agent_id == "ada"
        assert "for its subagent sub-" in asked.description
        team.approve(asked.request_id)
        team.wait_until(lambda t: t.tasks.get("1").status == "completed", timeout=30)
    answer, is_error = seen["s1"]
    assert not is_error and "agentId: sub-" in answer
    assert (root / "copied.txt").read_text() == "from outside\n"
