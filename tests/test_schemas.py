"""Compatibility: Claude Code's own JSON (seed 004 appendix C) round-trips through our Structs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

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
