"""The offline lead's plan review, shared by the supervisor (``plan_approval = "lead"``, no
lead agent running) and the offline lead model, so both judge a plan the same way."""

from __future__ import annotations

import re

FEEDBACK = "A plan needs at least two concrete steps: add how you will check the result."


def review_plan(content: str) -> tuple[bool, str]:
    """(approved, feedback): a plan needs at least two concrete steps."""
    steps = [line for line in content.splitlines() if re.match(r"^\s*(\d+[.)]|[-*])\s+\S", line)]
    if len(steps) >= 2:
        return True, ""
    return False, FEEDBACK
