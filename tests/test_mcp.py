"""The MCP door with the official ``mcp`` Python client, over stdio and streamable HTTP,
against real supervisors, offline teammates and files: tools listed, a member joined,
DMs exchanged with an offline teammate, tasks claimed and completed, ``wait_for_messages``
woken by a teammate's message with the fallback poll far beyond the test's deadline, and
clients and servers killed with SIGKILL."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from ipc.schemas import Member
from ipc.tasks import TaskList
from supervisor import Team
from tests.mcp_client import stdio_params
from tests.runtime_helpers import cli, running_team, wait_for

TOP = Path(__file__).resolve().parents[1]
SPEC_TOOLS = {
    "team_status",
    "list_members",
    "send_message",
    "read_inbox",
    "wait_for_messages",
    "task_create",
    "task_list",
    "task_get",
    "task_claim",
    "task_update",
    "answer_request",
}
LEAD_TOOLS = SPEC_TOOLS | {
    "spawn_teammate",
    "shutdown_teammate",
    "list_requests",
    "set_mode",
    "update_permissions",
    "background_subagent",
    "task_delete",
    "team_messages",
    "restart_teammate",
    "push",
    "diff",
    "read_log",
    "read_transcript",
    "usage",
    "ps",
}
NEVER = "600"  # the fallback poll: far beyond every deadline here, so only a wake can pass


def text(result: Any) -> str:
    """The text a tool returned (for a model)."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def member(team: Team, name: str) -> Member:
    found = team.member(name)
    assert found is not None
    return found


def wait_until_idle(team: Team, name: str) -> None:
    wait_for(lambda: (m := team.status().teammate(name)) is not None and m.state == "idle", timeout=30)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Callable[..., dict[str, Any]]]:
    """Starts ``agentteams mcp --http 127.0.0.1:0``; returns its url, token and process."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> dict[str, Any]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "supervisor.cli", "mcp", *args, "--root", str(tmp_path)]
            + ["--http", "127.0.0.1:0", "--json", "--fallback-poll", NEVER],
            stdout=subprocess.PIPE,
            text=True,
            cwd=TOP,
        )
        started.append(proc)
        assert proc.stdout is not None
        info: dict[str, Any] = json.loads(proc.stdout.readline())
        info["proc"] = proc
        return info

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def http_client(info: dict[str, Any], mode: str = "auto") -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {info['token']}"}, timeout=None)
    return http, Client(streamable_http_client(info["url"], http_client=http), mode=mode)


async def work_as_a_member(client: Client, team: Team) -> None:
    """What a member does, whatever the transport: the same steps, the same results."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == SPEC_TOOLS
    joined = member(team, "alice")
    assert joined.backend_type == "mcp" and joined.is_active is True and joined.color_name
    pid = int(joined.tmux_pane_id.removeprefix("mcp:"))
    assert wait_for(lambda: (s := team.status().teammate("alice")) is not None and s.pid == pid)
    # A DM to an offline teammate, and its answer waking wait_for_messages (no fallback).
    sent = await ok(client, "send_message", to="bob", text="ping from mcp", summary="ping")
    assert sent["routing"]["target"] == "@bob"
    got = await ok(client, "wait_for_messages", timeout_s=120)
    assert [e["from"] for e in got["events"]] == ["bob"]
    assert "bob received your message: ping from mcp" in got["events"][0]["text"]
    assert not team.inbox("alice").unread()  # handed over: marked read
    # bob's turn goes on to look for a task to claim: let it end before one is made.
    await anyio.to_thread.run_sync(wait_until_idle, team, "bob")
    # A task claimed and completed (made where nothing rings: bob, idle, is not woken for it).
    task = TaskList(team.root, team.name).create("mcp work", "done through MCP")
    claimed = await ok(client, "task_claim", id=task.id)
    assert claimed["task"]["owner"] == "alice" and claimed["task"]["status"] == "in_progress"
    await ok(client, "task_update", id=task.id, status="completed")
    assert team.tasks.get(task.id).status == "completed"


@pytest.mark.heavy  # one of the slowest tests (7-17 s): make test-heavy, which CI runs too
def test_a_member_over_stdio_works_and_leaves_when_its_client_is_killed(tmp_path: Path) -> None:
    with running_team(tmp_path, fallback_poll=float(NEVER)) as team:
        team.spawn("bob", prompt="Answer messages.")
        wait_until_idle(team, "bob")

        async def session() -> None:
            async with Client(stdio_params(str(tmp_path), "t", "alice", "--fallback-poll", NEVER)) as client:
                await work_as_a_member(client, team)
                # The lead's message arrives while the member waits.
                async with anyio.create_task_group() as tg:
                    waiting: list[dict[str, Any]] = []

                    async def wait() -> None:
                        waiting.append(await ok(client, "wait_for_messages", timeout_s=120))

                    tg.start_soon(wait)
                    await anyio.sleep(0.5)
                    team.send("alice", "hello from the lead", summary="hi")
                assert waiting[0]["events"][0]["text"] == "hello from the lead"

        anyio.run(session)
        # Its client went away: it stays a member, inactive, no process named.
        gone = member(team, "alice")
        assert gone.is_active is False and gone.tmux_pane_id == ""

        # A client killed with SIGKILL: its stdio closes, the server leaves, the task is free.
        task = TaskList(tmp_path, "t").create("held by a client that dies")
        holder = subprocess.Popen(
            [sys.executable, str(TOP / "tests" / "mcp_client.py"), str(tmp_path), "t", "alice", task.id],
            stdout=subprocess.PIPE,
            text=True,
            cwd=TOP,
        )
        assert holder.stdout is not None
        assert holder.stdout.readline().startswith("claimed")
        assert team.tasks.get(task.id).owner == "alice"
        server = int(member(team, "alice").tmux_pane_id.removeprefix("mcp:"))
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        # Released, and offered to the idle teammate, which may take it at once.
        wait_for(lambda: team.tasks.get(task.id).owner_name != "alice", timeout=20)
        wait_for(lambda: member(team, "alice").is_active is False)
        wait_for(lambda: not _alive(server))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_member_over_streamable_http_works_and_a_killed_server_is_settled_by_the_supervisor(
    tmp_path: Path, http_server: Callable[..., dict[str, Any]]
) -> None:
    with running_team(tmp_path, fallback_poll=float(NEVER)) as team:
        team.spawn("bob", prompt="Answer messages.")
        wait_until_idle(team, "bob")
        info = http_server("t", "--as", "alice")

        async def session() -> None:
            http, client = http_client(info)
            async with http, client:
                await work_as_a_member(client, team)

        anyio.run(session)
        # A server killed with SIGKILL cannot clean up: the supervisor sees its pid end.
        task = TaskList(tmp_path, "t").create("held by a server that dies")
        claimed = _claim_over_http(info, task.id)
        assert claimed["task"]["owner"] == "alice"
        info["proc"].send_signal(signal.SIGKILL)
        info["proc"].wait()
        wait_for(lambda: team.tasks.get(task.id).owner_name != "alice", timeout=20)
        wait_for(lambda: member(team, "alice").is_active is False)
        assert member(team, "alice").tmux_pane_id == ""
        event = wait_for(team.events)[-1]  # written last, after the config
        assert event.name == "alice" and event.released_tasks == [task.id]


def _claim_over_http(info: dict[str, Any], task_id: str) -> dict[str, Any]:
    async def claim() -> dict[str, Any]:
        http, client = http_client(info)
        async with http, client:
            return await ok(client, "task_claim", id=task_id)

    return anyio.run(claim)


def test_bad_input_is_a_tool_error_with_the_cli_line_and_changes_nothing(tmp_path: Path) -> None:
    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    a = team.tasks.create("a")
    b = team.tasks.create("b", blocked_by=[a.id])
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())

    def cli_line(*args: str) -> str:
        return cli(tmp_path, *args, ok=False).stderr.strip().removeprefix("agentteams: error: ")

    async def session() -> None:
        async with Client(stdio_params(str(tmp_path), "t", None)) as client:
            cases: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
                (
                    "send_message",
                    {"to": "nobody", "text": "x", "summary": "s"},
                    ("send", "t", "nobody", "x", "--summary", "s"),
                ),
                ("task_get", {"id": "99"}, ("task", "get", "t", "99")),
                (
                    "task_update",
                    {"id": a.id, "add_blocked_by": [b.id]},
                    ("task", "update", "t", a.id, "--add-blocked-by", b.id),
                ),
            ]
            for tool, args, line in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error and text(result) == cli_line(*line), (tool, result.content)
            bad_id = await client.call_tool("task_get", {"id": "../x"})
            assert bad_id.is_error and "task_get" in text(bad_id)
            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error and "team_status" in text(unknown)
            lead_only = await client.call_tool("spawn_teammate", {"name": "x", "prompt": "p"})
            assert lead_only.is_error and "not up" in text(lead_only)

    anyio.run(session)
    after = sorted((p.name, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())
    assert [n for n, _ in after] == [n for n, _ in before] and after == before

    # A server that cannot serve says why in one line: an unknown team, a taken name.
    assert "does not exist" in cli(tmp_path, "mcp", "nope", "--as", "x", ok=False).stderr
    assert "lead's name" in cli(tmp_path, "mcp", "t", "--as", "team-lead", ok=False).stderr


def test_the_lead_side_asks_a_member_to_shut_down_and_the_member_answers(tmp_path: Path) -> None:
    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    task = team.tasks.create("half done")

    async def session() -> None:
        member_server = stdio_params(str(tmp_path), "t", "alice", "--fallback-poll", NEVER)
        async with Client(member_server) as alice, Client(stdio_params(str(tmp_path), "t", None)) as lead:
            assert {t.name for t in (await lead.list_tools()).tools} == LEAD_TOOLS
            await ok(alice, "task_claim", id=task.id)
            asked = await ok(lead, "shutdown_teammate", name="alice", reason="the work is done")
            assert asked["stopped"] is False
            got = await ok(alice, "wait_for_messages", timeout_s=60)
            event = got["events"][0]
            assert event["kind"] == "shutdown_request" and "the work is done" in event["text"]
            assert "answer_request" in event["text"] and event["request_id"]
            answered = await ok(alice, "answer_request", request_id=event["request_id"], approve=True)
            assert answered["approved"] is True
            assert team.member("alice") is None  # it left the team
            assert team.tasks.get(task.id).owner_name is None
            heard = await ok(lead, "wait_for_messages", timeout_s=60)
            assert heard["events"][0]["kind"] == "shutdown_approved"
            gone = await alice.call_tool("send_message", {"to": "team-lead", "text": "x", "summary": "s"})
            assert gone.is_error and "not a member" in text(gone)

    anyio.run(session)


def test_an_http_session_that_ends_leaves_and_the_next_one_joins_again(
    tmp_path: Path, http_server: Callable[..., dict[str, Any]]
) -> None:
    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    task = team.tasks.create("held")
    info = http_server("t", "--as", "alice")
    assert member(team, "alice").is_active is True

    async def session(then: Callable[[Client], Awaitable[None]]) -> None:
        http, client = http_client(info, mode="legacy")  # the handshake: a session to end
        async with http, client:
            await then(client)

    async def claim(client: Client) -> None:
        await ok(client, "task_claim", id=task.id)

    anyio.run(session, claim)  # the client ends its session (DELETE) on the way out
    assert member(team, "alice").is_active is False
    assert team.tasks.get(task.id).owner_name is None

    async def look(client: Client) -> None:
        await ok(client, "team_status")
        assert member(team, "alice").is_active is True

    anyio.run(session, look)
    # Without the token, or for another host, nothing is served.
    refused = httpx2.post(info["url"], json={})
    assert (refused.status_code, refused.json()["kind"]) == (401, "Unauthorized")  # as the web door's
    headers = {"Authorization": f"Bearer {info['token']}", "Host": "attacker.example:80"}
    refused = httpx2.post(info["url"], json={}, headers=headers)
    assert (refused.status_code, refused.json()["kind"]) == (421, "ForeignHost")


def test_up_settles_a_member_whose_server_was_killed_while_no_supervisor_ran(tmp_path: Path) -> None:
    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    task = team.tasks.create("held")
    holder = subprocess.Popen(
        [sys.executable, str(TOP / "tests" / "mcp_client.py"), str(tmp_path), "t", "alice", task.id],
        stdout=subprocess.PIPE,
        text=True,
        cwd=TOP,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("claimed")
        server = int(member(team, "alice").tmux_pane_id.removeprefix("mcp:"))
        tree = team.ps()  # no supervisor: the member is shown from the config, with its process
        assert [(m.name, m.state, m.pid) for m in tree.teammates] == [("alice", "connected", server)]
        os.kill(server, signal.SIGKILL)
        wait_for(lambda: not _alive(server))
    finally:
        holder.kill()
        holder.wait()
    assert team.tasks.get(task.id).owner == "alice"  # nobody could notice
    team.up()
    try:
        assert team.tasks.get(task.id).owner_name is None
        assert member(team, "alice").is_active is False and member(team, "alice").tmux_pane_id == ""
        assert team.status().teammates == []  # not started as a teammate of ours
    finally:
        team.down()


def _serving_http(root: Path, address: str) -> subprocess.Popen[str]:
    """``mcp t --http ADDRESS`` with the token 'tok'; its first line (JSON) names the URL."""
    return subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "mcp", "t", "--root", str(root)]
        + ["--http", address, "--json", "--token", "tok"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=TOP,
    )


def test_bound_beyond_this_machine_it_answers_this_machines_names_and_says_so(tmp_path: Path) -> None:
    # Bound to 0.0.0.0 it refused every request with 421: the only Host it allowed was
    # '0.0.0.0:PORT', which no client sends.
    Team.create("t", root=tmp_path)
    proc = _serving_http(tmp_path, "0.0.0.0:0")
    try:
        assert proc.stdout is not None
        port = json.loads(proc.stdout.readline())["url"].rsplit(":", 1)[1].split("/")[0]
        for host in ("127.0.0.1", "localhost"):
            answer = httpx2.post(
                f"http://127.0.0.1:{port}/mcp",
                headers={"Authorization": "Bearer tok", "Host": f"{host}:{port}"},
            )
            assert answer.status_code != 421, answer.text
        # The scheme is case-insensitive (RFC 7235): a client that writes 'bearer' is served.
        lower = httpx2.post(f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "bearer tok"})
        assert lower.status_code != 401, lower.text
        wrong = httpx2.post(f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "bearer nope"})
        assert wrong.status_code == 401
        foreign = httpx2.post(
            f"http://127.0.0.1:{port}/mcp",
            headers={"Authorization": "Bearer tok", "Host": f"evil.test:{port}"},
        )
        assert foreign.status_code == 421
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert "warning: serving on 0.0.0.0, not only this machine" in err


def test_a_port_alone_serves_on_this_machine_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    """'--http 8765' and '--http :8765' were refused for want of a host, though the README
    says 127.0.0.1 unless told otherwise."""
    Team.create("t", root=tmp_path)
    for given in ("0", ":0"):
        proc = _serving_http(tmp_path, given)
        try:
            assert proc.stdout is not None
            url = json.loads(proc.stdout.readline())["url"]
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
            assert httpx2.post(url, headers={"Authorization": "Bearer tok"}).status_code != 421
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=15)
        assert "warning" not in err, err  # this machine only
    for bad in ("127.0.0.1", "host:", "99999", "x:8765x"):
        err = cli(tmp_path, "mcp", "t", "--http", bad, ok=False).stderr
        assert err == (
            "agentteams: error: --http wants [HOST:]PORT with a port of 0-65535, e.g. 127.0.0.1:8765 "
            f"or 8765; got {bad!r}\n"
        )


def test_a_line_over_stdio_that_is_not_json_rpc_is_answered_with_a_parse_error(tmp_path: Path) -> None:
    # Raw lines, as a hand-written client sends them: the SDK alone drops an unreadable line
    # unanswered, and the client waits out its timeout.
    Team.create("t", root=tmp_path, cwd=str(tmp_path)).close()
    server = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "mcp", "t", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(line: str) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(line + "\n")
        server.stdin.flush()
        assert select.select([server.stdout], [], [], 20)[0], f"no answer to {line!r}"
        answer: dict[str, Any] = json.loads(server.stdout.readline())
        return answer

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        assert "result" in ask(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        )
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        said = ask("hello")
        assert said["id"] is None and said["error"]["code"] == -32700, said
        assert said["error"]["message"].startswith("Parse error: ") and "\n" not in said["error"]["message"]
        # a lone surrogate in a call's text: answered to that call's id
        call = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "task_list", "arguments": {"x": "a\\ud800b"}}}'
        said = ask(call)
        assert said["id"] == 7 and said["error"]["code"] == -32700, said
        # JSON of the wrong shape: an invalid request (its id is not read back from the piece)
        said = ask(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": 5}))
        assert said["error"]["code"] == -32600 and said["error"]["message"].startswith("Invalid request: ")
        listed = ask(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
        assert listed["id"] == 8 and listed["result"]["tools"]  # the session goes on
    finally:
        server.stdin.close()
        assert server.wait(timeout=20) == 0


def test_a_config_is_not_printed_for_a_name_the_server_would_refuse(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="")
        err = cli(root, "mcp", "t", "--as", "alice", "--print-config", "json", ok=False).stderr
        assert "'alice' is already a teammate of team 't' (process); join under another name" in err, err
        assert (
            "team-lead"
            in cli(root, "mcp", "t", "--as", "team-lead", "--print-config", "json", ok=False).stderr
        )
        assert '"--as"' in cli(root, "mcp", "t", "--as", "carol", "--print-config", "json").stdout
        assert team.config().member("carol") is None  # printing joins nobody


def test_shutdown_of_a_member_from_the_command_line_says_it_was_asked_not_that_it_left(
    tmp_path: Path,
) -> None:
    # It printed "carol has shut down and left the team" while carol was only asked (and stayed).
    from supervisor.mcp.member import Membership

    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    membership = Membership(team, "carol")
    membership.join()
    try:
        said = cli(tmp_path, "shutdown", "t", "carol").stdout
        assert (
            said.startswith("carol: asked (request ")
            and "it leaves the team once its client approves" in said
        )
        assert "has shut down" not in said and team.member("carol") is not None
    finally:
        membership.close()
