"""Waiting for a protocol answer (permission_response, plan_approval_response) in the
teammate's own inbox, woken by the doorbell, without losing anything else that arrives."""

from __future__ import annotations

import time
from collections.abc import Callable

from agentproc.context import AgentContext
from ipc.mailbox import Mailbox
from ipc.schemas import InboxMessage


def wait_for_reply(ctx: AgentContext, match: Callable[[InboxMessage], bool], timeout: float) -> InboxMessage | None:
    """The first unread message that ``match``es, marked read; None after ``timeout`` s.
    Other messages stay unread for the loop; doorbell frames are kept for it too."""
    mailbox = Mailbox(ctx.identity.root, ctx.identity.team, ctx.name)
    deadline = time.monotonic() + timeout
    while True:
        for message in mailbox.unread():
            if match(message):
                return mailbox.mark_read_matching(message) or message
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ctx.frames.extend(ctx.channel.wait(min(remaining, ctx.identity.fallback_poll)))
