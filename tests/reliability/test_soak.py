"""The soak's short version: 30 seconds of traffic and kills, nothing lost or duplicated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.reliability.soak import run_soak


@pytest.mark.heavy
def test_soak_30_seconds(root: Path) -> None:
    seconds = float(os.environ.get("AGENTTEAMS_SOAK_SECONDS", "30"))
    result = run_soak(seconds, teammates=8, seed=42, root=root)
    print(result)
    assert result.kills > 0 and result.messages_sent > 100 and result.tasks > 50
    assert result.lost == 0 and result.duplicates == 0, result
    assert result.tasks_stuck == [] and result.unread_left == 0, result
    assert result.tasks_completed + result.tasks_open_unowned == result.tasks
    assert result.ok, result
