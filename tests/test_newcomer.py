"""What a newcomer meets in the first hour: the README's first commands on a fresh machine."""

from __future__ import annotations

import re

from agentproc.permissions import _STATE_WORDS
from supervisor.cli.demo import pipeline, plan_text


def test_demo_plan_passes_the_teammates_guard_under_the_default_root() -> None:
    # `make demo` runs under ~/.agentteams: a command naming its work directory names
    # `.agentteams`, which a teammate's Bash guard refuses (the demo failed at task #1).
    plan = plan_text(pipeline(4, 20))
    assert _STATE_WORDS.search(plan) is None
    commands = [line.split(": `", 1)[1] for line in plan.splitlines()[1:]]
    assert len(commands) == 20
    assert not [c for c in commands if re.search(r"(^|\s)/\w", c)]  # relative to the team's cwd
