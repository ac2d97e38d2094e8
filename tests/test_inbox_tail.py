"""A reader parses only what was appended since its last take (ipc.inbox_file.parse_after):
the same entries and flags as a whole parse, and nothing when the file is anything else."""

from __future__ import annotations

import random
from pathlib import Path

from ipc import inbox_file
from ipc.inbox_file import Snapshot
from ipc.mailbox import Mailbox
from ipc.schemas import InboxMessage


def _same(a: Snapshot, b: Snapshot) -> bool:
    return (
        a.data == b.data and [bytes(r) for r in a.raws] == [bytes(r) for r in b.raws] and a.reads == b.reads
    )


def _first(unread: list[tuple[int, InboxMessage]]) -> int:
    return 0


def test_takes_between_appends_see_what_a_whole_parse_sees(root: Path, team: str) -> None:
    writer, reader = Mailbox(root, team, "alice"), Mailbox(root, team, "alice")
    rng = random.Random(7)
    sent: list[str] = []
    got: list[str] = []
    for step in range(120):
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            sent.append(f"m{len(sent)} " + "x" * rng.randrange(0, 300) + ' "read": false \\n ]')
            writer.append(sender="bob", text=sent[-1])
        got += [m.text for m in reader.take(_first, limit=rng.choice([1, 2]))]
        known = reader._known
        if known is not None:  # what the reader keeps is the file, exactly as a parse reads it
            assert _same(known, inbox_file.parse(reader.path.read_bytes())), step
    got += [m.text for m in reader.take(_first, limit=1000)]
    assert got == sent  # every message once, in order, whatever the history (archiving included)


def test_anything_but_an_append_is_parsed_whole(root: Path, team: str) -> None:
    box = Mailbox(root, team, "alice")
    for i in range(3):
        box.append(sender="bob", text=f"m{i}")
    assert box.take(_first)
    known = box._known
    assert known is not None
    data = box.path.read_bytes()
    box.append(sender="bob", text="new")
    grown = box.path.read_bytes()
    joined = inbox_file.parse_after(grown, known)
    assert joined is not None and _same(joined, inbox_file.parse(grown))
    torn = grown[: len(data) + 20]  # a writer killed half-way through its element
    assert inbox_file.parse_after(torn, known) is None
    changed = grown.replace(b'"read": false', b'"read": true ', 1)  # an earlier entry taken by another
    assert inbox_file.parse_after(changed, known) is None
    compact = inbox_file.format_array([bytes(r) for r in inbox_file.parse(grown).raws]).replace(b"\n  ", b"")
    assert inbox_file.parse_after(compact, known) is None  # another writer's format: whole
