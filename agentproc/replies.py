"""Waiting for a protocol answer (permission_response, plan_approval_response) in the agent's
own inbox, woken by the doorbell, without losing anything else that arrives."""

from __future__ import annotations

import time
from collections.abc import Callable

from agentproc.context import AgentContext
from ipc.schemas import InboxMessage


def wait_for_reply(
    ctx: AgentContext, match: Callable[[InboxMessage], bool], timeout: float
) -> InboxMessage | None:
    """The first unread message that ``match``es, taken (marked read); None after
    ``timeout`` s. Other messages stay unread for the loop; link frames are kept for it."""
    deadline = time.monotonic() + timeout
    with ctx.off_cpu():
        while True:
            taken = ctx.mailbox.take_where(match, limit=1)
            if taken and ctx.gate.admit(taken[0]) is not None:
                return taken[0]
            if taken:
                continue  # a forged answer: refused and reported; the real one may still come
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            woke = ctx.channel.wait(min(remaining, ctx.spec.fallback_poll))
            ctx.frames.extend(woke.frames)
