"""What an agent starts for its life ends with it: a definition's MCP servers (their
processes and the event loop's thread that holds their clients) are closed when the agent
ends, which matters for an in-process teammate, whose host goes on after it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import psutil
import pytest

from agentproc.runner import AgentRunner
from ipc.errors import AgentTeamsError
from tests.runtime_helpers import running_team, wait_for
from tests.test_agent_extras import agent

# A stdio MCP server in a few lines of the standard library (it starts in milliseconds):
# newline-delimited JSON-RPC, one tool.
TINY = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "noop", "description": "Nothing.", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no ~/.claude.json of the person running the tests
    (tmp_path / "tiny.py").write_text(TINY)
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    server = f'{{command: "{sys.executable}", args: ["{tmp_path / "tiny.py"}"]}}'
    (folder / "tiny.md").write_text(f"---\nname: tiny\nmcpServers:\n  - tiny: {server}\n---\nYou help.\n")
    return tmp_path


def servers(under: int, cwd: Path) -> list[psutil.Process]:
    tiny = str(cwd / "tiny.py")
    found = []
    for p in psutil.Process(under).children(recursive=True):
        try:  # another test's child not yet reaped is a zombie with no command line
            if tiny in p.cmdline():
                found.append(p)
        except psutil.Error:
            continue
    return found


def runner(cwd: Path, model: str = "offline") -> AgentRunner:
    return agent(cwd, "tiny", model=model)


def clients_thread() -> bool:
    return any(t.name == "mcp-clients" for t in threading.enumerate())


def test_closing_an_agent_stops_its_mcp_servers_and_their_thread(cwd: Path) -> None:
    agent = runner(cwd)
    assert "mcp__tiny__noop" in agent.tools.tools
    assert len(servers(psutil.Process().pid, cwd)) == 1 and clients_thread()
    agent.close()
    agent.close()  # again (at exit): nothing left to do
    assert not servers(psutil.Process().pid, cwd)
    assert wait_for(lambda: not clients_thread(), timeout=10)


def test_an_agent_that_does_not_start_leaves_no_mcp_server(cwd: Path) -> None:
    with pytest.raises(AgentTeamsError):
        runner(cwd, model="python:no_such_module:Model")
    assert not servers(psutil.Process().pid, cwd)
    assert wait_for(lambda: not clients_thread(), timeout=10)


def test_an_in_process_teammate_stopped_takes_its_mcp_server_with_it_while_its_host_goes_on(
    cwd: Path,
) -> None:
    with running_team(cwd, teammate_mode="in-process") as team:  # its cwd holds the definition
        team.spawn("ben", prompt="Work.")
        team.spawn("ann", prompt="Work.", agent_type="tiny")
        host = int(team.config().member("ann").tmux_pane_id.split(":")[1])  # type: ignore[union-attr]
        assert wait_for(lambda: len(servers(host, cwd)) == 1, timeout=30)
        assert team.shutdown("ann").stopped
        assert wait_for(lambda: not servers(host, cwd), timeout=20)
        assert psutil.pid_exists(host) and [m.name for m in team.config().teammates()] == ["ben"]
