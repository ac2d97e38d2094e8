"""What an agent does with every inbox entry it takes, before acting on it or showing it to its
model: verify it (:mod:`ipc.trust`), act only on what its sender may say, and refuse the
rest: logged, kept in ``refused.jsonl``, and told to the lead, never shown as if genuine.
"""

from __future__ import annotations

import logging
from typing import Any

from ipc import trust
from ipc.errors import AgentTeamsError
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME, InboxMessage, parse_body

log = logging.getLogger("agentteams.trust")


class Gate:
    def __init__(self, paths: TeamPaths, name: str, mailbox: Any, messenger: Messenger) -> None:
        """``mailbox``: the agent's own inbox (a file or the engine's)."""
        self.paths, self.name, self.messenger = paths, name, messenger
        # What this inbox delivered before (an earlier incarnation) is never delivered again:
        # read now, before this process takes anything.
        try:
            seen = trust.read_ids(mailbox.read())
        except AgentTeamsError:
            seen = []
        self.verifier = trust.Verifier(messenger.store, name, seen)
        self.refusals: list[trust.Refusal] = []  # the lead's: shown in its next turn

    def admit(self, message: InboxMessage) -> trust.Check | None:
        """The entry's check if it may be acted on (and shown); None if it was refused."""
        check = self.verifier.check(message)
        reason = trust.refusal(message, parse_body(message.text), check, self.name)
        if reason is None:
            self.verifier.taken(message)
            return check
        self.refuse(message, reason)
        return None

    def refuse(self, message: InboxMessage, reason: str) -> None:
        refusal = trust.record_refusal(self.paths, self.name, message, reason)
        if self.name == LEAD_NAME:
            self.refusals.append(refusal)  # the lead agent's next turn says so
            return
        try:
            self.messenger.send_message(
                self.name, LEAD_NAME, trust.refusal_notice(refusal), summary="refused a forged entry"
            )
        except AgentTeamsError as exc:
            log.error("%s could not tell the lead of a refusal: %s", self.name, exc.message)
