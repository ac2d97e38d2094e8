"""Compatibility: Claude Code's own JSON (the shapes its files have on disk) round-trips through our Structs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ipc.config import TeamConfigStore
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.schemas import InboxMessage, Task, TeamConfig, body_text, dump_json, parse_body

EXAMPLES = json.loads((Path(__file__).parent / "data" / "seed004_appendix_c.json").read_text())


def roundtrip(kind: type[Any], obj: dict[str, Any]) -> dict[str, Any]:
    decoded = msgspec.json.decode(json.dumps(obj).encode(), type=kind)
    result: dict[str, Any] = json.loads(dump_json(decoded))
    return result


def test_config_roundtrips() -> None:
    assert roundtrip(TeamConfig, EXAMPLES["config"]) == EXAMPLES["config"]


@pytest.mark.parametrize("message", EXAMPLES["inbox"])
def test_inbox_messages_roundtrip(message: dict[str, Any]) -> None:
    assert roundtrip(InboxMessage, message) == message


@pytest.mark.parametrize("body", EXAMPLES["bodies"], ids=lambda b: str(b["type"]))
def test_protocol_bodies_roundtrip(body: dict[str, Any]) -> None:
    parsed = parse_body(json.dumps(body, ensure_ascii=False))
    assert parsed is not None, body
    assert json.loads(body_text(parsed)) == body


def test_task_roundtrips() -> None:
    assert roundtrip(Task, EXAMPLES["task"]) == EXAMPLES["task"]


def test_json_that_is_not_a_body_is_plain_text() -> None:
    assert parse_body('{"type": "nonsense", "x": 1}') is None
    assert parse_body('{"type": "shutdown_request"}') is None  # missing fields
    assert parse_body("hello {not json") is None


def test_unset_optional_fields_are_omitted() -> None:
    written = json.loads(dump_json(InboxMessage(from_="team-lead", text="hi", timestamp="t")))
    assert written == {"from": "team-lead", "text": "hi", "timestamp": "t", "read": False}


CURRENT = Path(__file__).parent / "data" / "claude-2.1.330"


def test_claude_code_2_1_330_files_roundtrip_field_for_field() -> None:
    raw_config = json.loads((CURRENT / "config.json").read_text())
    config = msgspec.json.decode((CURRENT / "config.json").read_bytes(), type=TeamConfig)
    assert msgspec.to_builtins(config) == raw_config
    assert config.writes_v2 and config.members[0].model_name == "" and config.members[1].agent_type_name == ""
    raw_inbox = json.loads((CURRENT / "team-lead.json").read_text())
    inbox = msgspec.json.decode((CURRENT / "team-lead.json").read_bytes(), type=list[InboxMessage])
    assert [msgspec.to_builtins(m) for m in inbox] == raw_inbox
    idle = parse_body(inbox[0].text)
    assert idle is not None and getattr(idle, "result", None) == "idle"


def test_writing_into_a_2_1_330_team_uses_its_entry_shape(tmp_path: Path) -> None:
    team_dir = tmp_path / "teams" / "session-3250332c"
    (team_dir / "inboxes").mkdir(parents=True)
    (team_dir / "config.json").write_bytes((CURRENT / "config.json").read_bytes())
    assert TeamConfigStore(tmp_path, "session-3250332c").read().writes_v2
    Messenger(tmp_path, "session-3250332c").send_message("team-lead", "worker", "hi", "hi")
    entry = json.loads((team_dir / "inboxes" / "worker.json").read_text())[0]
    assert entry["msgV"] == 1 and entry["type"] == "message" and len(entry["msg_id"]) == 36
    assert Mailbox(tmp_path, "session-3250332c", "worker").read()[0].text == "hi"
