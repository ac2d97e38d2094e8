"""What an agent does with every inbox entry it takes, before acting on it or showing it to its
model: verify it (:mod:`ipc.trust`), act only on what its sender may say, and refuse the
rest: logged, kept in ``refused.jsonl``, and told to the lead, never shown as if genuine.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ipc import trust
from ipc.errors import AgentTeamsError
from ipc.schemas import LEAD_NAME, InboxMessage, parse_body

if TYPE_CHECKING:
    from agentproc.context import AgentContext

log = logging.getLogger("agentteams.trust")


class Gate:
    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        # What this inbox delivered before (an earlier incarnation) is never delivered again:
        # read now, before this process takes anything.
        try:
            seen = trust.read_ids(ctx.mailbox.read())
        except AgentTeamsError:
            seen = []
        self.verifier = trust.Verifier(ctx.messenger.store, ctx.name, seen)
        self.refusals: list[trust.Refusal] = []  # the lead's: shown in its next turn

    def admit(self, message: InboxMessage) -> trust.Check | None:
        """The entry's check if it may be acted on (and shown); None if it was refused."""
        check = self.verifier.check(message)
        reason = trust.refusal(message, parse_body(message.text), check)
        if reason is None:
            self.verifier.taken(message)
            return check
        self.refuse(message, reason)
        return None

    def refuse(self, message: InboxMessage, reason: str) -> None:
        refusal = trust.record_refusal(self.ctx.paths, self.ctx.name, message, reason)
        if self.ctx.name == LEAD_NAME:
            self.refusals.append(refusal)  # the lead agent's next turn says so
            return
        try:
            self.ctx.messenger.send_message(
                self.ctx.name, LEAD_NAME, trust.refusal_notice(refusal), summary="refused a forged entry"
            )
        except AgentTeamsError as exc:
            log.error("%s could not tell the lead of a refusal: %s", self.ctx.name, exc.message)
