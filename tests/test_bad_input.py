"""Bad input at every door (the command line, MCP, HTTP): one line naming what was wrong and
what would be right, nothing changed on disk (a listing of the team's files with sizes and
mtimes is the same after), never a traceback or a silent drop. Real files, the doors' own
code; the tests that need a running team start one on the offline model."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from mcp_types import TextContent

from ipc.errors import InvalidInput, NotFound
from supervisor.cli.main import main
from supervisor.client.team import Team
from supervisor.mcp.tools import Door
from tests.runtime_helpers import cli, running_team, wait_for
from tests.web_helpers import request

Listing = dict[str, tuple[int, int]]


def listing(root: Path) -> Listing:
    """Every file and directory under the root, with its size and mtime."""
    return {
        str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    """A team (down) with members ada and bob and one pending task, #1."""
    team = Team.create("t", root=tmp_path / "r", cwd=str(tmp_path))
    for name in ("ada", "bob"):
        team.store.add_member(name, cwd=str(tmp_path))
    team.tasks.create("first task", "")
    yield team
    team.close()


def tool(team: Team, name: str, args: Any, member: str | None = None) -> str:
    """An MCP tool call that must fail: its one line."""
    result = anyio.run(Door(team, member).call, name, args)
    block = result.content[0]
    assert isinstance(block, TextContent) and result.is_error, block
    assert "\n" not in block.text and "internal error" not in block.text, block.text
    return block.text


def http(team: Team, method: str, path: str, status: int, **kwargs: Any) -> str:
    """An HTTP request that must be refused with ``status``: its one line."""
    found = request(team.paths.root, method, "/api/v1/teams/t" + path, **kwargs)
    assert found.status_code == status, found.text
    error = found.json()["error"]
    assert isinstance(error, str) and "\n" not in error
    return error


def refused(team: Team, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """A command line that must be refused: its one line (exit 1, as the README says)."""
    assert main([*args, "--root", str(team.paths.root)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    return err


# ---------------------------------------------------------------- every door checks the same


def test_the_command_line_is_held_to_the_constraints_of_the_input_struct(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line builds its Struct itself, which msgspec does not check: a grace of
    NaN or infinity ended in an internal error, and -1 went on to the supervisor."""
    before = listing(team.paths.root)
    for grace in ("nan", "inf", "-1", "0"):
        err = refused(team, capsys, "shutdown", "t", "ada", "--grace", grace)
        assert (
            err.startswith("agentteams: error: shutdown_teammate: grace is ") and "expected a number" in err
        )
    assert "grace is 100000: expected a number <= 86400.0" in tool(
        team, "shutdown_teammate", {"name": "ada", "grace": 100000}
    )
    assert listing(team.paths.root) == before


def test_a_refused_input_names_the_field_the_value_and_what_is_right(team: Team) -> None:
    before = listing(team.paths.root)
    assert tool(team, "task_get", {"id": "-1"}) == "task_get: id '-1' is not a task number, e.g. '7'"
    assert tool(team, "task_update", {"id": "1", "status": "done"}) == (
        "task_update: status 'done' is not one of 'completed', 'deleted', 'in_progress', 'pending'"
    )
    assert tool(team, "task_create", {"subject": "s", "blocked_by": ["1", "x"]}) == (
        "task_create: blocked_by[1] 'x' is not a task number, e.g. '7'"
    )
    assert tool(team, "send_message", {"to": "ada", "text": 5, "summary": "s"}) == (
        "send_message: text is 5: expected text, got a whole number (the message)"
    )
    assert http(team, "GET", "/messages?limit=abc", 400) == (
        "team_messages: limit is 'abc': expected a whole number, got text (the latest this many; 0 for all)"
    )
    assert http(team, "GET", "/tasks/%D9%A1", 400) == "task_get: id '١' is not a task number, e.g. '7'"
    assert listing(team.paths.root) == before


# ---------------------------------------------------------------- HTTP


def test_http_refuses_a_field_the_path_already_gives(team: Team) -> None:
    """PATCH /tasks/1 with {"id": "2"} changed #1 and said nothing of the 2."""
    team.tasks.create("second task", "")
    before = listing(team.paths.root)
    said = http(team, "PATCH", "/tasks/1", 400, json={"id": "2", "status": "completed"})
    assert said == "task_update: 'id' is '2' in the body but the path says '1'; leave it out of the body"
    said = http(team, "GET", "/inboxes/ada?name=bob", 400)
    assert "'name' is 'bob' in the query string but the path says 'ada'" in said
    said = http(team, "GET", "/inboxes/ada?mark_read=true", 400)
    assert "'mark_read' is 'true' in the query string but this route sets it to False" in said
    assert listing(team.paths.root) == before
    same = request(team.paths.root, "PATCH", "/api/v1/teams/t/tasks/2", json={"id": "2", "subject": "2nd"})
    assert same.status_code == 200 and same.json()["task"]["subject"] == "2nd"
    # The same value spelled as the operation also reads it: task '02' is #2, '@ada' is ada.
    same = request(team.paths.root, "PATCH", "/api/v1/teams/t/tasks/2", json={"id": "02", "subject": "2"})
    assert same.status_code == 200 and same.json()["task"]["subject"] == "2"
    assert request(team.paths.root, "GET", "/api/v1/teams/t/inboxes/ada?name=%40ada").status_code == 200


def test_http_answers_what_it_has_no_route_for_in_json(team: Team) -> None:
    before = listing(team.paths.root)
    said = http(team, "GET", "/nowhere", 404)
    assert said == "no route GET /api/v1/teams/t/nowhere; /api/v1/openapi.json lists them"
    assert "no route GET /api/v1/teams/t/inboxes/a/b" in http(team, "GET", "/inboxes/a%2Fb", 404)
    assert (
        http(team, "PUT", "/messages", 405)
        == "PUT is not taken at /api/v1/teams/t/messages; it takes GET, POST"
    )
    deep = b"[" * 100_000 + b"]" * 100_000
    said = http(team, "POST", "/messages", 400, content=deep)
    assert said == "send_message: the body is nested too deeply; send a JSON object"
    assert listing(team.paths.root) == before


def test_http_serves_a_path_with_a_trailing_slash_as_the_route_without_it(team: Team) -> None:
    """'/tasks/' was a 307 redirect: no JSON, not followed by curl, a POST's body lost."""
    root = team.paths.root
    listed = request(root, "GET", "/api/v1/teams/t/tasks/")
    assert listed.status_code == 200, listed.text
    assert listed.json() == request(root, "GET", "/api/v1/teams/t/tasks").json()
    sent = request(
        root, "POST", "/api/v1/teams/t/messages/", json={"to": "ada", "text": "hi", "summary": "s"}
    )
    assert sent.status_code == 200 and [m.text for m in team.inbox("ada").read()] == ["hi"]
    changed = request(root, "PATCH", "/api/v1/teams/t/tasks/1//", json={"subject": "renamed"})
    assert changed.status_code == 200 and team.tasks.get("1").subject == "renamed"
    # a slash sent as '%2F' is a part of a name, not a trailing slash
    assert "no route GET /api/v1/teams/t/inboxes/ada/" in http(team, "GET", "/inboxes/ada%2F", 404)


# ---------------------------------------------------------------- the operations themselves


def test_permissions_for_an_empty_name_are_refused_not_sent_to_everyone(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """'' (and ' ') meant every teammate: an unset variable in a script granted Bash(rm:*) to all."""
    before = listing(team.paths.root)
    for name in ("", " "):
        said = tool(team, "update_permissions", {"name": name, "rules": ["Bash(rm:*)"]})
        assert said == "no teammate named: give a teammate's name, or '*' for every teammate"
        err = refused(team, capsys, "permit", "t", name, "Bash(rm:*)")
        assert (
            err == "agentteams: error: no teammate named: give a teammate's name, or '*' for every teammate"
        )
    said = http(team, "POST", "/members/%20/permissions", 400, json={"rules": ["Bash(rm:*)"]})
    assert said.startswith("no teammate named")
    assert listing(team.paths.root) == before


def test_claiming_a_task_that_does_not_exist_is_not_found_and_a_refusal_says_why(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    team.tasks.claim("1", "bob")
    before = listing(team.paths.root)
    assert tool(team, "task_claim", {"id": "99"}) == "task #99 does not exist in team 't'"
    assert http(team, "POST", "/tasks/99/claim", 404, json={}) == "task #99 does not exist in team 't'"
    said = tool(team, "task_claim", {"id": "1", "agent": "ada"})
    assert said == "cannot claim task #1 for ada: already_claimed (bob owns it)"
    assert "id '١' is not a task number" in refused(team, capsys, "task", "claim", "t", "١", "ada")
    assert listing(team.paths.root) == before


def test_an_empty_name_on_the_command_line_is_not_taken_for_the_lead(team: Team) -> None:
    """The operation takes '' for "yourself": `task claim TEAM 1 "$WHO"` with WHO unset
    claimed #1 for the lead, and `inbox TEAM ''` showed the lead's inbox."""
    root = team.paths.root
    before = listing(root)
    for args in (("task", "claim", "t", "1", ""), ("inbox", "t", " ")):
        done = cli(root, *args, ok=None)
        assert done.returncode == 2 and "the name is empty; give a member's name" in done.stderr
    assert team.tasks.get("1").owner_name is None
    assert listing(root) == before


def test_a_message_or_push_without_text_is_refused(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    before = listing(team.paths.root)
    for text in ("", "  \n"):
        assert tool(team, "send_message", {"to": "ada", "text": text, "summary": "s"}) == (
            "a message needs text; give what to say"
        )
        said = http(team, "POST", "/messages", 400, json={"to": "*", "text": text, "summary": "s"})
        assert said == "a message needs text; give what to say"
        assert "a message needs text" in refused(team, capsys, "send", "t", "ada", text, "--summary", "s")
        assert tool(team, "push", {"name": "ada", "text": text}) == "a push needs text; give what to say"
    assert listing(team.paths.root) == before


def test_a_summary_counts_toward_the_limit_of_a_message(team: Team) -> None:
    """Only the text was measured: a short text with a 2 MB summary went into the inbox."""
    before = listing(team.paths.root)
    big = "s" * (2 * 1024 * 1024)
    said = tool(team, "send_message", {"to": "ada", "text": "hi", "summary": big})
    assert said == "message to ada is 2097154 bytes; the limit is 1048576"
    said = http(team, "POST", "/messages", 400, json={"to": "*", "text": "hi", "summary": big})
    assert said.endswith("is 2097154 bytes; the limit is 1048576")
    # nor does a refused message leave the lead's signing key, made at its first message, behind
    said = tool(team, "send_message", {"to": "ada", "text": big, "summary": "s"})
    assert said == "message to ada is 2097153 bytes; the limit is 1048576"
    assert listing(team.paths.root) == before


def test_a_name_with_a_control_character_is_refused_not_made_another_name(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """'a\\x01b' became 'a-b': it could reach, or shut down, the member a-b."""
    team.store.add_member("a-b", cwd=str(team.paths.root))
    before = listing(team.paths.root)
    for name in ("a\x01b", "a\nb", "a\x7fb"):
        said = tool(team, "send_message", {"to": name, "text": "hi", "summary": "s"})
        assert said == f"agent name {name!r} has a control character; use letters, digits, '-' or '_'"
        assert "has a control character" in tool(team, "read_inbox", {"name": name})
        assert "has a control character" in tool(team, "task_update", {"id": "1", "owner": name})
        assert "has a control character" in refused(team, capsys, "send", "t", name, "hi", "--summary", "s")
        assert "has a control character" in http(team, "GET", "/inboxes/" + quote(name), 400)
    assert "team name 't\\x00' has a control character" in http(team, "GET", "/../t%00", 400)
    assert listing(team.paths.root) == before


def test_a_stray_team_folder_with_a_control_character_is_a_problem_line_in_ps(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """Names with control characters are refused: one such folder made ps refuse every team."""
    stray = team.paths.root / "teams" / "a\x01b"
    stray.mkdir()
    (stray / "config.json").write_bytes((team.paths.root / "teams" / "t" / "config.json").read_bytes())
    assert main(["ps", "--root", str(team.paths.root)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("t: not up") and "team name 'a\\x01b' has a control character" in err


def test_down_refuses_a_grace_that_is_no_number_of_seconds(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    for grace in ("nan", "-5", "inf"):
        err = refused(team, capsys, "down", "t", "--grace", grace)
        assert err == f"agentteams: error: a grace of {float(grace):g} seconds; give 0 to 86400 (a day)"


@contextlib.contextmanager
def running(team: Team) -> Iterator[None]:
    """The team up, with an offline teammate cy; down again after."""
    cli(team.paths.root, "up", "t")
    try:
        cli(team.paths.root, "spawn", "t", "cy", "--prompt", "you are cy")
        yield
    finally:
        cli(team.paths.root, "down", "t")


def test_a_request_too_big_for_the_supervisor_is_refused_at_once(team: Team) -> None:
    """The control socket drops a frame past 256 KiB unseen: a long push (or spawn prompt)
    waited out its timeout and said the supervisor did not answer."""
    with running(team):
        before = [m.name for m in team.config().members]
        said = tool(team, "push", {"name": "cy", "text": "x" * 300_000})
        assert said.startswith("the push request is 300") and "the supervisor takes at most 262144" in said
        said = tool(team, "spawn_teammate", {"name": "dee", "prompt": "x" * 300_000})
        assert said.startswith("the spawn request is 300")
        assert [m.name for m in team.config().members] == before


def test_push_and_restart_read_a_name_as_send_and_shutdown_do(team: Team) -> None:
    """They handed the supervisor the name as given: '@cy' was no teammate to them."""
    with running(team):
        pushed = anyio.run(Door(team).call, "push", {"name": "@cy", "text": "hi"})
        assert not pushed.is_error and pushed.structured_content == {"pushed": "cy"}
        said = tool(team, "restart_teammate", {"name": "@cy"})
        assert said.startswith("cy is ") and said.endswith(
            "only an exited or failed teammate can be restarted"
        )
        assert "has a control character" in tool(team, "push", {"name": "c\x01y", "text": "hi"})


def test_push_reads_its_text_as_send_does(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    """'@FILE' was pushed as those letters, where send reads the file ('-': standard input)."""
    said = refused(team, capsys, "push", "t", "ada", "@" + str(team.paths.root / "no-such-file"))
    assert said.startswith("agentteams: error: cannot read the message from ") and said.endswith(
        "no-such-file: No such file or directory"
    )
    note = team.paths.root / "note.txt"
    note.write_text("pushed from a file")
    with running(team):
        cli(team.paths.root, "push", "t", "cy", "@" + str(note))
        cli(team.paths.root, "push", "t", "cy", "-", stdin="pushed from standard input")

        def taken() -> bool:
            said = cli(team.paths.root, "transcript", "t", "cy").stdout
            return "user text: pushed from a file" in said and "user text: pushed from standard input" in said

        assert wait_for(taken, timeout=30)


def test_spawn_reads_its_prompt_as_lead_does(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    before = listing(team.paths.root)
    said = refused(team, capsys, "spawn", "t", "dee", "--prompt", "@" + str(team.paths.root / "no-such-file"))
    assert said.startswith("agentteams: error: cannot read the message from ")
    assert listing(team.paths.root) == before
    goal = team.paths.root / "goal.txt"
    goal.write_text("a goal from a file")
    with running(team):
        cli(team.paths.root, "spawn", "t", "dee", "--prompt", "@" + str(goal))
        assert team.store.require_member("dee").prompt == "a goal from a file"


def test_a_budget_for_a_name_that_is_no_member_is_refused(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was set (capping no one), and shown as though it were that name's."""
    before = listing(team.paths.root)
    members = "members: team-lead, ada, bob"
    for args in (("--teammate", "nobody"), ("--teammate", "nobody", "--budget-tokens", "500")):
        said = refused(team, capsys, "budget", "t", *args)
        assert said == f"agentteams: error: 'nobody' is not a member of team 't'; {members}"
    with pytest.raises(NotFound, match=members):
        team.set_budget(500, teammate="nobody")
    assert listing(team.paths.root) == before
    assert (
        main(["budget", "t", "--teammate", "ada", "--budget-tokens", "500", "--root", str(team.paths.root)])
        == 0
    )
    assert "ada: 500 tokens, no dollar limit" in capsys.readouterr().out


def test_a_prompt_of_only_blanks_is_refused_and_no_prompt_is_not(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """A blank prompt became the teammate's first message: a message of blanks, which every
    door refuses to send. No prompt at all is a teammate that starts idle, as the supervisor means."""
    before = listing(team.paths.root)
    line = (
        "a prompt of only blanks; give the teammate its goal, or no prompt ('') for one "
        "that starts idle and takes tasks from the list"
    )
    assert tool(team, "spawn_teammate", {"name": "dee", "prompt": " \n"}) == line
    assert http(team, "POST", "/members", 400, json={"name": "dee", "prompt": "\t"}) == line
    assert refused(team, capsys, "spawn", "t", "dee", "--prompt", " ") == "agentteams: error: " + line
    # the team is down: what refuses no prompt is that, not the prompt
    assert "not up" in tool(team, "spawn_teammate", {"name": "dee", "prompt": ""})
    assert listing(team.paths.root) == before


def test_a_task_id_with_leading_zeros_is_that_number_at_every_door(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    """'01' was another task to every door ("task #01 does not exist"), and a dependency on
    '02' was refused although task 2 exists."""
    team.tasks.create("second task", "")
    root = team.paths.root
    got = anyio.run(Door(team).call, "task_get", {"id": "01"})
    assert not got.is_error and got.structured_content is not None
    assert got.structured_content["id"] == "1"
    assert request(root, "GET", "/api/v1/teams/t/tasks/001").json()["id"] == "1"
    assert main(["task", "get", "t", "01", "--root", str(root)]) == 0
    assert capsys.readouterr().out.startswith("#1 first task")
    changed = anyio.run(Door(team).call, "task_update", {"id": "02", "add_blocked_by": ["01"]})
    assert not changed.is_error, changed.content
    assert team.tasks.get("2").blocked_by == ["1"] and team.tasks.get("1").blocks == ["2"]
    made = request(root, "POST", "/api/v1/teams/t/tasks", json={"subject": "third", "blocked_by": ["0002"]})
    assert made.status_code == 200 and made.json()["blockedBy"] == ["2"]
    assert main(["task", "update", "t", "03", "--subject", "3rd", "--root", str(root)]) == 0
    assert capsys.readouterr().out.strip() == "updated task #3"
    assert "task #4 does not exist" in tool(team, "task_get", {"id": "004"})


def test_a_message_to_no_member_names_the_members_before_asking_for_a_summary(team: Team) -> None:
    """The summary was checked first: a message without one to a name no one has was told
    to add a summary, and only once it had one that no one has the name."""
    before = listing(team.paths.root)
    named = "'nobody' is not a member of team 't'; members: team-lead, ada, bob"
    assert tool(team, "send_message", {"to": "nobody", "text": "hi"}) == named
    assert http(team, "POST", "/messages", 404, json={"to": "nobody", "text": "hi"}) == named
    assert tool(team, "send_message", {"to": "ada", "text": "hi"}) == (
        "a message needs a summary (a few words shown in previews)"
    )
    assert listing(team.paths.root) == before


def test_task_metadata_has_the_limit_of_a_description_at_every_door(team: Team) -> None:
    """Uncapped, a 20 MB metadata went in through the Python API and the MCP door, and every
    look at the list read it; only the HTTP door's 8 MiB body cap stood in the way. (The
    command line sets one key at a time, with --command and --subagent.) What counts is the
    metadata's part of the task file, laid out as the file is: nested, a small body made a
    large file. An activeForm is held to the limit of a description too."""
    before = listing(team.paths.root)
    big = {"blob": "x" * (1024 * 1024)}
    said = "the task's metadata is 1048614 bytes in its file; the limit is 1048576"
    assert tool(team, "task_create", {"subject": "s", "metadata": big}) == said
    assert http(team, "POST", "/tasks", 400, json={"subject": "s", "metadata": big}) == said
    with pytest.raises(InvalidInput, match=said):
        team.tasks.create("s", metadata=big)
    laid_out = {"m": [[[0] * 20_000] for _ in range(10)]}  # 400 KB as a body, 2.6 MB in the file
    assert tool(team, "task_create", {"subject": "s", "metadata": laid_out}).startswith(
        "the task's metadata is 2600399 bytes"
    )
    deep: dict[str, object] = {}
    for _ in range(40):
        deep = {"d": deep}
    assert tool(team, "task_create", {"subject": "s", "metadata": deep}) == (
        "task metadata is nested more than 16 levels deep"
    )
    for not_json, said in (
        ({"when": object()}, "null), not Python's object"),
        ({"raw": [b"\x00"]}, "null), not Python's bytes"),
        ({"score": float("nan")}, "task metadata must be plain JSON: nan is not a JSON number"),
        ({"n": {1: "one"}}, 'task metadata\'s keys must be strings, like {"reviewer": "ada"}'),
        ({"pair": (1, 2)}, "null), not Python's tuple"),
        ({"n": 10**5000}, "task metadata must be plain JSON: "),
        ({"s": "\ud800"}, "task metadata must be plain JSON: "),
    ):
        with pytest.raises(InvalidInput, match=re.escape(said)):
            team.tasks.create("s", metadata=not_json)
    long_form = "y" * (1024 * 1024 + 1)
    assert tool(team, "task_create", {"subject": "s", "active_form": long_form}) == (
        "the task's activeForm is 1048577 bytes; the limit is 1048576"
    )
    assert listing(team.paths.root) == before, "a refused create wrote something"
    # An update is measured as what it would leave, and refused only if it grows past the limit.
    half = {"a": "x" * (600 * 1024)}
    team.tasks.update("1", metadata=half)
    before = listing(team.paths.root)
    grown = tool(team, "task_update", {"id": "1", "metadata": {"b": "y" * (600 * 1024)}})
    assert grown == "the task's metadata would be 1228848 bytes in its file; the limit is 1048576"
    assert listing(team.paths.root) == before and team.tasks.get("1").meta == half


def test_a_task_near_or_past_the_metadata_limit_can_still_be_given_back_and_trimmed(team: Team) -> None:
    """A give-back records the failure (2,000 characters at most) in the metadata; refused on a
    task near the limit, the task stayed in_progress with its teammate. An update that leaves
    a task past the limit smaller than it was goes through too; one that grows it does not."""
    near = {"a": "x" * (1024 * 1024 - 100)}
    team.tasks.update("1", status="in_progress", owner="ada", metadata=near)
    team.tasks.update("1", status="pending", owner="", metadata={"lastError": "e" * 2000})
    given_back = team.tasks.get("1")
    assert given_back.status == "pending" and given_back.owner_name is None
    assert given_back.meta == {**near, "lastError": "e" * 2000}, "past the limit now, by the record"
    team.tasks.update("1", metadata={"lastError": None, "c": "z" * 100})
    trimmed = team.tasks.get("1")
    assert trimmed.meta == {**near, "c": "z" * 100}, "still past the limit, but smaller: let through"
    before = listing(team.paths.root)
    with pytest.raises(InvalidInput, match="the task's metadata would be 1048737 bytes in its file"):
        team.tasks.update("1", metadata={"d": "z" * 100})
    assert listing(team.paths.root) == before


def test_text_that_is_not_utf8_is_refused_by_name_at_the_command_line_and_in_python(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    # Bytes that are not UTF-8 on the command line reach Python as lone surrogates.
    before = listing(team.paths.root)
    said = refused(team, capsys, "send", "t", "ada", "caf\udce9", "--summary", "s")
    assert said == "agentteams: error: send_message: text 'caf\\udce9' is not UTF-8 text; give it in UTF-8"
    assert "subject 'sub\\udce9' is not UTF-8" in refused(team, capsys, "task", "create", "t", "sub\udce9")
    assert "description" in refused(team, capsys, "task", "update", "t", "1", "--description", "d\udce9")
    with pytest.raises(InvalidInput, match="summary 's\\\\udcff' is not UTF-8 text"):
        team.send("ada", "text", summary="s\udcff")
    assert listing(team.paths.root) == before


def test_the_resident_door_leaves_text_that_is_not_utf8_to_the_full_path(root: Path) -> None:
    with running_team(root) as team:
        said = cli(root, "task", "create", "t", "sub\udce9", ok=False).stderr
        assert "task_create: subject 'sub\\udce9' is not UTF-8 text" in said, said
        assert team.tasks.list() == []


def test_a_directory_to_add_must_be_an_absolute_path_at_every_door(
    team: Team, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = listing(team.paths.root)
    for given, why in (("", "is empty"), ("   ", "is empty"), ("rel/dir", "is not an absolute path")):
        assert why in tool(team, "update_permissions", {"name": "ada", "directories": [given]})
        assert why in http(team, "POST", "/members/ada/permissions", 400, json={"directories": [given]})
    said = refused(team, capsys, "permit", "t", "ada", "--add-dir", " ")
    assert said == "agentteams: error: a directory is empty; give an absolute path like /home/me/data"
    assert listing(team.paths.root) == before
    # the command line reads a relative one from where it runs, as the person typing it means
    monkeypatch.chdir(tmp_path)
    assert main(["permit", "t", "ada", "--add-dir", "data", "--root", str(team.paths.root)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"directories {tmp_path / 'data'}")


def test_the_supervisors_refusals_keep_their_class_at_the_http_door(team: Team) -> None:
    """Every refusal from the supervisor was a SupervisorError, a 409: a stranger's name, or a
    bad agent type, is a 404 or a 400 at every other route."""
    with running(team):
        for route, body in (("shutdown", {}), ("restart", {}), ("push", {"text": "hi"})):
            assert "carol" in http(team, "POST", f"/members/carol/{route}", 404, json=body)
        said = http(
            team, "POST", "/members", 400, json={"name": "dee", "prompt": "p", "agent_type": "../../x"}
        )
        assert "../../x" in said
        assert "only an exited or failed teammate" in http(team, "POST", "/members/cy/restart", 409, json={})
        assert [m.name for m in team.config().members] == ["team-lead", "ada", "bob", "cy"]
        assert not (team.paths.team_dir / "inboxes" / "carol.json").exists()


def test_an_update_that_changes_nothing_is_refused_and_writes_nothing(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing(team.paths.root)
    assert "nothing to change" in refused(team, capsys, "task", "update", "t", "1")
    assert "nothing to change" in tool(team, "task_update", {"id": "1"})
    assert "nothing to change" in http(team, "PATCH", "/tasks/1", 400, json={})
    assert listing(team.paths.root) == before


def test_the_log_of_a_name_that_is_no_member_says_so(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    said = refused(team, capsys, "logs", "t", "zed")
    assert "'zed' is not a member" in said and "ada" in said, said
    assert "has not run" in refused(team, capsys, "logs", "t", "ada")  # a member that has not run yet
