"""The web door's API with a real HTTP client against a real ``agentteams serve``: every
route's success and failure (the command line's one line, as an HTTP status), the token
(401 and nothing changed), the foreign ``Host`` (DNS rebinding), the header that writes
need (CSRF), the API's description, and the events stream."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest

from ipc.schemas import PermissionRequest
from supervisor import Team
from supervisor.cli.jobs import _Dashboard
from supervisor.web.routes import ROUTES
from tests.runtime_helpers import cli, files, running_team
from tests.web_helpers import TOP, Server, event_stream, serving

SAMPLE = {"team": "demo", "id": "1", "name": "alice", "request_id": "perm-1-abcdefg"}
BODIES: dict[str, Any] = {
    "spawn_teammate": {"name": "carol"},
    "shutdown_teammate": {},
    "restart_teammate": {},
    "push": {"text": "now"},
    "send_message": {"to": "alice", "text": "hi", "summary": "hi"},
    "task_create": {"subject": "made over HTTP"},
    "task_update": {"status": "completed"},
    "task_claim": {"agent": "alice"},
    "answer_request": {"approve": True},
}


def path_of(template: str) -> str:
    for key, value in SAMPLE.items():
        template = template.replace("{" + key + "}", value)
    return template


def cli_line(root: Path, *args: str) -> str:
    """The one line the command line prints for the same mistake, without its prefix."""
    return cli(root, *args, ok=False).stderr.strip().removeprefix("agentteams: error: ")


def refused(response: httpx2.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["kind"] == kind and "\n" not in body["error"]
    return str(body["error"])


@pytest.fixture
def demo(root: Path, team: str) -> Path:
    """A team 'demo' with alice and bob, and one task, no supervisor."""
    Team.open(team, root=root).tasks.create("first", "the first task")
    return root


def test_without_the_token_every_route_is_401_and_nothing_changes(demo: Path) -> None:
    before = files(demo)
    with serving(demo) as server, httpx2.Client(base_url=server.base, timeout=30) as anyone:
        for route in ROUTES:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Agentteams-Token": ""}):
                response = anyone.request(
                    route.method, path_of(route.full_path), json=BODIES.get(route.op), headers=headers
                )
                refused(response, 401, "Unauthorized")
        for path in ("/api/v1/teams", "/api/v1/openapi.json", "/api/v1/teams/demo/events"):
            refused(anyone.get(path), 401, "Unauthorized")
        for page in (anyone.get("/"), anyone.get("/?token=wrong")):  # the login hint: code, no data
            assert page.status_code == 401 and 'id="login-hint"' in page.text
            assert "alice" not in page.text and "demo" not in page.text and server.token not in page.text
            assert 'name="agentteams-token" content=""' in page.text
        assert anyone.get("/static/app.js").status_code == 200  # code only
    assert files(demo) == before


def test_a_foreign_host_is_refused_even_with_the_token(demo: Path) -> None:
    with serving(demo) as server, server.client() as client:
        port = server.base.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1:1"):
            refused(client.get("/api/v1/teams", headers={"Host": host}), 421, "ForeignHost")
            refused(
                client.post("/api/v1/teams/demo/tasks", json={"subject": "x"}, headers={"Host": host}),
                421,
                "ForeignHost",
            )
        assert client.get("/api/v1/teams", headers={"Host": f"localhost:{port}"}).status_code == 200
    assert [t.subject for t in Team.open("demo", root=demo).tasks.list()] == ["first"]


def test_the_token_in_the_url_opens_the_page_reads_and_does_not_write_and_sets_no_cookie(demo: Path) -> None:
    # It was kept in a cookie, which a browser sends to every port of the host: any other
    # local server would have been given it.
    with serving(demo) as server, httpx2.Client(base_url=server.base, timeout=30) as browser:
        page = browser.get(f"/?token={server.token}")
        assert page.status_code == 200 and server.token in page.text  # the page sends it as a header
        assert "set-cookie" not in page.headers and not browser.cookies
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store"
        assert browser.get("/api/v1/teams/demo/tasks").status_code == 401
        # the token in an API URL reads, and writes nothing: a URL is kept in logs
        bare = httpx2.Client(base_url=server.base, timeout=30)
        assert bare.get(f"/api/v1/teams/demo/tasks?token={server.token}").status_code == 200
        error = refused(
            bare.post(f"/api/v1/teams/demo/tasks?token={server.token}", json={"subject": "y"}),
            403,
            "TokenNotInHeader",
        )
        assert error.endswith("not only in the URL")
        bare.close()
        made = browser.post(
            "/api/v1/teams/demo/tasks", json={"subject": "x"}, headers={"X-Agentteams-Token": server.token}
        )
        assert made.status_code == 200 and made.json()["subject"] == "x"


def test_each_route_of_a_team_that_is_down(demo: Path) -> None:
    with serving(demo) as server, server.client() as api:
        teams = api.get("/api/v1/teams").json()
        assert [t["name"] for t in teams["teams"]] == ["demo"] and teams["teams"][0]["members"] == 3
        status = api.get("/api/v1/teams/demo").json()
        assert status["up"] is False and status["tasks"]["pending"] == 1
        error = refused(api.get("/api/v1/teams/nope/tasks"), 404, "NotFound")
        assert error == cli_line(demo, "task", "list", "nope")
        refused(api.get("/api/v1/teams/!!!/tasks"), 400, "InvalidInput")
        refused(api.get("/api/v1/teams/nope/events"), 404, "NotFound")
        assert [m["name"] for m in api.get("/api/v1/teams/demo/members").json()["members"]] == [
            "team-lead",
            "alice",
            "bob",
        ]
        _messages(demo, api)
        _tasks(demo, api)
        # Requests, logs, usage, ps.
        assert api.get("/api/v1/teams/demo/requests").json() == {"requests": []}
        error = refused(
            api.post("/api/v1/teams/demo/requests/perm-1-abcdefg", json={"approve": True}), 404, "NotFound"
        )
        assert error == cli_line(demo, "approve", "demo", "perm-1-abcdefg")
        refused(api.post("/api/v1/teams/demo/requests/x", json={"approve": "yes"}), 400, "InvalidInput")
        assert refused(api.get("/api/v1/teams/demo/logs"), 404, "NotFound") == cli_line(demo, "logs", "demo")
        refused(api.get("/api/v1/teams/demo/logs?lines=-1"), 400, "InvalidInput")
        assert "has no transcript yet" in refused(
            api.get("/api/v1/teams/demo/transcripts/alice"), 404, "NotFound"
        )
        refused(api.get("/api/v1/teams/demo/transcripts/zed"), 404, "NotFound")
        usage = api.get("/api/v1/teams/demo/usage").json()
        assert usage["team"] == "demo" and usage["agents"] == [] and usage["usd"] == 0
        ps = api.get("/api/v1/teams/demo/ps").json()
        assert ps["team"] == "demo" and ps["supervisor"] is None
        # What needs the team's supervisor: refused, the command line's words.
        for path, op in (
            ("/members", "spawn_teammate"),
            ("/members/alice/shutdown", "shutdown_teammate"),
            ("/members/alice/restart", "restart_teammate"),
            ("/members/alice/push", "push"),
        ):
            error = refused(api.post("/api/v1/teams/demo" + path, json=BODIES[op]), 409, "NotRunning")
            assert "agentteams up demo" in error
        refused(
            api.post("/api/v1/teams/demo/members", json={"name": "x", "model": "gpt-9"}), 400, "InvalidInput"
        )
        refused(api.post("/api/v1/teams/demo/members", content=b"{not json"), 400, "InvalidInput")
        refused(api.post("/api/v1/teams/demo/members", json=[1]), 400, "InvalidInput")


def _messages(root: Path, api: httpx2.Client) -> None:
    sent = api.post(
        "/api/v1/teams/demo/messages", json={"to": "alice", "text": "over http", "summary": "hello"}
    )
    assert sent.status_code == 200 and sent.json()["routing"]["target"] == "@alice"
    error = refused(
        api.post("/api/v1/teams/demo/messages", json={"to": "zed", "text": "x", "summary": "x"}),
        404,
        "NotFound",
    )
    assert error == cli_line(root, "send", "demo", "zed", "x", "--summary", "x")
    refused(api.post("/api/v1/teams/demo/messages", json={"to": "alice"}), 400, "InvalidInput")
    inbox = api.get("/api/v1/teams/demo/inboxes/alice?unread_only=true").json()["messages"]
    assert [m["text"] for m in inbox] == ["over http"]
    assert (
        api.get("/api/v1/teams/demo/inboxes/alice").json()["messages"][0]["read"] is False
    )  # a GET reads only
    refused(api.get("/api/v1/teams/demo/inboxes/zed"), 404, "NotFound")
    refused(api.get("/api/v1/teams/demo/inboxes/alice?mark=1"), 400, "InvalidInput")
    stream = api.get("/api/v1/teams/demo/messages").json()["messages"]
    assert [(m["to"], m["event"]["from"], m["event"]["text"]) for m in stream] == [
        ("alice", "team-lead", "over http")
    ]
    refused(api.get("/api/v1/teams/demo/messages?limit=many"), 400, "InvalidInput")


def _tasks(root: Path, api: httpx2.Client) -> None:
    base = "/api/v1/teams/demo/tasks"
    made = api.post(base, json={"subject": "second", "blocked_by": ["1"]}).json()
    assert made["id"] == "2" and made["blockedBy"] == ["1"]
    assert refused(api.post(base, json={"subject": "x", "blocked_by": ["9"]}), 404, "NotFound") == cli_line(
        root, "task", "create", "demo", "x", "--blocked-by", "9"
    )
    refused(api.post(base, json={"subjct": "x"}), 400, "InvalidInput")
    assert [t["id"] for t in api.get(base).json()["tasks"]] == ["1", "2"]
    assert api.get(base + "?status=in_progress").json()["tasks"] == []
    refused(api.get(base + "?status=sleeping"), 400, "InvalidInput")
    assert api.get(base + "/2").json()["subject"] == "second"
    assert refused(api.get(base + "/9"), 404, "NotFound") == cli_line(root, "task", "get", "demo", "9")
    refused(api.get(base + "/abc"), 400, "InvalidInput")
    changed = api.patch(base + "/2", json={"subject": "second, renamed"}).json()
    assert changed["task"]["subject"] == "second, renamed"
    refused(api.patch(base + "/1", json={"add_blocked_by": ["2"]}), 409, "Conflict")  # a cycle
    refused(api.patch(base + "/9", json={"status": "completed"}), 404, "NotFound")
    claimed = api.post(base + "/1/claim", json={"agent": "alice"}).json()
    assert claimed["task"]["owner"] == "alice" and claimed["task"]["status"] == "in_progress"
    refused(api.post(base + "/1/claim", json={"agent": "bob"}), 409, "Conflict")
    refused(api.post(base + "/claim", json={"agent": "bob"}), 404, "NotFound")  # 2 is blocked by 1
    assert api.patch(base + "/1", json={"status": "completed"}).json()["unblocked"] == ["2"]
    assert api.post(base + "/claim", json={"agent": "bob"}).json()["task"]["id"] == "2"
    assert api.delete(base + "/2").json() == {"deleted": "2", "unblocked": []}
    refused(api.delete(base + "/2"), 404, "NotFound")


def test_the_description_names_every_route_with_its_structs(demo: Path) -> None:
    with serving(demo) as server, server.client() as api:
        doc = api.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for route in ROUTES:
        entry = doc["paths"][route.full_path][route.method.lower()]
        assert entry["description"] == route.operation.doc
        ref = entry["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.rsplit("/", 1)[1] in doc["components"]["schemas"]
    create = doc["components"]["schemas"]["TaskCreate"]
    assert create["required"] == ["subject"] and "blocked_by" in create["properties"]
    query = doc["paths"]["/api/v1/teams/{team}/tasks"]["get"]["parameters"]
    assert {p["name"] for p in query} == {"team", "status", "include_internal"}


async def _live(server: Server, team: Team, outside: Path) -> None:
    base = "/api/v1/teams/t"
    async with (
        event_stream(server, "t") as events,
        httpx2.AsyncClient(base_url=server.base, headers=server.auth, timeout=60) as api,
    ):
        # A member's state: a teammate spawned (the config is written, then it says it is idle).
        spawned = await api.post(base + "/members", json={"name": "dev", "permission_mode": "acceptEdits"})
        assert spawned.status_code == 200, spawned.text
        why: set[str] = set()
        while not {"config", "idle_notification"} <= why:  # one event, or two
            why.update((await events.until("member"))["why"])
        # A message, readable.
        await api.post(base + "/messages", json={"to": "dev", "text": "ping", "summary": "ping"})
        got = await events.until("message", lambda d: d["to"] == "dev")
        assert got["event"] == {
            "kind": "message",
            "from": "team-lead",
            "text": "ping",
            "timestamp": got["event"]["timestamp"],
            "summary": "ping",
            "trust": "verified",  # the lead's, signed
        }
        answer = await events.until(
            "message", lambda d: d["to"] == "team-lead" and d["event"]["kind"] == "message"
        )
        assert "dev received your message: ping" in answer["event"]["text"]
        # A task change, and a permission request approved over HTTP.
        target = outside / "made.txt"
        made = (
            await api.post(
                base + "/tasks", json={"subject": "outside", "metadata": {"command": f"echo x > {target}"}}
            )
        ).json()
        _, request = await events.until_each(
            ("task", lambda d: made["id"] in d["ids"]),
            ("message", lambda d: d["event"]["kind"] == "permission_request"),
        )
        assert request["event"]["text"].startswith("[permission request] dev asks to run Bash")
        pending = (await api.get(base + "/requests")).json()["requests"]
        assert [r["request_id"] for r in pending] == [request["event"]["request_id"]]
        answered = await api.post(
            base + f"/requests/{request['event']['request_id']}", json={"approve": True}
        )
        assert answered.status_code == 200, answered.text
        await events.until_each(
            ("task", lambda d: made["id"] in d["ids"]),
            ("transcript", lambda d: "dev" in d["names"]),
        )
        await anyio.to_thread.run_sync(
            lambda: team.wait_until(lambda t: t.tasks.get(made["id"]).status == "completed", timeout=30)
        )
        assert target.read_text() == "x\n"
        said = (await api.get(base + "/transcripts/dev", params={"limit": 0})).json()["entries"]
        calls = [p for e in said for p in e["parts"] if p["type"] == "tool_use" and p["name"] == "Bash"]
        assert calls and calls[-1]["input"]["command"] == f"echo x > {target}"
        results = [p for e in said for p in e["parts"] if p["type"] == "tool_result"]
        assert results and not results[-1].get("is_error")
        assert len((await api.get(base + "/transcripts/dev", params={"limit": 2})).json()["entries"]) == 2
        # The rest of the teammate routes.
        assert (await api.post(base + "/members/dev/push", json={"text": "hello"})).json() == {
            "pushed": "dev"
        }
        refused(await api.post(base + "/members/dev/restart", json={}), 409, "Conflict")
        assert "dev" in (await api.get(base + "/logs", params={"name": "dev", "lines": 5})).json()["path"]
        stopped = await api.post(base + "/members/dev/shutdown", json={"force": True, "grace": 2})
        assert stopped.status_code == 200, stopped.text
        await events.until("member", lambda d: "config" in d["why"])


def test_a_running_team_over_http_and_its_events(tmp_path: Path) -> None:
    """Every change is on the stream: a member's state, a message, a task; and a permission
    request approved over HTTP lets the teammate go on."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    with running_team(root) as team, serving(root) as server:
        anyio.run(_live, server, team, outside)
        assert not [r for r in team.pending_requests() if isinstance(r, PermissionRequest)]
    assert json.loads((root / "teams" / "t" / "config.json").read_text())["members"][0]["name"] == "team-lead"


async def _mcp(server: Server) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=server.auth, timeout=None)
    async with http, Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"spawn_teammate", "task_create", "wait_for_messages"} <= tools
        made = await client.call_tool("task_create", {"subject": "over /mcp"})
        assert not made.is_error and made.structured_content["subject"] == "over /mcp"


def test_a_teams_mcp_endpoint_is_mounted_behind_the_same_lock(demo: Path) -> None:
    with serving(demo, "--mcp", "demo") as server:
        anyio.run(_mcp, server)
        assert httpx2.post(f"{server.base}/mcp", json={}).status_code == 401
        # The API's own answers still, with MCP mounted beside it at the root.
        missing = httpx2.get(f"{server.base}/api/v1/teams/demo/nowhere", headers=server.auth)
        assert (missing.status_code, missing.json()["kind"]) == (404, "NoRoute")
        wrong = httpx2.delete(f"{server.base}/api/v1/teams/demo/messages", headers=server.auth)
        assert (wrong.status_code, wrong.json()["kind"]) == (405, "MethodNotAllowed")
        foreign = httpx2.post(f"{server.base}/mcp", json={}, headers={**server.auth, "Host": "evil.example"})
        assert foreign.status_code == 421
    assert [t.subject for t in Team.open("demo", root=demo).tasks.list()] == ["first", "over /mcp"]
    assert cli_line(demo, "serve", "--mcp", "nope", "--port", "0") == cli_line(demo, "task", "list", "nope")


def test_binding_beyond_this_machine_is_said_loudly(demo: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "supervisor.cli",
            "serve",
            "--root",
            str(demo),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=TOP,
    )
    try:
        assert proc.stdout is not None and "?token=" in proc.stdout.readline() + proc.stdout.readline()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert "warning: serving on 0.0.0.0, not only this machine" in err


def test_the_demo_from_a_script_serves_its_dashboard_until_a_signal(root: Path, tmp_path: Path) -> None:
    """Without a terminal (stdin not a tty) the dashboard stopped the moment the run ended,
    and the lead's summary said the team had existed before it started: it keeps serving
    until SIGTERM, says so on stderr, and the summary says why the team stays."""
    said = tmp_path / "demo.err"
    with said.open("w") as err:
        demo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "supervisor.cli",
                "demo",
                "--serve",
                "--port",
                "0",
                "--json",
                "--root",
                str(root),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=TOP,
        )
    try:
        assert demo.stdout is not None
        summary = json.loads(demo.stdout.readline())  # the run is over
        assert summary["tasks_completed"] == 20
        assert summary["answer"].endswith(
            "The team stays: team 'demo' is not this lead's to delete (the demo made it and keeps it for "
            "the dashboard); it stays as it is, with its members and tasks"
        )
        deadline = time.monotonic() + 30
        while "stops the dashboard" not in said.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        err_text = said.read_text()
        assert "no terminal to press Enter in: the demo starts now" in err_text
        assert (
            f"the team stays for the page; SIGTERM or SIGINT (kill {demo.pid}) stops the dashboard"
            in err_text
        )
        found = re.search(r"dashboard: (http://127\.0\.0\.1:\d+/\?token=\S+)#team=demo", err_text)
        assert found is not None, err_text
        time.sleep(1)  # the run ended a while ago: the page is still served
        assert (
            demo.poll() is None and httpx2.get(found[1], timeout=10, follow_redirects=True).status_code == 200
        )
        tasks = Team.open("demo", root=root).tasks.list()
        assert len(tasks) == 20 and all(t.status == "completed" for t in tasks)
        demo.terminate()
        assert demo.wait(30) == 0  # stopped as asked, the run's own outcome
        with pytest.raises(httpx2.ConnectError):
            httpx2.get(found[1], timeout=10)
    finally:
        if demo.poll() is None:
            demo.terminate()
            demo.wait(30)


def test_the_demos_enter_prompt_at_a_terminal_is_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``demo --serve --json`` at a terminal put its prompt on stdout, before the JSON summary."""
    master, replica = os.openpty()
    try:
        with os.fdopen(replica, "r") as terminal:
            monkeypatch.setattr(sys, "stdin", terminal)
            os.write(master, b"\n")
            _Dashboard(cast("subprocess.Popen[str]", None)).on_up()  # its server is not asked
    finally:
        os.close(master)
    said = capsys.readouterr()
    assert said.out == "" and said.err == "open it, then press Enter to start the demo "
