"""The mailbox against a model (hypothesis), and a crash at every byte of an in-place write.

The hot path reads only what it must (a C-level scan of the read flags, a decode of the
unread entries, bytes located by search) and writes in place; the slow path decodes
everything. They must agree on every inbox any writer may leave: other writers' formats
and fields, a nested ``"read": true`` in someone's metadata, entries without a read flag.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ipc import Mailbox, TeamConfigStore
from ipc.inbox_file import element, encode_entry, parse, repair
from ipc.mailbox import decode_message
from ipc.schemas import InboxMessage

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
extras = st.dictionaries(
    st.sampled_from(["metadata", "msg_id", "opencodeSessionId", "read_by"]),
    st.one_of(st.booleans(), texts, st.fixed_dictionaries({"read": st.booleans()})),
    max_size=2,
)


class MailboxMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        store = TeamConfigStore(root, "m")
        store.create()
        store.add_member("a")
        self.box = Mailbox(root, "m", "a")
        self.model: list[dict[str, Any]] = []  # every entry, as a writer meant it

    def teardown(self) -> None:
        self.tmp.cleanup()

    @rule(text=texts, sender=st.sampled_from(["team-lead", "bob"]))
    def append(self, text: str, sender: str) -> None:
        stored = self.box.append(sender=sender, text=text, member_checked=True)
        self.model.append({"from": sender, "text": text, "read": False, "msg_id": stored.msg_id})

    @rule(text=texts, extra=extras, with_flag=st.booleans(), compact=st.booleans())
    def foreign_write(self, text: str, extra: dict[str, Any], with_flag: bool, compact: bool) -> None:
        """Another program rewrites the inbox its own way (compact JSON, its own fields)."""
        entry: dict[str, Any] = {
            "from": "peer",
            "text": text,
            "timestamp": "2026-01-01T00:00:00.000Z",
            **extra,
        }
        if with_flag:
            entry["read"] = False
        on_disk = json.loads(self.box.path.read_text()) if self.box.path.exists() else []
        on_disk.append(entry)
        self.box.path.write_text(json.dumps(on_disk) if compact else json.dumps(on_disk, indent=2))
        self.model.append({**entry, "read": False})

    @rule()
    def take_one(self) -> None:
        expected = next((i for i, m in enumerate(self.model) if not m["read"]), None)
        taken = self.box.take(lambda unread: 0)
        if expected is None:
            assert taken == []
            return
        assert [m.text for m in taken] == [self.model[expected]["text"]]
        self.model[expected]["read"] = True

    @rule(sender=st.sampled_from(["team-lead", "bob", "peer"]))
    def take_from(self, sender: str) -> None:
        taken = self.box.take_where(lambda m: m.from_ == sender)
        expected = [m for m in self.model if not m["read"] and m["from"] == sender]
        assert [m.text for m in taken] == [m["text"] for m in expected]
        for m in expected:
            m["read"] = True

    @invariant()
    def fast_and_slow_paths_agree(self) -> None:
        unread = [m["text"] for m in self.model if not m["read"]]
        assert [m.text for m in self.box.unread()] == unread
        assert [m.text for m in self.box.read()] == [m["text"] for m in self.model]
        assert self.box.has_unread() == bool(unread)
        if self.box.path.exists():
            on_disk = json.loads(self.box.path.read_text())
            for written, meant in zip(on_disk, self.model, strict=True):
                for key, value in meant.items():
                    if key != "read":
                        assert written[key] == value, "a field of another writer was changed"


TestMailbox = MailboxMachine.TestCase
TestMailbox.settings = settings(max_examples=80, stateful_step_count=25, deadline=None)


def _inbox(tmp: Path, n: int) -> Mailbox:
    store = TeamConfigStore(tmp, "m")
    store.create()
    store.add_member("a")
    box = Mailbox(tmp, "m", "a")
    for i in range(n):
        box.append(sender="bob", text=f"kept {i}", member_checked=True)
    return box


def test_a_crash_at_any_byte_of_an_append_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """An append writes its bytes over the array's closing bracket. Cut it short at every
    offset (a kill mid-write), then let the next writer come: every earlier message is
    still there, the half-written one is gone, and the new one is in."""
    box = _inbox(tmp_path, 3)
    whole = box.path.read_bytes()
    tail_at = len(whole.rstrip()) - 1  # the closing ']'
    body_end = len(whole[:tail_at].rstrip())
    new = b",\n" + element(encode_entry(InboxMessage(from_="x", text="torn", timestamp="t"))) + b"\n]\n"
    for cut in range(len(new)):
        with open(box.path, "wb") as f:
            f.write(whole[:body_end] + new[:cut])
        box.append(sender="carol", text="after", member_checked=True)
        texts = [m.text for m in box.read()]
        assert texts[:3] == ["kept 0", "kept 1", "kept 2"] and texts[-1] == "after", (cut, texts)
        assert "torn" not in texts or cut >= len(new) - 3  # whole but for its "]": it was written
        for leftover in tmp_path.glob("teams/m/inboxes/*.corrupt-*"):
            leftover.unlink()


def test_a_crash_while_flipping_a_read_flag_hands_the_message_over_again(tmp_path: Path) -> None:
    box = _inbox(tmp_path, 2)
    data = box.path.read_bytes()
    at = data.index(b'"read": false')
    for mixed in (b"trlse", b"falue", b"truse", b"fa e "):
        box.path.write_bytes(data[: at + 8] + mixed + data[at + 13 :])
        assert box.read()[0].text == "kept 0"  # a reader never acts on the torn file
        taken = box.take(lambda unread: 0)
        assert [m.text for m in taken] == ["kept 0"]  # not handed over before: handed over now
        box.path.write_bytes(data)


def test_repair_keeps_every_whole_element() -> None:
    entries = [
        encode_entry({"from": "a", "text": f"m{i}", "timestamp": "t", "read": False}) for i in range(3)
    ]
    whole = b"[\n" + b",\n".join(element(e) for e in entries) + b"\n]\n"
    for cut in range(len(whole) - 3, 2, -7):
        fixed = repair(whole[:cut])
        assert fixed is not None
        got = [decode_message(r) for r in parse(fixed).raws]
        assert all(m is not None for m in got)
        assert [m.text for m in got if m] == [f"m{i}" for i in range(len(got))]


def test_appends_keep_the_format_claude_code_writes(tmp_path: Path) -> None:
    box = _inbox(tmp_path, 2)
    data = box.path.read_bytes()
    assert data == (json.dumps(json.loads(data), indent=2, ensure_ascii=False) + "\n").encode()
    os.truncate(box.path, len(data) - 1)  # as JSON.stringify leaves it: no final newline
    box.append(sender="bob", text="third", member_checked=True)
    assert [m.text for m in box.read()] == ["kept 0", "kept 1", "third"]
