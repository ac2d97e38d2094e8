"""Agents as Claude Code's behave with a user's setup: agent definitions' tool lists (``*``,
``Tool(specifier)``), permission rules from the settings files and from approvals, and
dangerous commands that ask."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentproc.channel import PollChannel
from agentproc.permissions import ModePolicy, apply_updates, suggestions
from agentproc.runner import AgentRunner
from agentproc.tools import ToolBox
from ipc import agents, claude_code
from ipc.launch import SupervisorOptions
from ipc.options import SubagentOptions
from ipc.permission_rules import Call, Rule, matches
from ipc.schemas import IdleNotification, Member, PermissionRequest, TeamConfig, parse_body
from supervisor import Team
from supervisor.daemon.specs import TeamContext, subagent_spec
from tests.agent_helpers import LEAD_MODEL, define, launch_spec, serve
from tests.fake_anthropic import Reply, last_user_text, text, text_of, tool_result_ids, tool_uses
from tests.runtime_helpers import cli, running_team, wait_for

pytestmark = pytest.mark.usefixtures("own_home")

ALL_WORK = {
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "ExitPlanMode",
    "Agent",
    "TaskOutput",
    "TaskStop",
}


def runner(cwd: Path, agent_type: str = "general-purpose", mode: str = "") -> AgentRunner:
    spec = launch_spec(cwd, agent_type=agent_type, permission_mode=mode, wake="poll")
    return AgentRunner(spec, PollChannel(), policy=ModePolicy())


def box(cwd: Path, agent_type: str = "general-purpose", mode: str = "") -> ToolBox:
    return runner(cwd, agent_type, mode).tools


# ---------------------------------------------------------------- 1. tools: "*" and Tool(specifier)


@pytest.mark.parametrize("tools", ['"*"', "'*'", "['*']", "\n  - '*'"])
def test_a_star_gives_every_tool(tmp_path: Path, tools: str) -> None:
    define(tmp_path, "any", f"tools: {tools}")
    assert set(box(tmp_path, "any").names()) >= ALL_WORK | {"SendMessage", "TaskUpdate"}


def test_a_tool_named_by_a_rule_is_offered_for_what_the_rule_covers_only(tmp_path: Path) -> None:
    define(tmp_path, "gitter", "tools: Bash(git:*), Read")
    tools = box(tmp_path, "gitter")
    assert {"Bash", "Read"} <= set(tools.names()) and "Write" not in tools.names()
    ran = tools.call("Bash", {"command": "git --version"})
    assert not ran.is_error and "git version" in ran.content
    refused = tools.call("Bash", {"command": "git --version && touch made"})
    assert refused.is_error and "only as Bash(git:*)" in refused.content
    assert not (tmp_path / "made").exists()


def test_disallowed_rules_deny_the_calls_they_cover(tmp_path: Path) -> None:
    define(tmp_path, "careful", "disallowedTools: Bash(rm:*), Write")
    tools = box(tmp_path, "careful")
    (tmp_path / "keep").write_text("x")
    assert "Write" not in tools.names() and "Bash" in tools.names()
    refused = tools.call("Bash", {"command": "ls && rm keep"})
    assert refused.is_error and "Bash(rm:*) denies" in refused.content and (tmp_path / "keep").exists()
    assert not tools.call("Bash", {"command": "ls"}).is_error


def test_a_bad_rule_in_a_definition_is_refused_not_widened(tmp_path: Path) -> None:
    define(tmp_path, "odd", "tools: Bash(git:*, Read")
    assert "odd" not in agents.load_definitions(tmp_path)


def test_rule_matching() -> None:
    cwd = Path("/w")
    git = Rule.parse("Bash(git diff:*)")
    assert matches(git, Call("Bash", command="git diff HEAD"), cwd, every=True)
    assert matches(git, Call("Bash", command="git  diff"), cwd, every=True)
    assert not matches(git, Call("Bash", command="git diffx"), cwd, every=True)
    assert not matches(git, Call("Bash", command="git diff; rm -rf x"), cwd, every=True)
    assert matches(Rule.parse("Bash(rm:*)"), Call("Bash", command="ls | rm x"), cwd, every=False)
    assert matches(Rule.parse("Bash(npm run *)"), Call("Bash", command="npm run build"), cwd, every=True)
    src = Rule.parse("Edit(src/**)")
    assert matches(src, Call("Write", paths=("/w/src/a/b.py",)), cwd, every=True)
    assert not matches(src, Call("Write", paths=("/w/docs/a.md",)), cwd, every=True)
    assert matches(Rule.parse("Read(//etc/*)"), Call("Grep", paths=("/etc/hosts",)), cwd, every=True)
    assert matches(Rule.parse("Agent(Explore)"), Call("Agent", names="Explore"), cwd, every=True)
    assert Rule.parse("Task(Plan)") == Rule("Agent", "Plan")


# ---------------------------------------------------------------- 4. permission rules that stick


def settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_settings_rules_are_merged_from_the_three_files(tmp_path: Path) -> None:
    home = Path.home()
    settings(home / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(touch denied:*)"]}})
    settings(tmp_path / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch outside:*)"]}})
    settings(
        tmp_path / ".claude" / "settings.local.json",
        {"permissions": {"ask": ["Bash(touch asked:*)"], "defaultMode": "default", "allow": ["Write"]}},
    )
    ctx_box = box(tmp_path)
    policy, ctx = ctx_box.policy, ctx_box.ctx
    bash = ctx_box.tools["Bash"]
    assert ctx.permission_mode == "default"
    assert policy.decide(ctx, bash, {"command": "touch denied"}).action == "deny"
    assert policy.decide(ctx, bash, {"command": "touch asked"}).action == "ask"
    assert policy.decide(ctx, bash, {"command": "touch outside"}).action == "allow"  # the allow rule
    assert policy.decide(ctx, bash, {"command": "touch other"}).action == "ask"  # default mode
    assert policy.decide(ctx, ctx_box.tools["Write"], {"file_path": "x", "content": ""}).action == "allow"
    ctx.permission_mode = "bypassPermissions"
    assert policy.decide(ctx, bash, {"command": "touch denied"}).action == "deny"  # deny wins


def test_dangerous_commands_ask_in_accept_edits(tmp_path: Path) -> None:
    tools = box(tmp_path)
    ask = tools.policy.decide
    bash = tools.tools["Bash"]
    for command in ("sudo true", "git push origin main", "curl -s example.com | sh", "rm -rf build"):
        decision = ask(tools.ctx, bash, {"command": command})
        assert decision.action == "ask", command
    assert ask(tools.ctx, bash, {"command": "ls -la && echo ok > out.txt"}).action == "allow"


def test_approval_updates_hold_for_the_rest_of_the_session(tmp_path: Path) -> None:
    tools = box(tmp_path)
    ctx, bash = tools.ctx, tools.tools["Bash"]
    decide = tools.policy.decide
    assert decide(ctx, bash, {"command": "git push origin main"}).action == "ask"
    outside = str(tmp_path.parent / "elsewhere" / "f.txt")
    assert decide(ctx, tools.tools["Read"], {"file_path": outside}).action == "ask"
    apply_updates(
        ctx,
        [
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "git push:*"}],
                "behavior": "allow",
            },
            {"type": "addDirectories", "directories": [str(tmp_path.parent / "elsewhere")]},
        ],
    )
    assert decide(ctx, bash, {"command": "git push origin main"}).action == "allow"
    assert decide(ctx, tools.tools["Read"], {"file_path": outside}).action == "allow"
    apply_updates(ctx, [{"type": "setMode", "mode": "dontAsk"}])
    assert ctx.permission_mode == "dontAsk"
    assert decide(ctx, bash, {"command": "sudo true"}).action == "deny"


def test_updates_bound_for_a_settings_file_are_written_into_it(tmp_path: Path) -> None:
    """Claude Code's "don't ask again for this project": the rule lands in
    .claude/settings.local.json, with what was there kept, and every later agent has it."""
    local = tmp_path / ".claude" / "settings.local.json"
    settings(local, {"env": {"KEEP": "1"}, "permissions": {"allow": ["Read"]}})
    tools = box(tmp_path)
    asked = tools.policy.decide(tools.ctx, tools.tools["Bash"], {"command": "git push origin main"})
    suggested = suggestions(tools.ctx, tools.tools["Bash"], {"command": "git push origin main"}, asked)
    assert suggested == [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "git push:*"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ]
    apply_updates(tools.ctx, suggested)
    assert json.loads(local.read_text()) == {
        "env": {"KEEP": "1"},
        "permissions": {"allow": ["Read", "Bash(git push:*)"]},
    }
    later = box(tmp_path)
    assert (
        later.policy.decide(later.ctx, later.tools["Bash"], {"command": "git push origin dev"}).action
        == "allow"
    )


def test_an_approval_always_stops_the_same_question_end_to_end(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lead approves a read outside the cwd with ``always``: the teammate applies the
    request's suggestions and reads a second file there without asking again."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("alpha")
    (outside / "b.txt").write_text("beta")

    def script(request: dict[str, Any], n: int) -> Reply:
        ids = tool_result_ids(request)
        if ids == ["r1"]:
            return tool_uses(("r2", "Read", {"file_path": str(outside / "b.txt")}))
        if ids == ["r2"]:
            return tool_uses(("done", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids:
            return text("Finished.")
        if "Start with task #1" in last_user_text(request):
            return tool_uses(("r1", "Read", {"file_path": str(outside / "a.txt")}))
        return text("Ready.")

    with serve(script, monkeypatch) as api, running_team(root) as team:
        team.spawn("ada", prompt="hello", model=LEAD_MODEL)
        task = team.tasks.create("Read both files")
        team.wake("*")
        asked = wait_for(lambda: team.pending_requests(), timeout=30)
        assert isinstance(asked[0], PermissionRequest)
        assert asked[0].permission_suggestions[0]["type"] == "addDirectories"
        team.approve(asked[0].request_id, always=True)
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        second = next(r for r in api.requests if tool_result_ids(r) == ["r2"])
        assert "beta" in json.dumps(second["messages"][-1]["content"])
        requests = [m for m in team.inbox("team-lead").history() if "permission_request" in m.text]
        assert len(requests) == 1


# ---------------------------------------------------------------- 2. no cap on tool rounds; the model's output limit


def rounds_script(rounds: int) -> Any:
    """A claimed task takes ``rounds`` Bash calls, one per request, then completes."""

    def script(request: dict[str, Any], n: int) -> Reply:
        ids = tool_result_ids(request)
        if ids and ids[0].startswith("step-"):
            k = int(ids[0].split("-")[1])
            if k < rounds:
                return tool_uses((f"step-{k + 1}", "Bash", {"command": f"echo {k + 1}"}))
            return tool_uses(("done", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids:
            return text("Finished.")
        if "Start with task #1" in last_user_text(request):
            return tool_uses(("step-1", "Bash", {"command": "echo 1"}))
        return text("Ready.")

    return script


def test_a_turn_is_not_capped_and_asks_for_the_models_output_limit(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTTEAMS_MAX_TOKENS", raising=False)
    with serve(rounds_script(60), monkeypatch) as api, running_team(root) as team:
        team.spawn("ada", prompt="hello", model="anthropic:claude-sonnet-4-5")
        task = team.tasks.create("Sixty steps")
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=60)
        assert sum(1 for r in api.requests if tool_result_ids(r)[:1] == ["step-60"]) == 1
        assert {r["max_tokens"] for r in api.requests} == {64_000}
        assert all(r.get("stream") is True for r in api.requests)  # a long output outlasts a timeout


def test_a_definitions_max_turns_is_the_cap(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    define(root, "brief", "maxTurns: 3")
    with serve(rounds_script(10), monkeypatch) as api, running_team(root) as team:
        team.spawn("ada", prompt="hello", model=LEAD_MODEL, agent_type="brief")
        task = team.tasks.create("Ten steps")
        team.wake("*")
        notes = wait_for(
            lambda: [
                b
                for m in team.inbox("team-lead").history()
                if isinstance(b := parse_body(m.text), IdleNotification) and b.idle_reason == "failed"
            ],
            timeout=30,
        )
        assert "maxTurns (3)" in str(notes[0].failure_reason)
        assert {r["max_tokens"] for r in api.requests} == {32_000}  # a model not in the table
        assert team.tasks.get(task.id).status != "completed"


# ---------------------------------------------------------------- 5. modes kept


def permission_requests(team: Any) -> list[Any]:
    return [m for m in team.inbox("team-lead").history() if '"permission_request"' in m.text]


def test_a_mode_set_on_a_running_teammate_holds_now_and_after_a_restart(root: Path, tmp_path: Path) -> None:
    """Outside the cwd, acceptEdits asks; once set to bypassPermissions the teammate runs it
    unasked, and still does after ``down`` and ``up`` (the mode is kept in the config)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    with running_team(root) as team:
        team.spawn("ada")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=20)
        team.set_mode("ada", "bypassPermissions")
        member = team.config().member("ada")
        assert member is not None and member.permission_mode == "bypassPermissions"
        first = team.tasks.create("Write outside", metadata={"command": f"echo 1 > {outside}/one"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(first.id).status == "completed", timeout=30)
        team.down(grace=2)
        team.up()
        second = team.tasks.create("Again", metadata={"command": f"echo 2 > {outside}/two"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(second.id).status == "completed", timeout=30)
        assert (outside / "two").read_text() == "2\n" and not permission_requests(team)


def test_a_mode_set_from_the_command_line_is_kept_by_up(root: Path, tmp_path: Path) -> None:
    with running_team(root) as team:
        team.spawn("ada", permission_mode="default")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=20)
        assert "ada is now in dontAsk mode" in cli(root, "mode", "t", "ada", "dontAsk").stdout
        assert "bypassPermissions" in cli(root, "mode", "t", "ada", "nope", ok=False).stderr
        team.down(grace=2)
        team.up()
        task = team.tasks.create("Read outside", metadata={"command": f"ls {tmp_path}"})
        team.wake("*")
        # dontAsk denies what would ask, so the task fails at once instead of asking.
        wait_for(lambda: "dontAsk" in str(team.tasks.get(task.id).metadata), timeout=30)
        assert not permission_requests(team)


def test_teammates_a_lead_spawns_inherit_its_mode(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    team = Team.create("t", root=root, cwd=str(root))
    goal = f"Teammates: 1\n1. Write outside: `echo x > {outside}/f`\n"
    result = team.lead(goal, permission_mode="bypassPermissions", timeout=60)
    assert result.stopped_by == "done", result
    assert (outside / "f").read_text() == "x\n"
    assert not permission_requests(team)  # the worker ran it in the lead's bypassPermissions


def test_a_subagents_own_definition_mode_wins_over_its_parents(tmp_path: Path) -> None:
    define(tmp_path, "planner", "permissionMode: plan")
    context = TeamContext("t", tmp_path, "s", SupervisorOptions(), 1)
    config = TeamConfig(
        name="t", members=[Member(agent_id="team-lead@t", name="team-lead", cwd=str(tmp_path))]
    )

    def mode(agent_type: str, forced: str = "") -> str:
        options = SubagentOptions(
            parent="team-lead",
            prompt="p",
            agent_type=agent_type,
            model="offline",
            permission_mode=forced,
            parent_permission_mode="acceptEdits",
        )
        return subagent_spec(context, config, options, None).permission_mode

    assert mode("planner") == "plan"  # its definition's, not the parent's acceptEdits
    assert mode("general-purpose") == "acceptEdits"  # no mode of its own: the parent's
    assert mode("planner", forced="bypassPermissions") == "bypassPermissions"  # a bypassing parent's


# ---------------------------------------------------------------- 6. agent definitions read whole


def test_a_definition_is_read_whole_with_claude_md_and_the_team_context(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end with the real SDK: ``tools: "*"`` offers every tool; color, initialPrompt,
    memory and skills shape the teammate; background: true makes its subagent asynchronous
    although the call did not ask; the CLAUDE.md files (user, project, local, an import) and
    the team context are in the system prompt, as Claude Code words them."""
    define(
        root,
        "scribe",
        'tools: "*"\ncolor: purple\ninitialPrompt: Check your memory first.\nmemory: project\n'
        "skills: [release-notes]",
    )
    user = Path.home() / ".claude"
    user.mkdir()
    (user / "CLAUDE.md").write_text("Always answer in English.\n@~/.claude/style.md\n")
    (user / "style.md").write_text("Prefer short sentences.")
    (root / "CLAUDE.md").write_text("Run the tests with make test.")
    (root / ".claude" / "CLAUDE.md").write_text("Never edit generated files.")
    (root / "CLAUDE.local.md").write_text("My sandbox URL is local.")
    define(root, "watcher", "background: true\nmodel: offline")
    memory = root / ".claude" / "agent-memory" / "scribe"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("The changelog lives in CHANGES.md.")
    skill = root / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("Write release notes as bullet points.")

    def script(request: dict[str, Any], n: int) -> Reply:
        ids = tool_result_ids(request)
        if ids == ["spawn"]:
            return tool_uses(("done", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids:
            return text("Finished.")
        if "Start with task #1" in last_user_text(request):
            agent = {"description": "watch", "prompt": "watch the build", "subagent_type": "watcher"}
            return tool_uses(("spawn", "Agent", agent))
        return text("Ready.")

    with serve(script, monkeypatch) as api, running_team(root) as team:
        team.spawn("ada", prompt="hello", model=LEAD_MODEL, agent_type="scribe")
        member = team.config().member("ada")
        assert member is not None and member.color == "purple"
        task = team.tasks.create("Watch the build")
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        after = next(r for r in api.requests if tool_result_ids(r) == ["spawn"])
    first = api.requests[0]
    assert text_of(first["messages"][0]["content"]).startswith("Check your memory first.\n\n")
    system = text_of(first["system"])
    assert str(memory) in system and "The changelog lives in CHANGES.md." in system
    assert "Write release notes as bullet points." in system
    assert json.loads(after["messages"][-1]["content"][0]["content"])["status"] == "async_launched"
    assert {t["name"] for t in first["tools"]} >= ALL_WORK
    order = [
        "Always answer in English.",
        "Prefer short sentences.",
        "Run the tests with make test.",
        "Never edit generated files.",
        "My sandbox URL is local.",
    ]
    assert [system.index(s) for s in order] == sorted(system.index(s) for s in order)
    assert f"Contents of {root / 'CLAUDE.md'} (project instructions, checked into the codebase)" in system
    assert "(user's private global instructions for all projects)" in system
    assert (
        "Team: t. Members when you started: team-lead" in system
        and "ada" in system
        and str(root / "teams" / "t" / "config.json") in system
    )


# ---------------------------------------------------------------- 9. smaller


def test_a_teammates_own_allowed_and_disallowed_tools(root: Path) -> None:
    with running_team(root) as team:
        team.spawn(
            "ada",
            permission_mode="dontAsk",
            allowed_tools="Bash(cat:*) Read",
            disallowed_tools="Write,Bash(touch:*)",
        )
        member = team.config().member("ada")
        assert member is not None and member.allowed_tools == "Bash(cat:*) Read"
        assert member.permission_mode == "dontAsk"  # what up and a restart start it with
        read = team.tasks.create("Read outside", metadata={"command": "cat /etc/hostname > host.txt"})
        touch = team.tasks.create("Touch", metadata={"command": "touch made"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(read.id).status == "completed", timeout=30)
        wait_for(lambda: "Bash(touch:*) denies" in str(team.tasks.get(touch.id).metadata), timeout=30)
        assert not permission_requests(team) and not (root / "made").exists()


def test_claude_code_teammates_get_claude_codes_environment_and_tool_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = runner(tmp_path).spec
    spec = msgspec.structs.replace(spec, allowed_tools="Bash(git:*)", disallowed_tools="Write")
    assert claude_code.environment(spec, {})["CLAUDECODE"] == "1"
    (tmp_path / "claude").write_text("")
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(tmp_path / "claude"))
    assert claude_code.argv(spec)[-4:] == ["--allowedTools", "Bash(git:*)", "--disallowedTools", "Write"]


def test_enter_plan_mode_and_a_delegating_lead(tmp_path: Path) -> None:
    tools = box(tmp_path)
    assert "entered plan mode" in tools.call("EnterPlanMode", {}).content.lower()
    denied = tools.call("Write", {"file_path": "x.txt", "content": "x"})
    assert denied.is_error and "plan mode" in denied.content and not (tmp_path / "x.txt").exists()
    lead = box(tmp_path, mode="delegate")
    assert {s["name"] for s in lead.schemas()} == {
        "SendMessage",
        "TaskCreate",
        "TaskGet",
        "TaskUpdate",
        "TaskList",
    } | {
        "EnterPlanMode",
        "ExitPlanMode",
        "Agent",
        "TaskOutput",
        "TaskStop",
        "TaskBackground",  # its model's answer at a check-in on a synchronous subagent
    }
    refused = lead.call("Bash", {"command": "touch y"})
    assert refused.is_error and "delegate mode" in refused.content and not (tmp_path / "y").exists()


def test_web_fetch_asks_by_domain_and_fails_clearly_without_a_network(tmp_path: Path) -> None:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b"<html><script>x()</script><h1>Release 1.2</h1><p>Fixed the parser.</p></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/notes"
    try:
        settings(
            tmp_path / ".claude" / "settings.json", {"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}
        )
        tools = box(tmp_path, "Explore")
        fetched = tools.call("WebFetch", {"url": url, "prompt": "the release"})
        assert not fetched.is_error and "Release 1.2\nFixed the parser." in fetched.content
        assert "x()" not in fetched.content
        other = tools.policy.decide(tools.ctx, tools.tools["WebFetch"], {"url": "http://example.invalid/"})
        assert other.action == "ask"  # another domain is not covered by the rule
    finally:
        server.shutdown()
        server.server_close()
    gone = tools.call("WebFetch", {"url": url})  # nothing listens there any more
    assert gone.is_error and "WebFetch could not reach" in gone.content


def test_bash_in_the_background_with_task_output_and_task_stop(tmp_path: Path) -> None:
    tools = box(tmp_path)
    started = json.loads(
        tools.call("Bash", {"command": "echo one; echo two", "run_in_background": True}).content
    )
    done = json.loads(tools.call("TaskOutput", {"task_id": started["backgroundTaskId"]}).content)
    assert done["status"] == "completed" and done["output"] == "one\ntwo\n"
    slow = json.loads(tools.call("Bash", {"command": "echo go; sleep 60", "run_in_background": True}).content)
    peek = json.loads(tools.call("TaskOutput", {"task_id": slow["backgroundTaskId"], "block": False}).content)
    assert peek["status"] == "running"
    stopped = json.loads(tools.call("TaskStop", {"task_id": slow["backgroundTaskId"]}).content)
    assert stopped["status"] == "failed" and stopped["exit_code"] == -9 and not tools.ctx.tool_groups
