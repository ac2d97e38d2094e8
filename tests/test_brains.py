"""Brains for long runs, with the real SDK against the local Messages API server: prompt
caching, context compaction, usage across a restart, budgets and the team's rate limiter."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentproc import transcript
from agentproc.models.compaction import SUMMARY_INTRO, SUMMARY_REQUEST
from agentproc.transcript import Transcript
from ipc import storage
from ipc.paths import TeamPaths
from ipc.schemas import IdleNotification, parse_body
from supervisor import Team
from tests.fake_anthropic import (
    FakeAnthropic,
    PromptCache,
    Reply,
    error,
    last_user_text,
    text,
    text_of,
    tool_result_ids,
    tool_uses,
)
from tests.runtime_helpers import cli, running_team, wait_for

MODEL = "anthropic:claude-test"


@pytest.fixture(autouse=True)
def _api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


def steps_script(steps: int, *, lock: threading.Lock | None = None) -> Any:
    """Each claimed task takes ``steps`` Bash calls, one per request, then completes; a
    compaction request is answered with a summary."""

    def script(request: dict[str, Any], n: int) -> Reply:
        said = last_user_text(request)
        if SUMMARY_REQUEST in said:
            return text("SUMMARY: on my task, some steps done; next: the remaining steps.")
        ids = tool_result_ids(request)
        if ids and ids[0].startswith("step-"):
            _, task_id, k = ids[0].split("-")
            if int(k) < steps:
                nxt = f"step-{task_id}-{int(k) + 1}"
                return tool_uses(
                    (nxt, "Bash", {"command": f"echo {nxt} {'x' * 300}", "description": "a step"})
                )
            return tool_uses((f"done-{task_id}", "TaskUpdate", {"taskId": task_id, "status": "completed"}))
        if ids:
            return text("Finished.")
        if "Start with task #" in said:
            task_id = said.split("Start with task #", 1)[1].split(":", 1)[0]
            return tool_uses(
                (f"step-{task_id}-1", "Bash", {"command": "echo start", "description": "a step"})
            )
        return text("Ready.")

    return script


def idle_notes(team: Team, name: str = "ada") -> list[IdleNotification]:
    bodies = [parse_body(m.text) for m in team.inbox("team-lead").history() if m.from_ == name]
    return [b for b in bodies if isinstance(b, IdleNotification)]


def reported(team: Team, task_id: str, name: str = "ada") -> bool:
    """The teammate's turn that finished ``task_id`` has ended: its idle notification says so."""
    return any(n.completed_task_id == task_id for n in idle_notes(team, name))


def completed(team: Team, *ids: str) -> bool:
    return all(team.tasks.get(i).status == "completed" for i in ids)


def breakpoints(request: dict[str, Any]) -> list[str]:
    where = [f"tool {t['name']}" for t in request.get("tools", []) if "cache_control" in t]
    system = request.get("system")
    if isinstance(system, list):
        where += ["system" for b in system if "cache_control" in b]
    for i, m in enumerate(request["messages"]):
        if isinstance(m["content"], list):
            where += [f"message {i}" for b in m["content"] if "cache_control" in b]
    return where


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_requests_carry_cache_breakpoints_and_usage_sums_survive_a_restart(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = PromptCache()
    with FakeAnthropic(steps_script(4), usage=cache) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="You run steps.", model=MODEL)
            first = team.tasks.create("First")
            team.wake("*")
            team.wait_until(lambda t: completed(t, first.id), timeout=30)
            for request in api.requests:
                marks = breakpoints(request)
                last = len(request["messages"]) - 1
                assert marks[0] == f"tool {request['tools'][-1]['name']}" and marks[1] == "system"
                assert f"message {last}" in marks and len(marks) <= 4, marks
            # Each request after the first reads the prefix the one before it wrote.
            assert all(cache_read > 0 for cache_read in _reads(api)[1:])

            # Killed once its turn has ended (the idle notification that reports the task),
            # not between the task's completion and the model's last reply, which a restart
            # would answer instead. (The prompt's turn sent an idle notification already.)
            wait_for(lambda: reported(team, first.id))
            pid = team.status().teammates[0].pid or 0
            os.kill(pid, signal.SIGKILL)
            wait_for(
                lambda: (m := team.status().teammates[0]).pid not in (None, pid) and m.state == "idle", 20
            )
            second = team.tasks.create("Second")
            team.wake("*")
            team.wait_until(lambda t: completed(t, second.id), timeout=30)
            wait_for(lambda: reported(team, second.id))

            served = cache.totals
            usage = json.loads(cli(root, "usage", "t", "--json").stdout)
            ps = json.loads(cli(root, "ps", "t", "--json").stdout)["teams"][0]["usage"]
            for report in (usage, ps):
                tokens = report["tokens"]
                assert tokens["input"] == served["input_tokens"]
                assert tokens["output"] == served["output_tokens"]
                assert tokens["cache_read"] == served["cache_read_input_tokens"] > 0
                assert tokens["cache_write"] == served["cache_creation_input_tokens"] > 0
                assert tokens["requests"] == len(api.requests)
                assert [(a["agent"], a["model"]) for a in report["agents"]] == [("ada", "claude-test")]
            assert "cache read" in cli(root, "usage", "t").stdout


def _reads(api: FakeAnthropic) -> list[int]:
    """What the server's cache would give each recorded request, replayed from scratch."""
    replay = PromptCache()
    return [replay(r)["cache_read_input_tokens"] for r in api.requests]


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_a_long_conversation_is_compacted_and_stays_valid(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A context just above the fixed prefix (tools and system prompt, some 1,950 of the fake
    # server's tokens), so that twelve steps overflow it and one summary fits.
    monkeypatch.setenv("AGENTTEAMS_CONTEXT_TOKENS", "2900")
    monkeypatch.setenv("AGENTTEAMS_COMPACT_AT", "0.8")
    cache = PromptCache()
    with FakeAnthropic(steps_script(12), usage=cache) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="You run steps.", model=MODEL)
            task = team.tasks.create("Many steps")
            team.wake("*")
            team.wait_until(lambda t: completed(t, task.id), timeout=60)

            summaries = [i for i, r in enumerate(api.requests) if SUMMARY_REQUEST in last_user_text(r)]
            assert summaries, "never compacted"
            after = api.requests[summaries[0] + 1]
            opening = text_of(after["messages"][0]["content"])
            assert opening.startswith(SUMMARY_INTRO) and "SUMMARY:" in opening
            assert PromptCache.blocks(after) and len(after["messages"]) < len(
                api.requests[summaries[0]]["messages"]
            )
            threshold = 2900 * 0.8
            used = PromptCache()(after)
            assert used["input_tokens"] + used["cache_creation_input_tokens"] < threshold
            for request in api.requests:  # every tool_result answers the tool_use just before it
                _assert_paired(request["messages"])

            lines = [json.loads(x) for x in (root / "teams/t/transcripts/ada.jsonl").read_text().splitlines()]
            compactions = [x for x in lines if x.get("type") == "compaction"]
            assert compactions and "SUMMARY:" in compactions[0]["summary"]
            steps = {b.get("id") for x in lines if x.get("role") == "assistant" for b in x["content"]}
            assert {f"step-{task.id}-{k}" for k in range(1, 13)} <= steps  # the full history stays

            # A resumed teammate starts from the compacted state.
            # Killed once its turn has ended (the idle notification that reports the task),
            # not between the task's completion and the model's last reply, which a restart
            # would answer instead. (The prompt's turn sent an idle notification already.)
            wait_for(lambda: reported(team, task.id))
            pid = team.status().teammates[0].pid or 0
            os.kill(pid, signal.SIGKILL)
            wait_for(
                lambda: (m := team.status().teammates[0]).pid not in (None, pid) and m.state == "idle", 20
            )
            before = len(api.requests)
            team.send("ada", "Still there?", summary="ping")
            wait_for(lambda: len(api.requests) > before, timeout=20)
            resumed = api.requests[before]["messages"]
            assert text_of(resumed[0]["content"]).startswith(SUMMARY_INTRO)
            _assert_paired(resumed)


def _assert_paired(messages: list[dict[str, Any]]) -> None:
    assert messages[0]["role"] == "user"
    for i, m in enumerate(messages):
        if i:
            assert m["role"] != messages[i - 1]["role"], "two messages of one role in a row"
        if m["role"] == "user" and isinstance(m["content"], list):
            ids = [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
            if ids:
                uses = [b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"]
                assert ids == uses


def test_a_resume_reads_the_transcript_back_only_to_the_last_compaction(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = TeamPaths(root, team)
    main, side = Transcript(paths, "alice"), Transcript(paths, "alice", sidechain="sub-1")
    for i in range(300):  # a long history above the compaction
        main.append("user", f"old {i}")
        main.append("assistant", [{"type": "text", "text": f"old answer {i}"}])
    main.compaction("the summary", [{"role": "user", "content": "summary of 300 turns"}], replaced=600)
    main.append("assistant", [{"type": "text", "text": "after"}])
    side.compaction("a subagent's own", [{"role": "user", "content": "not alice's"}], replaced=2)
    main.append("user", "latest")
    main.append("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}])  # unanswered
    with open(paths.transcript("alice"), "ab") as f:
        f.write(b'{"role": "user", "cont')  # torn by a kill

    read: list[bytes] = []
    real = storage.lines_from_end

    def counted(path: Path) -> Iterator[bytes]:
        for line in real(path, chunk=4096):
            read.append(line)
            yield line

    monkeypatch.setattr(transcript, "lines_from_end", counted)
    assert main.messages() == [
        {"role": "user", "content": "summary of 300 turns"},
        {"role": "assistant", "content": [{"type": "text", "text": "after"}]},
        {"role": "user", "content": "latest"},
    ]
    assert len(read) == 6  # the torn line, four entries (one a subagent's), the compaction
    assert side.messages() == [{"role": "user", "content": "not alice's"}]


def test_a_resume_after_kills_and_failed_turns_is_a_valid_conversation(root: Path, team: str) -> None:
    log = Transcript(TeamPaths(root, team), "alice")
    log.append("user", "first")
    log.append("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}])  # killed
    log.append("user", "second")  # the next incarnation's turn, which failed unanswered
    log.append("user", "third")
    log.append("assistant", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}])
    log.append("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}])  # killed here
    assert log.messages() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"},
                {"type": "text", "text": "third"},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]},
    ]


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_a_token_budget_stops_the_team_cleanly(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropic(steps_script(50), usage=PromptCache()) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            assert "already up" in cli(root, "up", "t", "--budget-tokens", "5", ok=False).stderr
            cli(root, "budget", "t", "--budget-tokens", "3000")
            team.spawn("ada", prompt="You run steps.", model=MODEL)
            task = team.tasks.create("Endless steps")
            team.wake("*")
            note = wait_for(lambda: [n for n in idle_notes(team) if n.idle_reason == "failed"], timeout=30)[0]
            assert "the team's token budget of 3,000 tokens is reached" in (note.failure_reason or "")
            released = team.tasks.get(task.id)
            assert released.status == "pending" and released.owner_name is None and not released.failed
            served = len(api.requests)
            assert team.usage().tokens.total >= 3000
            team.send("ada", "Keep going", summary="more")  # no new turn starts at the limit
            time.sleep(1.5)
            assert len(api.requests) == served
            assert team.status().teammates[0].state == "idle"
            assert len([n for n in idle_notes(team) if n.idle_reason == "failed"]) == 1
            # Raising the budget lets it go on at its next wake.
            team.set_budget(tokens=10_000_000)
            team.wake("ada")
            wait_for(lambda: len(api.requests) > served, timeout=20)


def test_bad_budgets_are_refused_in_one_line(root: Path) -> None:
    Team.create("t", root=root, cwd=str(root)).store.add_member("ada", cwd=str(root))
    for args, fragment in (
        (("--budget-tokens", "0"), "a token budget must be a positive whole number"),
        (("--budget-usd", "-1"), "a dollar budget must be a positive number"),
    ):
        result = cli(root, "up", "t", *args, ok=False)
        assert fragment in result.stderr
    assert not (root / "teams/t/budget.json").exists()
    cli(root, "budget", "t", "--budget-usd", "2.5", "--teammate", "ada")
    assert "ada: no token limit, $2.5" in cli(root, "budget", "t").stdout
    assert "has made no model calls" in cli(root, "usage", "t").stdout
    assert "does not exist" in cli(root, "usage", "nope", ok=False).stderr


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_four_teammates_share_one_rate_limiter_through_a_429_window(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window: dict[str, float] = {}
    base = steps_script(2)

    def script(request: dict[str, Any], n: int) -> Reply:
        now = time.monotonic()
        if "start" not in window and "Start with task #" in last_user_text(request):
            window["start"], window["end"] = now, now + 1.5
        if window and now < window["end"]:
            return error(429, "rate_limit_error", retry_after_ms=int((window["end"] - now) * 1000) + 20)
        reply: Reply = base(request, n)
        return reply

    with FakeAnthropic(script) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            names = [team.spawn(f"w{i}", prompt="You run steps.", model=MODEL) for i in range(4)]
            wait_for(lambda: all(len(idle_notes(team, n)) >= 1 for n in names), timeout=30)
            tasks = [team.tasks.create(f"task {i}") for i in range(8)]
            team.wake("*")
            team.wait_until(lambda t: completed(t, *[x.id for x in tasks]), timeout=60)
            limited = [(at, status) for at, status in api.arrivals if status == 429]
            assert limited, "the window was never hit"
            # After the first 429 was answered, nobody asked again inside the window: only
            # requests already in flight at that moment (one per teammate at most) arrive.
            first_answer = limited[0][0]
            inside = [at for at, _ in api.arrivals if first_answer < at < window["end"]]
            assert len(inside) <= len(names) - 1, f"{len(inside)} requests inside the window"
            assert all(n.idle_reason == "available" for name in names for n in idle_notes(team, name))
