"""The mirror between a team's engine inboxes and this host's files (where Claude Code
reads and writes), against a real nats-server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from ipc.engine import marker
from ipc.engine import team as engine_team
from ipc.engine.mirror import Mirror
from ipc.mailbox import Mailbox, new_message
from ipc.paths import TeamPaths
from ipc.team_state import TeamState
from tests.engine_helpers import Engine, running_engine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with running_engine(tmp_path / "engine") as found:
        yield found
        engine_team.close_all()


def test_a_message_a_courier_handed_over_read_is_read_on_the_engine_too(
    tmp_path: Path, engine: Engine
) -> None:
    # A courier writes the message it handed to its `claude` teammate read; the mirror
    # published it unread and, its pass remembered as done, never marked it read: the
    # engine (ps, inbox, other hosts' files) showed it unread for good.
    paths = TeamPaths(tmp_path / "a", "t")
    marker.remember(paths, engine.url, "ha")
    state = TeamState(paths)
    state.config.create("across hosts", cwd=str(tmp_path))
    state.config.add_member("cc", host="ha")
    rung: list[str] = []
    assert state.engine is not None
    mirror = Mirror(paths, state.engine, state.messenger.mailbox, rung.append)
    mirror.step()
    handed = msgspec.structs.replace(new_message("team-lead", "handed to claude", "s"), read=True)
    Mailbox.at(paths, "cc").append_message(handed)  # as the courier writes it
    on_engine = state.messenger.mailbox("cc")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # passes, as the mirror makes them
        mirror.step()
        if on_engine.history() and not on_engine.unread():
            break
        time.sleep(0.05)
    assert [m.text for m in on_engine.history()] == ["handed to claude"]
    assert on_engine.unread() == []
    assert [m.read for m in Mailbox.at(paths, "cc").read()] == [True]
